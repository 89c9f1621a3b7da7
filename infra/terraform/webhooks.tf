# Signed webhooks (../../shared/src/domain/webhooks/): the delivery rights and the disabled-endpoint
# alarm. The table comes from the code's schema like every other ("webhooks"); its item rights
# are in data-grants.json (the api and consumer write an event row in the transaction that ends
# a job or grants a purchase, PutItem). The table's KEYS_ONLY stream, filtered to new event rows, invokes the sweeper,
# which fans out one message per (event, endpoint) onto the delivery queue (sqs.tf); the
# sweeper consumes that queue (ReportBatchItemFailures), one POST per message, and its
# minute's round re-drives anything due and unsent (Query on the due index,
# GetItem/PutItem/UpdateItem for attempts, delivery rows, slots and endpoint failure counts).
# Keep in step with ../lib/webhooks.ts.

data "aws_iam_policy_document" "webhook_delivery" {
  statement {
    sid       = "WebhookStream"
    actions   = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]
    resources = [aws_dynamodb_table.this["webhooks"].stream_arn]
  }
  statement {
    sid       = "WebhookQueue"
    actions   = ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]
    resources = [aws_sqs_queue.webhooks.arn]
  }
}

resource "aws_iam_role_policy" "webhook_delivery" {
  name   = "webhook-delivery"
  role   = aws_iam_role.function["sweeper"].id
  policy = data.aws_iam_policy_document.webhook_delivery.json
}

resource "aws_lambda_event_source_mapping" "webhook_stream" {
  function_name                      = aws_lambda_function.this["sweeper"].function_name
  event_source_arn                   = aws_dynamodb_table.this["webhooks"].stream_arn
  starting_position                  = "LATEST"
  batch_size                         = 100
  maximum_batching_window_in_seconds = 0
  bisect_batch_on_function_error     = true
  maximum_retry_attempts             = 10
  filter_criteria {
    filter {
      pattern = jsonencode({ eventName = ["INSERT"], dynamodb = { Keys = { hook_sk = { S = ["event"] } } } })
    }
  }
  depends_on = [aws_iam_role_policy.webhook_delivery]
}

resource "aws_lambda_event_source_mapping" "webhook_queue" {
  function_name           = aws_lambda_function.this["sweeper"].function_name
  event_source_arn        = aws_sqs_queue.webhooks.arn
  batch_size              = 10
  function_response_types = ["ReportBatchItemFailures"]
  # One endpoint holds at most 4 POSTs of up to 15 s: 8 batches at once leave 4 to the others
  # while one hangs, within the sweeper's reservation of 10 (docs/operations.md).
  scaling_config {
    maximum_concurrency = 8
  }
  depends_on = [aws_iam_role_policy.webhook_delivery]
}

resource "aws_cloudwatch_metric_alarm" "webhook_oldest_undelivered" {
  alarm_name          = "${var.name_prefix}-webhook-oldest-undelivered"
  alarm_description   = "An event has waited over 60 minutes for an endpoint: receivers are failing or deliveries are stuck. Look at WebhookAttempts by Endpoint and Outcome, the sweeper logs (webhook_attempt, webhooks_redriven) and the webhooks dead-letter queue."
  namespace           = local.metric_namespace
  metric_name         = local.metric.webhookOldestUndeliveredAge
  dimensions          = { FunctionName = aws_lambda_function.this["sweeper"].function_name }
  statistic           = "Maximum"
  period              = 300
  threshold           = 3600
  evaluation_periods  = 3
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  tags                = local.tags
}

resource "aws_cloudwatch_metric_alarm" "webhook_endpoint_disabled" {
  alarm_name          = "${var.name_prefix}-webhook-endpoint-disabled"
  alarm_description   = "A webhook endpoint failed every delivery round for about three days and was disabled: its receiver gets no events. Look at `atelier-admin webhook list` and `webhook deliveries EVENT_ID` (status codes, errors); once the receiver is fixed, `webhook rotate ID` re-enables it and `webhook replay EVENT_ID` resends what it missed."
  namespace           = local.metric_namespace
  metric_name         = local.metric.webhookEndpointsDisabled
  dimensions          = { FunctionName = aws_lambda_function.this["sweeper"].function_name }
  statistic           = "Sum"
  period              = 300
  threshold           = 1
  evaluation_periods  = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  tags                = local.tags
}
