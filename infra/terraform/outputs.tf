output "api_url" {
  description = "Base URL of the HTTP API."
  value       = aws_apigatewayv2_stage.default.invoke_url
}

output "table_names" {
  description = "Physical table names by logical name (accounts, ledger, jobs, ...); atelier-admin reads each from the variable its schema entry names (env in schema.json)."
  value       = { for name, t in aws_dynamodb_table.this : name => t.name }
}

output "queue_url" {
  description = "URL of the job queue (ATELIER_QUEUE_URL of the functions; the consumer's event source)."
  value       = aws_sqs_queue.jobs.url
}

output "dead_letter_queue_url" {
  description = "URL of the job queue's dead-letter queue (a message here failed every delivery; the DeadLetterQueueNotEmpty alarm watches it)."
  value       = aws_sqs_queue.dead_letter.url
}

output "webhook_queue_url" {
  description = "URL of the webhook delivery queue (ATELIER_WEBHOOK_QUEUE_URL; one message per event and endpoint, consumed by the sweeper)."
  value       = aws_sqs_queue.webhooks.url
}

output "bucket_name" {
  description = "The private assets bucket: uploads/ and results/ (ATELIER_BUCKET)."
  value       = aws_s3_bucket.assets.bucket
}

output "provider_key_secret_arn" {
  description = "Set the model provider's key here (aws secretsmanager put-secret-value)."
  value       = aws_secretsmanager_secret.provider_key.arn
}

output "alarm_topic_arn" {
  description = "SNS topic every alarm notifies; subscribe your pager or chat here (alarm_email subscribes one address)."
  value       = aws_sns_topic.alarms.arn
}

output "user_pool_id" {
  description = "The Cognito user pool's id; null with jwt_issuer (your own issuer)."
  value       = local.use_cognito ? aws_cognito_user_pool.users[0].id : null
}

output "user_pool_client_id" {
  description = "The Cognito app client's id (the tokens' audience); null with jwt_issuer."
  value       = local.use_cognito ? aws_cognito_user_pool_client.app[0].id : null
}

output "api_cdn_url" {
  description = "Base URL of the API behind the per-IP rate limit (publish this one); null without per_ip_rate_limit."
  value       = local.per_ip_front == 1 ? "https://${aws_cloudfront_distribution.api[0].domain_name}/" : null
}

output "stripe_keys_secret_arn" {
  description = "Secret holding the Stripe keys as JSON; set them with put-secret-value (README.md: \"After apply\")."
  value       = aws_secretsmanager_secret.stripe_keys.arn
}

output "push_keys_secret_arn" {
  description = "Secret holding the push credentials as JSON (APNs key, FCM service account); set them with put-secret-value. Push is off until then."
  value       = aws_secretsmanager_secret.push_keys.arn
}

output "google_play_key_secret_arn" {
  description = "Secret holding the Google Play service account's JSON key; set it with put-secret-value. Google Play purchases are off until then."
  value       = aws_secretsmanager_secret.google_play_key.arn
}

output "apple_api_key_secret_arn" {
  description = "Secret holding the App Store Server API key as JSON (keyId, issuerId, privateKey); set it with put-secret-value. CONSUMPTION_REQUEST notifications are not answered until then."
  value       = aws_secretsmanager_secret.apple_api_key.arn
}

output "address_key_secret_arn" {
  description = "Secret holding the generated key of the signup grant's address hashes; never rotate it."
  value       = aws_secretsmanager_secret.address_key.arn
}

# What `npm run build` in web/ needs (README.md: "The web app").
output "web_api_base_url" {
  description = "VITE_API_BASE_URL for the web build: the CloudFront address with per_ip_rate_limit, so its limit applies to the app."
  value       = local.per_ip_front == 1 ? "https://${aws_cloudfront_distribution.api[0].domain_name}" : aws_apigatewayv2_api.http.api_endpoint
}

output "web_oidc_authority" {
  description = "VITE_OIDC_AUTHORITY for the web build."
  value       = local.jwt_issuer
}

output "web_oidc_client_id" {
  description = "VITE_OIDC_CLIENT_ID for the web build."
  value       = local.jwt_audience
}

output "web_url" {
  description = "The web app (null without web_site)."
  value       = local.web_url
}

output "web_bucket_name" {
  description = "Bucket of the web app's site (web_deploy_command uploads into it); null without web_site."
  value       = var.web_site ? aws_s3_bucket.web[0].bucket : null
}

output "web_deploy_command" {
  description = "Uploads web/dist (run from the repository root after the build) and invalidates the cache."
  value = var.web_site ? join(" && ", [
    "aws s3 sync web/dist/assets s3://${aws_s3_bucket.web[0].bucket}/assets --cache-control 'public, max-age=31536000, immutable'",
    "aws s3 sync web/dist s3://${aws_s3_bucket.web[0].bucket} --exclude 'assets/*' --cache-control no-cache",
    "aws cloudfront create-invalidation --distribution-id ${aws_cloudfront_distribution.web[0].id} --paths '/*'",
  ]) : null
}

output "gemini_key_secret_arn" {
  description = "Secrets Manager secret for the Gemini API key (read only when a provider list names gemini): put-secret-value after applying."
  value       = aws_secretsmanager_secret.gemini_key.arn
}

output "signing_key_secret_arn" {
  description = "Secrets Manager secret for the content credentials' signing key and certificate chain (JSON): put-secret-value before the first edit; the consumer refuses to start without it."
  value       = aws_secretsmanager_secret.signing_key.arn
}

output "function_names" {
  description = "The functions' names by role (api, consumer, sweeper): for logs, metrics filters and `aws lambda invoke`."
  value       = { for k, f in aws_lambda_function.this : k => f.function_name }
}

output "function_arns" {
  description = "The functions' ARNs by role (api, consumer, sweeper): for permissions, event sources or alarms of your own."
  value       = { for k, f in aws_lambda_function.this : k => f.arn }
}

output "role_names" {
  description = "The functions' execution roles' names by role: attach a policy of your own (e.g. a tracing or extension grant) without editing the module."
  value       = { for k, r in aws_iam_role.function : k => r.name }
}

output "role_arns" {
  description = "The functions' execution roles' ARNs by role (api, consumer, sweeper)."
  value       = { for k, r in aws_iam_role.function : k => r.arn }
}

output "api_id" {
  description = "The HTTP API's id (API Gateway v2)."
  value       = aws_apigatewayv2_api.http.id
}

output "api_arn" {
  description = "The HTTP API's ARN (for tag-based or resource policies)."
  value       = aws_apigatewayv2_api.http.arn
}

output "api_execution_arn" {
  description = "The HTTP API's execution ARN, the prefix of the routes' ARNs for aws_lambda_permission or IAM (execute-api:Invoke)."
  value       = aws_apigatewayv2_api.http.execution_arn
}
