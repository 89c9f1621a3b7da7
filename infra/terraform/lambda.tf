# The three functions, from the zips `cargo xtask package` builds (no archive provider).

locals {
  consumer_only_env = ["ATELIER_MODEL_API_KEY_SECRET_ID", "ATELIER_GEMINI_API_KEY_SECRET_ID", "ATELIER_SIGNING_SECRET_ID"]
  api_only_env      = ["ATELIER_STRIPE_SECRET_ID", "ATELIER_ADDRESS_KEY_SECRET_ID", "ATELIER_GOOGLE_PLAY_SECRET_ID", "ATELIER_APPLE_API_SECRET_ID"]
  sweeper_only_env  = ["ATELIER_PUSH_SECRET_ID"]

  # Set by Lambda from logging_config, never by us.
  platform_env = ["AWS_LAMBDA_LOG_FORMAT", "AWS_LAMBDA_LOG_LEVEL"]

  # Every value the module can supply; the code's list decides which are set. Keep in step
  # with envValues() in the CDK construct (infra/lib/atelier-service.ts in the repository).
  env_values = merge(
    { for name, t in local.schema : t.env => aws_dynamodb_table.this[name].name },
    {
      ATELIER_QUEUE_URL                = aws_sqs_queue.jobs.url
      ATELIER_WEBHOOK_QUEUE_URL        = aws_sqs_queue.webhooks.url
      ATELIER_BUCKET                   = aws_s3_bucket.assets.bucket
      ATELIER_MAX_IN_FLIGHT            = tostring(var.max_in_flight)
      ATELIER_RESULT_RETENTION_DAYS    = tostring(var.result_retention_days)
      ATELIER_MODEL_BASE_URL           = var.model_base_url
      ATELIER_MODEL_API_KEY_SECRET_ID  = aws_secretsmanager_secret.provider_key.arn
      ATELIER_EDIT_PROVIDERS           = join(",", var.edit_providers)
      ATELIER_VISION_PROVIDERS         = join(",", var.vision_providers)
      ATELIER_GEMINI_BASE_URL          = var.gemini_base_url
      ATELIER_GEMINI_API_KEY_SECRET_ID = aws_secretsmanager_secret.gemini_key.arn
      ATELIER_SIGNING_SECRET_ID        = aws_secretsmanager_secret.signing_key.arn
      ATELIER_IMAGE_MODEL              = var.image_model
      ATELIER_VISION_MODEL             = var.vision_model
      ATELIER_DAILY_CAP_MICROS         = tostring(var.daily_cap_micros)
      ATELIER_USER_DAILY_SHARE_MICROS  = tostring(var.user_daily_share_micros)
      ATELIER_UPLOAD_SLOTS_PER_DAY     = tostring(var.upload_slots_per_day)
      ATELIER_UPLOAD_BYTES_PER_DAY     = tostring(var.upload_bytes_per_day)
      ATELIER_REQUESTS_PER_WINDOW      = tostring(var.requests_per_window)
      ATELIER_REQUEST_WINDOW_SECS      = tostring(var.request_window_secs)
      ATELIER_EMAIL_VERIFIED_CLAIM     = var.email_verified_claim
      ATELIER_STUCK_AFTER_SECS         = tostring(local.stuck_after_secs)
      ATELIER_CONSUMER_TIMEOUT_SECS    = tostring(local.consumer_timeout)
      ATELIER_STRIPE_SECRET_ID         = aws_secretsmanager_secret.stripe_keys.arn
      ATELIER_ADDRESS_KEY_SECRET_ID    = aws_secretsmanager_secret.address_key.arn
      ATELIER_PUSH_SECRET_ID           = aws_secretsmanager_secret.push_keys.arn
      ATELIER_GOOGLE_PLAY_SECRET_ID    = aws_secretsmanager_secret.google_play_key.arn
      ATELIER_APPLE_API_SECRET_ID      = aws_secretsmanager_secret.apple_api_key.arn
      ATELIER_CREDIT_PACKS             = var.credit_packs
      ATELIER_CHECKOUT_RETURN_URLS     = join(",", var.checkout_return_urls)
      ATELIER_APPLE_ENVIRONMENT        = var.apple_environment
      ATELIER_UNBOUND_STORE_PURCHASES  = var.unbound_store_purchases
    },
    # App Store purchases: only what is set (none: off).
    var.apple_root_certs == "" ? {} : { ATELIER_APPLE_ROOT_CERTS = var.apple_root_certs },
    var.apple_bundle_id == "" ? {} : { ATELIER_APPLE_BUNDLE_ID = var.apple_bundle_id },
    var.apple_app_apple_id == null ? {} : { ATELIER_APPLE_APP_APPLE_ID = tostring(var.apple_app_apple_id) },
    # Google Play purchases: only what is set (no package name: off).
    var.google_play_package_name == "" ? {} : { ATELIER_GOOGLE_PLAY_PACKAGE_NAME = var.google_play_package_name },
    var.google_play_push_audience == "" ? {} : { ATELIER_GOOGLE_PLAY_PUSH_AUDIENCE = var.google_play_push_audience },
    var.google_play_push_service_account == "" ? {} : { ATELIER_GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT = var.google_play_push_service_account },
  )
  function_env = {
    for e in local.env_names : e.name => local.env_values[e.name]
    if !contains(local.platform_env, e.name) && contains(keys(local.env_values), e.name)
  }
  missing_env = [
    for e in local.env_names : e.name
    if e.required && !contains(local.platform_env, e.name) && !contains(keys(local.env_values), e.name)
  ]
  # A value the module has for a name the code does not read would be dropped without a word
  # (as daily_cap_micros once was): refused instead.
  unread_env = [
    for name in keys(local.env_values) : name
    if !contains([for e in local.env_names : e.name], name)
  ]
}

