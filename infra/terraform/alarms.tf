# Alarms on money, stuck work, a provider outage, the API and the queue. The custom metrics
# (namespace Atelier) are emitted by the code, shared/src/adapters/metrics/ (../README.md).

resource "aws_sns_topic" "alarms" {
  #checkov:skip=CKV_AWS_26:Alarm notifications carry metric names and thresholds only; CloudWatch cannot publish under the AWS managed SNS key and a customer managed key costs more than the stack at rest.
  name = "${var.name_prefix}-alarms"
  tags = local.tags
}

data "aws_iam_policy_document" "alarms_topic" {
  statement {
    sid       = "CloudWatchPublishes"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alarms.arn]
    principals {
      type        = "Service"
      identifiers = ["cloudwatch.amazonaws.com"]
    }
  }
  statement {
    sid       = "TlsOnly"
    effect    = "Deny"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alarms.arn]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_sns_topic_policy" "alarms" {
  arn    = aws_sns_topic.alarms.arn
  policy = data.aws_iam_policy_document.alarms_topic.json
}

resource "aws_sns_topic_subscription" "alarm_email" {
  count     = var.alarm_email == null ? 0 : 1
  topic_arn = aws_sns_topic.alarms.arn
  protocol  = "email"
  endpoint  = var.alarm_email
}

