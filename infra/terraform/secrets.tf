resource "aws_secretsmanager_secret" "provider_key" {
  #checkov:skip=CKV_AWS_149:Encrypted with the AWS managed Secrets Manager key; one secret read once per cold start does not justify a customer managed key.
  #checkov:skip=CKV2_AWS_57:A third-party API key: rotated at the provider, then stored with put-secret-value; Secrets Manager cannot rotate it.
  name_prefix = "${var.name_prefix}-model-provider-key-"
  description = "API key of the model provider, read by the consumer at cold start. Set it after applying (README.md of the Atelier Terraform module)."
  tags        = local.tags
}

# Read only when a provider list names gemini.
resource "aws_secretsmanager_secret" "gemini_key" {
  #checkov:skip=CKV_AWS_149:Encrypted with the AWS managed Secrets Manager key; one secret read once per cold start does not justify a customer managed key.
  #checkov:skip=CKV2_AWS_57:A third-party API key: rotated at the provider, then stored with put-secret-value; Secrets Manager cannot rotate it.
  name_prefix = "${var.name_prefix}-gemini-key-"
  description = "API key of Google Gemini, read by the consumer at cold start when a provider list names gemini. Set it after applying (README.md of the Atelier Terraform module)."
  tags        = local.tags
}

# The content credentials' signing key (docs/design.md of the repository, "Results say what
# made them"). No value until the operator stores one: the consumer refuses to start rather
# than deliver a result that does not say it was edited with AI.
resource "aws_secretsmanager_secret" "signing_key" {
  #checkov:skip=CKV_AWS_149:Encrypted with the AWS managed Secrets Manager key; one secret read once per cold start does not justify a customer managed key.
  #checkov:skip=CKV2_AWS_57:A certificate issued by a CA outside AWS: renewed there, then stored with put-secret-value; Secrets Manager cannot rotate it.
  name_prefix = "${var.name_prefix}-signing-key-"
  description = "Content credentials (C2PA) signing key as JSON {\"certificate_chain\": \"PEM, signing certificate first\", \"private_key\": \"PKCS #8 PEM, P-256\"}, read by the consumer at cold start. Set it before the first edit (README.md of the Atelier Terraform module)."
  tags        = local.tags
}

resource "aws_secretsmanager_secret" "stripe_keys" {
  #checkov:skip=CKV_AWS_149:Encrypted with the AWS managed Secrets Manager key; one secret read once per cold start does not justify a customer managed key.
  #checkov:skip=CKV2_AWS_57:Third-party keys: rolled in the Stripe dashboard, then stored with put-secret-value; Secrets Manager cannot rotate them.
  name_prefix = "${var.name_prefix}-stripe-keys-"
  description = "Stripe keys as JSON {\"secret_key\": \"sk_...\", \"webhook_secret\": \"whsec_...\"}, read by the API at cold start. Set them after applying (README.md of the Atelier Terraform module)."
  tags        = local.tags
}

# Empty keys until the operator stores real ones: the API leaves buying off instead of failing
# to start. Later values are the operator's (put-secret-value), so Terraform leaves them alone.
resource "aws_secretsmanager_secret_version" "stripe_keys_unset" {
  secret_id     = aws_secretsmanager_secret.stripe_keys.id
  secret_string = jsonencode({ secret_key = "", webhook_secret = "" })

  lifecycle {
    ignore_changes = [secret_string]
  }
}

resource "aws_secretsmanager_secret" "push_keys" {
  #checkov:skip=CKV_AWS_149:Encrypted with the AWS managed Secrets Manager key; one secret read once per cold start does not justify a customer managed key.
  #checkov:skip=CKV2_AWS_57:Third-party keys: rolled in the Apple and Firebase consoles, then stored with put-secret-value; Secrets Manager cannot rotate them.
  name_prefix = "${var.name_prefix}-push-keys-"
  description = "Push credentials as JSON {\"apns\": {...}, \"fcm\": {...}} (docs/mobile.md of the repository), read by the sweeper at cold start. Push is off until they are set."
  tags        = local.tags
}

# No credentials until the operator stores them: the sweeper leaves push off. Later values are
# the operator's (put-secret-value), so Terraform leaves them alone.
resource "aws_secretsmanager_secret_version" "push_keys_unset" {
  secret_id     = aws_secretsmanager_secret.push_keys.id
  secret_string = jsonencode({})

  lifecycle {
    ignore_changes = [secret_string]
  }
}

resource "aws_secretsmanager_secret" "google_play_key" {
  #checkov:skip=CKV_AWS_149:Encrypted with the AWS managed Secrets Manager key; one secret read once per cold start does not justify a customer managed key.
  #checkov:skip=CKV2_AWS_57:Third-party key: rolled in the Google Cloud console, then stored with put-secret-value; Secrets Manager cannot rotate it.
  name_prefix = "${var.name_prefix}-google-play-key-"
  description = "Google Play service account's JSON key (client_email, private_key), read by the API at cold start. Google Play purchases are off until it is set."
  tags        = local.tags
}

# No key until the operator stores one: the API leaves Google Play off. Later values are the
# operator's (put-secret-value), so Terraform leaves them alone.
resource "aws_secretsmanager_secret_version" "google_play_key_unset" {
  secret_id     = aws_secretsmanager_secret.google_play_key.id
  secret_string = jsonencode({})

  lifecycle {
    ignore_changes = [secret_string]
  }
}

resource "aws_secretsmanager_secret" "apple_api_key" {
  #checkov:skip=CKV_AWS_149:Encrypted with the AWS managed Secrets Manager key; one secret read once per cold start does not justify a customer managed key.
  #checkov:skip=CKV2_AWS_57:Third-party key: rolled in App Store Connect, then stored with put-secret-value; Secrets Manager cannot rotate it.
  name_prefix = "${var.name_prefix}-apple-api-key-"
  description = "App Store Server API key (keyId, issuerId, privateKey), read by the API at cold start to answer CONSUMPTION_REQUEST notifications for accounts that consented. Off until it is set."
  tags        = local.tags
}

# No key until the operator stores one: the API answers no consumption request. Later values
# are the operator's (put-secret-value), so Terraform leaves them alone.
resource "aws_secretsmanager_secret_version" "apple_api_key_unset" {
  secret_id     = aws_secretsmanager_secret.apple_api_key.id
  secret_string = jsonencode({})

  lifecycle {
    ignore_changes = [secret_string]
  }
}

# The key of the HMAC-SHA256 under which a verified address is recorded with its signup grant
# (the address itself is never stored). Generated here, never shown; rotating it would let
# every address have a second grant, so it is kept.
resource "aws_secretsmanager_secret" "address_key" {
  #checkov:skip=CKV_AWS_149:Encrypted with the AWS managed Secrets Manager key; one secret read once per cold start does not justify a customer managed key.
  #checkov:skip=CKV2_AWS_57:Rotation would make every address's grant available again; the key is kept.
  name_prefix = "${var.name_prefix}-address-key-"
  description = "Key of the signup grant's address hashes (HMAC-SHA256), read by the API at cold start. Generated; never rotate it."
  tags        = local.tags
}

data "aws_secretsmanager_random_password" "address_key" {
  password_length     = 64
  exclude_punctuation = true
}

# The first value stays: a later plan's new random value is ignored.
resource "aws_secretsmanager_secret_version" "address_key" {
  secret_id     = aws_secretsmanager_secret.address_key.id
  secret_string = data.aws_secretsmanager_random_password.address_key.random_password

  lifecycle {
    ignore_changes = [secret_string]
  }
}