resource "aws_cloudwatch_log_group" "function" {
  #checkov:skip=CKV_AWS_158:Logs carry ids and event names, never secrets or image bytes (STYLE.md); the CloudWatch default encryption suffices.
  #checkov:skip=CKV_AWS_338:Retention is 14 days (90 in production) to keep cost at rest near zero; money is audited from the ledger, not the logs.
  for_each          = local.functions
  name              = "/aws/lambda/${var.name_prefix}-${each.key}"
  retention_in_days = local.log_retention_days
  tags              = local.tags
}

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_50:No X-Ray: structured JSON logs with one event name per line are the trace; X-Ray would add wildcard IAM and per-trace cost.
  #checkov:skip=CKV_AWS_116:The consumer's retries and dead-letter queue are the SQS queue's; the API is synchronous; the sweeper runs again the next minute (no retries).
  #checkov:skip=CKV_AWS_117:The functions talk only to AWS APIs and the model provider over TLS; a VPC would add NAT cost and nothing to protect.
  #checkov:skip=CKV_AWS_115:Each function's reservation is a variable (sweeper 2, consumer its event source's maximum, API none by default); 0 leaves a function unreserved for accounts whose concurrency limit is 10.
  #checkov:skip=CKV_AWS_173:The environment holds resource names and the secret's ARN, not secrets; the Lambda service key encrypts it at rest.
  #checkov:skip=CKV_AWS_272:Code signing needs a signing profile and pipeline; the zips come from the reproducible `cargo xtask package`.
  for_each = local.functions

  function_name = "${var.name_prefix}-${each.key}"
  description   = each.value.description
  role          = aws_iam_role.function[each.key].arn
  runtime       = "provided.al2023"
  handler       = "bootstrap"
  architectures = [var.arch]
  # The zips from dist_dir (their hash redeploys changed code) or from code_s3 (the object
  # version does).
  filename          = var.dist_dir == null ? null : "${var.dist_dir}/${each.value.package}/bootstrap.zip"
  source_code_hash  = var.dist_dir == null ? null : filebase64sha256("${var.dist_dir}/${each.value.package}/bootstrap.zip")
  s3_bucket         = var.dist_dir == null ? var.code_s3.bucket : null
  s3_key            = var.dist_dir == null ? "${var.code_s3.key_prefix}${each.value.package}/bootstrap.zip" : null
  s3_object_version = var.dist_dir == null ? lookup(var.code_s3.object_versions, each.value.package, null) : null
  memory_size       = each.value.memory
  timeout           = each.value.timeout

  # The sweeper guarantees refunds and the consumer runs paid jobs: each has its own
  # concurrency, so API load (long-polls included) never throttles them; the API's own
  # reservation also caps it (-1: unreserved).
  reserved_concurrent_executions = local.reserved_concurrency[each.key] > 0 ? local.reserved_concurrency[each.key] : -1

  logging_config {
    log_format            = "JSON"
    log_group             = aws_cloudwatch_log_group.function[each.key].name
    application_log_level = "INFO"
    system_log_level      = "WARN"
  }

  environment {
    # Only the consumer may read the provider key, so only the consumer is told where it is.
    variables = {
      for k, v in local.function_env : k => v
      if(each.key == "consumer" || !contains(local.consumer_only_env, k)) && (each.key == "api" || !contains(local.api_only_env, k)) && (each.key == "sweeper" || !contains(local.sweeper_only_env, k))
    }
  }

  lifecycle {
    precondition {
      condition     = (var.dist_dir == null) != (var.code_s3 == null)
      error_message = "Give the function zips once: dist_dir (a local folder) or code_s3 (a bucket), not both and not neither."
    }
    precondition {
      condition     = length(local.missing_env) == 0
      error_message = "The code requires environment variables this module does not set: ${join(", ", local.missing_env)}. Add them to env_values in lambda.tf."
    }
    precondition {
      condition     = length(local.unread_env) == 0
      error_message = "This module sets values the code does not read (not in env-names.json): ${join(", ", local.unread_env)}. Their variables would be dropped silently; refresh env-names.json (cargo xtask infra-schema) or remove them from env_values."
    }
  }

  depends_on = [aws_iam_role_policy.function]
  tags       = local.tags
}