locals {
  alarms = {
    dead-letter-queue-not-empty = {
      description = "A job message failed every delivery; look at the job (jobId in the body) and the consumer logs."
      namespace   = "AWS/SQS"
      metric      = "ApproximateNumberOfMessagesVisible"
      dimensions  = { QueueName = aws_sqs_queue.dead_letter.name }
      statistic   = "Maximum"
      period      = 60
      threshold   = 1
    }
    consumer-errors = {
      description = "The consumer failed invocations (crash, timeout, or an Err at its edge)."
      namespace   = "AWS/Lambda"
      metric      = "Errors"
      dimensions  = { FunctionName = aws_lambda_function.this["consumer"].function_name }
      statistic   = "Sum"
      period      = 300
      threshold   = 1
    }
    jobs-stuck = {
      description = "The sweeper found jobs in processing for more than 15 minutes (it fails and refunds them)."
      namespace   = local.metric_namespace
      metric      = local.metric.jobsStuck
      dimensions  = { FunctionName = aws_lambda_function.this["sweeper"].function_name }
      statistic   = "Maximum"
      period      = 300
      threshold   = 1
    }
    refunds-failed = {
      description = "The sweeper owed refunds (jobs past the dispatch limit or stuck in processing) and its refund transaction failed: users are owed credits. Look at the sweeper logs for sweep_refund_failed (job_id, user_id, credits, error chain); the next sweep retries every minute. If it persists, check DynamoDB errors/throttling on the jobs, accounts and ledger tables and the sweeper role; then run atelier-admin audit."
      namespace   = local.metric_namespace
      metric      = local.metric.refundsFailed
      dimensions  = { FunctionName = aws_lambda_function.this["sweeper"].function_name }
      statistic   = "Maximum"
      period      = 300
      threshold   = 1
    }
    sweeper-not-running = {
      description = "The sweeper has not run for 15 minutes (its schedule is every minute): nothing re-sends queued jobs, refunds stuck ones, settles orphaned reservations or delivers webhooks. Check the EventBridge rule (enabled?), the sweeper's reserved concurrency and its role; a manual aws lambda invoke of the sweeper runs one round."
      namespace   = "AWS/Lambda"
      metric      = "Invocations"
      dimensions  = { FunctionName = aws_lambda_function.this["sweeper"].function_name }
      statistic   = "Sum"
      period      = 300
      threshold   = 1
      periods     = 3
      comparison  = "LessThanThreshold"
      missing     = "breaching"
    }
    payment-signature-invalid = {
      description = "Stripe webhook deliveries failed the signature check: if the webhook secret is wrong, paid credits never arrive. Compare the Stripe webhook secret with the endpoint's signing secret in the Stripe dashboard; Stripe retries for three days, so fixing the secret delivers what was refused."
      namespace   = local.metric_namespace
      metric      = local.metric.paymentEvents
      dimensions  = { FunctionName = aws_lambda_function.this["api"].function_name, Outcome = local.metrics.values.paymentSignatureInvalid }
      statistic   = "Sum"
      period      = 300
      threshold   = 3
    }
    purchase-reversals = {
      description = "At least ${var.reversal_alarm_per_hour} purchases were refunded or disputed within an hour: a burst of chargebacks is usually stolen cards buying credits. Each reversal already took back what was left of its credits (never below zero) and put an account whose credits were spent on hold; look at the api logs (purchase_reversed: user_id, payment_id, shortfall), atelier-admin user show, and the disputes in the Stripe dashboard."
      namespace   = local.metric_namespace
      metric      = local.metric.paymentEvents
      dimensions  = { FunctionName = aws_lambda_function.this["api"].function_name, Outcome = local.metrics.values.paymentReversed }
      statistic   = "Sum"
      period      = 3600
      threshold   = var.reversal_alarm_per_hour
    }
    sweeper-errors = {
      description = "The sweeper failed invocations: a crash, a timeout, or a sweep whose refunds failed (see refunds-failed). Nothing else re-sends queued jobs or refunds stuck ones; look at the sweeper logs (sweep_completed, sweep_refund_failed, config_invalid)."
      namespace   = "AWS/Lambda"
      metric      = "Errors"
      dimensions  = { FunctionName = aws_lambda_function.this["sweeper"].function_name }
      statistic   = "Sum"
      period      = 300
      threshold   = 1
    }
    api-errors = {
      description = "The api function failed invocations (crash, timeout); clients saw 5xx. Look at its logs (request_failed, config_invalid)."
      namespace   = "AWS/Lambda"
      metric      = "Errors"
      dimensions  = { FunctionName = aws_lambda_function.this["api"].function_name }
      statistic   = "Sum"
      period      = 300
      threshold   = 1
    }
    api-5xx = {
      description = "The HTTP API answered 5 or more 5xx in 5 minutes. Look at the api function logs for request_failed (the error chain) and its Errors/Throttles; a 502/503 without a log line is API Gateway failing to reach the function."
      namespace   = "AWS/ApiGateway"
      metric      = "5xx"
      dimensions  = { ApiId = aws_apigatewayv2_api.http.id }
      statistic   = "Sum"
      period      = 300
      threshold   = 5
    }
    api-latency = {
      description = "The HTTP API p99 latency was 3 s or more for 15 minutes. Look at DynamoDB latency/throttling on the accounts and jobs tables, and the api function Duration (cold starts, memory)."
      namespace   = "AWS/ApiGateway"
      metric      = "Latency"
      dimensions  = { ApiId = aws_apigatewayv2_api.http.id }
      statistic   = "p99"
      period      = 300
      threshold   = 3000
      periods     = 3
    }
    oldest-queued-job = {
      description = "A job message has waited 10 minutes or more in the queue: the consumer is not keeping up or not running. Look at the consumer Errors/Throttles and its event source mapping; queued jobs past the queued deadline are refunded by the sweeper (DISPATCH_LIMIT)."
      namespace   = "AWS/SQS"
      metric      = "ApproximateAgeOfOldestMessage"
      dimensions  = { QueueName = aws_sqs_queue.jobs.name }
      statistic   = "Maximum"
      period      = 300
      threshold   = 600
    }
  }
  # A provider outage: the consumer acknowledges business failures, so only these counts see it.
  outage_alarms = {
    for code, threshold in var.outage_alarm_thresholds : "jobs-${lower(replace(code, "_", "-"))}" => {
      description = "${threshold} or more jobs failed ${code} in 5 minutes: the model provider is likely down or refusing (each job was refunded). Look at the consumer logs for call_recorded (outcome model_provider_error / model_timeout) and the provider status; atelier-admin job show ID shows one job's calls. atelier-admin budget halt stops paid calls until it recovers."
      namespace   = local.metric_namespace
      metric      = local.metric.jobsFinished
      dimensions  = { FunctionName = aws_lambda_function.this["consumer"].function_name, Outcome = "failed", FailureCode = code }
      statistic   = "Sum"
      period      = 300
      threshold   = threshold
    }
  }
  budget_alarms = {
    for pct in var.budget_alert_percents : "budget-past-${pct}-percent" => {
      description = "Model spend (used + reserved) passed ${pct}% of the daily cap; at 100% the breaker refuses paid calls and jobs fail BUDGET_PAUSED (refunded). Look at atelier-admin budget show (top spenders, headroom); raise the cap with budget set-cap, or budget halt if the spend is abuse."
      namespace   = local.metric_namespace
      metric      = local.metric.budgetUsedPercent
      dimensions  = { FunctionName = aws_lambda_function.this["consumer"].function_name }
      statistic   = "Maximum"
      period      = 300
      threshold   = pct
    }
  }
  throttle_alarms = {
    for f in ["api", "consumer", "sweeper"] : "${f}-throttles" => {
      description = "The ${f} function was throttled: the account's concurrency ran out. Look at ConcurrentExecutions across the account; the sweeper has reserved concurrency, the others share the pool."
      namespace   = "AWS/Lambda"
      metric      = "Throttles"
      dimensions  = { FunctionName = aws_lambda_function.this[f].function_name }
      statistic   = "Sum"
      period      = 300
      threshold   = 1
    }
  }
  # VerificationFailures, one alarm per Source (5 minutes): App Store signed data the api
  # refused, push credentials a push service refused the sweeper. Any caller can post a
  # transaction or a notification, so those fire on a run; one push refusal is enough.
  verification_alarms = {
    app-store-transactions-refused = {
      function    = "api"
      source      = local.metrics.values.verificationAppStoreTransaction
      threshold   = 10
      description = "Signed App Store transactions posted by the iOS app (POST /v1/purchases/apple) were refused as not Apple's data for this app: if ours is wrong (bundle id, app Apple id, root certificates, environment), no iPhone purchase is granted. The api logs app_store_purchase_refused say why; check ATELIER_APPLE_ROOT_CERTS, the bundle id and the environment. A few from one user_id is someone posting junk: nothing was written."
    }
    app-store-notifications-refused = {
      function    = "api"
      source      = local.metrics.values.verificationAppStoreNotification
      threshold   = 3
      description = "App Store Server Notifications (POST /v1/webhooks/apple) failed verification: refunds and revocations are not taken back while ours is wrong. The api logs app_store_notification_refused say why; check ATELIER_APPLE_ROOT_CERTS, the bundle id and the environment; Apple retries for days, so fixing it applies what was refused."
    }
    push-credentials-refused-apns = {
      function    = "sweeper"
      source      = local.metrics.values.verificationApns
      threshold   = 1
      description = "APNs refused our provider token (403): no iPhone gets a push. The sweeper logs push_attempt (answer CredentialsRefused) and the key in the push secret: a revoked .p8 key, or a wrong key_id, team_id or topic. Store a valid key with put-secret-value; refused pushes are retried on the webhook schedule after the next cold start."
    }
    push-credentials-refused-fcm = {
      function    = "sweeper"
      source      = local.metrics.values.verificationFcm
      threshold   = 1
      description = "FCM (401/403) or Google's token endpoint refused our service account: no Android phone gets a push. The sweeper logs push_attempt (answer CredentialsRefused, or the token endpoint's status in error): a deleted key, a wrong client_email or project_id, or the account lacking the Firebase Cloud Messaging permission. Store a valid key with put-secret-value; refused pushes are retried on the webhook schedule after the next cold start."
    }
  }
  verification_metric_alarms = {
    for name, v in local.verification_alarms : name => {
      description = v.description
      namespace   = local.metric_namespace
      metric      = local.metric.verificationFailures
      dimensions  = { FunctionName = aws_lambda_function.this[v.function].function_name, Source = v.source }
      statistic   = "Sum"
      period      = 300
      threshold   = v.threshold
    }
  }
  all_alarms = merge(local.alarms, local.outage_alarms, local.budget_alarms, local.throttle_alarms, local.guard_alarms, local.verification_metric_alarms)
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each            = local.all_alarms
  alarm_name          = "${var.name_prefix}-${each.key}"
  alarm_description   = each.value.description
  namespace           = each.value.namespace
  metric_name         = each.value.metric
  dimensions          = each.value.dimensions
  statistic           = startswith(each.value.statistic, "p") ? null : each.value.statistic
  extended_statistic  = startswith(each.value.statistic, "p") ? each.value.statistic : null
  period              = each.value.period
  threshold           = each.value.threshold
  evaluation_periods  = try(each.value.periods, 1)
  comparison_operator = try(each.value.comparison, "GreaterThanOrEqualToThreshold")
  treat_missing_data  = try(each.value.missing, "notBreaching")
  alarm_actions       = [aws_sns_topic.alarms.arn]
  tags                = local.tags
}
