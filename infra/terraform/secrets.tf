resource "aws_secretsmanager_secret" "provider_key" {
  #checkov:skip=CKV_AWS_149:Encrypted with the AWS managed Secrets Manager key; one secret read once per cold start does not justify a customer managed key.
  #checkov:skip=CKV2_AWS_57:A third-party API key: rotated at the provider, then stored with put-secret-value; Secrets Manager cannot rotate it.
  name_prefix = "${var.name_prefix}-model-provider-key-"
  description = "API key of the model provider, read by the consumer at cold start. Set it after applying (../README.md)."
  tags        = local.tags
}