locals {
  reserved_concurrency = {
    api      = var.api_reserved_concurrency
    consumer = coalesce(var.consumer_reserved_concurrency, var.consumer_max_concurrency)
    sweeper  = var.sweeper_reserved_concurrency
  }
}

resource "aws_lambda_event_source_mapping" "jobs" {
  event_source_arn        = aws_sqs_queue.jobs.arn
  function_name           = aws_lambda_function.this["consumer"].arn
  batch_size              = 1
  function_response_types = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = var.consumer_max_concurrency
  }

  lifecycle {
    precondition {
      condition     = local.reserved_concurrency.consumer == 0 || local.reserved_concurrency.consumer >= var.consumer_max_concurrency
      error_message = "consumer_reserved_concurrency must be 0 or at least consumer_max_concurrency: below it the queue's poller is throttled."
    }
  }
}

resource "aws_lambda_function_event_invoke_config" "sweeper" {
  function_name                = aws_lambda_function.this["sweeper"].function_name
  maximum_retry_attempts       = 0
  maximum_event_age_in_seconds = 60
}

resource "aws_cloudwatch_event_rule" "sweep" {
  name                = "${var.name_prefix}-sweep-every-minute"
  description         = "Run the sweeper once a minute"
  schedule_expression = "rate(1 minute)"
  tags                = local.tags
}

resource "aws_cloudwatch_event_target" "sweep" {
  rule = aws_cloudwatch_event_rule.sweep.name
  arn  = aws_lambda_function.this["sweeper"].arn
  retry_policy {
    maximum_retry_attempts       = 0
    maximum_event_age_in_seconds = 60
  }
}

resource "aws_lambda_permission" "sweep" {
  statement_id  = "AllowEventBridge"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this["sweeper"].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.sweep.arn
}
