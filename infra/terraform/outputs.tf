output "api_url" {
  description = "Base URL of the HTTP API."
  value       = aws_apigatewayv2_stage.default.invoke_url
}

output "table_names" {
  description = "Physical table names by logical name (for atelier-admin: the env variables in ../schema.json)."
  value       = { for name, t in aws_dynamodb_table.this : name => t.name }
}

output "queue_url" {
  value = aws_sqs_queue.jobs.url
}

output "dead_letter_queue_url" {
  value = aws_sqs_queue.dead_letter.url
}

output "bucket_name" {
  value = aws_s3_bucket.assets.bucket
}

output "provider_key_secret_arn" {
  description = "Set the model provider's key here (aws secretsmanager put-secret-value)."
  value       = aws_secretsmanager_secret.provider_key.arn
}

output "alarm_topic_arn" {
  value = aws_sns_topic.alarms.arn
}

output "user_pool_id" {
  value = local.use_cognito ? aws_cognito_user_pool.users[0].id : null
}

output "user_pool_client_id" {
  value = local.use_cognito ? aws_cognito_user_pool_client.app[0].id : null
}

output "api_cdn_url" {
  description = "Base URL of the API behind the per-IP rate limit (publish this one); null without per_ip_rate_limit."
  value       = local.per_ip_front == 1 ? "https://${aws_cloudfront_distribution.api[0].domain_name}/" : null
}

output "stripe_keys_secret_arn" {
  description = "Secret holding the Stripe keys as JSON; set them with put-secret-value (../README.md)."
  value       = aws_secretsmanager_secret.stripe_keys.arn
}
