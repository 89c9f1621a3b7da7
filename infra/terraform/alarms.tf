# Alarms on money and stuck work. The two custom metrics are emitted by the code (../README.md).

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
      namespace   = "Atelier"
      metric      = "JobsStuck"
      dimensions  = { FunctionName = aws_lambda_function.this["sweeper"].function_name }
      statistic   = "Maximum"
      period      = 300
      threshold   = 1
    }
    refunds-failed = {
      description = "The sweeper owed refunds (jobs past the dispatch limit or stuck in processing) and its refund transaction failed: users are owed credits. Look at the sweeper logs for sweep_refund_failed (job_id, user_id, credits, error chain); the next sweep retries every minute. If it persists, check DynamoDB errors/throttling on the jobs, accounts and ledger tables and the sweeper role; then run atelier-admin audit."
      namespace   = "Atelier"
      metric      = "RefundsFailed"
      dimensions  = { FunctionName = aws_lambda_function.this["sweeper"].function_name }
      statistic   = "Maximum"
      period      = 300
      threshold   = 1
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
    budget-past-80-percent = {
      description = "Model spend passed 80% of the daily cap (the breaker refuses paid calls at 100%)."
      namespace   = "Atelier"
      metric      = "BudgetUsedPercent"
      dimensions  = { FunctionName = aws_lambda_function.this["consumer"].function_name }
      statistic   = "Maximum"
      period      = 300
      threshold   = 80
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each            = local.alarms
  alarm_name          = "${var.name_prefix}-${each.key}"
  alarm_description   = each.value.description
  namespace           = each.value.namespace
  metric_name         = each.value.metric
  dimensions          = each.value.dimensions
  statistic           = each.value.statistic
  period              = each.value.period
  threshold           = each.value.threshold
  evaluation_periods  = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  tags                = local.tags
}
