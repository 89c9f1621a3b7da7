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
