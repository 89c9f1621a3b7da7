# The guards that watch the books from outside the money path, run by the sweeper (see
# infra/lib/ledger-guard.ts for the CDK twin and infra/README.md "Alarms" for what to do):
# - the ledger tamper alarm: the ledger table's KEYS_ONLY stream (dynamodb.tf) mapped to the
#   sweeper, filtered to MODIFY/REMOVE, so normal appends never invoke it;
# - the daily audit: a rule whose input is {"task":"audit"}; the sweeper audits in passes
#   bounded by its timeout and continues by invoking itself asynchronously;
# - the submit → delivered p95 alarm.

locals {
  # Merged into alarms.tf's alarms (same resource, same defaults).
  guard_alarms = {
    audit-offenders = {
      description = "The daily audit found accounts whose balance is not the sum of their ledger (or is negative). Look at the sweeper logs for audit_offender (user_id, balance, ledger_sum, problem) and run atelier-admin audit and atelier-admin user show USER; correct with atelier-admin grant, never by editing rows."
      namespace   = local.metric_namespace
      metric      = local.metric.auditOffenders
      dimensions  = { FunctionName = local.sweeper_name }
      statistic   = "Sum"
      period      = 3600
      threshold   = 1
    }
    delivery-time-p95 = {
      description = "The submit → delivered p95 was 5 minutes or more for 15 minutes: users wait. Look at QueueWait (consumer not keeping up: oldest-queued-job, consumer-throttles) and ModelCallLatency by CallKind (a slow provider)."
      namespace   = local.metric_namespace
      metric      = local.metric.deliveryTime
      dimensions  = { FunctionName = aws_lambda_function.this["consumer"].function_name }
      statistic   = "p95"
      period      = 300
      threshold   = local.delivery_p95_threshold
      periods     = 3
    }
  }
  audit_schedule         = "cron(17 3 * * ? *)"
  ledger_stream_batch    = 100
  delivery_p95_threshold = 300000
  sweeper_name           = aws_lambda_function.this["sweeper"].function_name
}

data "aws_iam_policy_document" "sweeper_guard" {
  statement {
    sid       = "LedgerStream"
    actions   = ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"]
    resources = [aws_dynamodb_table.this["ledger"].stream_arn]
  }
  statement {
    sid       = "ListStreams"
    actions   = ["dynamodb:ListStreams"]
    resources = ["*"]
  }
  statement {
    sid       = "ContinueAudit"
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.this["sweeper"].arn]
  }
  # The daily audit reads every account: the one Scan any role may make.
  statement {
    sid       = "AuditAccounts"
    actions   = ["dynamodb:Scan"]
    resources = [aws_dynamodb_table.this["accounts"].arn]
  }
}

# Its own policy: it names the sweeper, which depends on the role's least-privilege policy.
resource "aws_iam_role_policy" "sweeper_guard" {
  name   = "guard"
  role   = aws_iam_role.function["sweeper"].id
  policy = data.aws_iam_policy_document.sweeper_guard.json
}

resource "aws_lambda_event_source_mapping" "ledger_stream" {
  function_name                      = local.sweeper_name
  event_source_arn                   = aws_dynamodb_table.this["ledger"].stream_arn
  starting_position                  = "LATEST"
  batch_size                         = local.ledger_stream_batch
  maximum_batching_window_in_seconds = 0
  bisect_batch_on_function_error     = true
  maximum_retry_attempts             = 10
  filter_criteria {
    filter {
      pattern = jsonencode({ eventName = ["MODIFY", "REMOVE"] })
    }
  }
  depends_on = [aws_iam_role_policy.sweeper_guard]
}

resource "aws_cloudwatch_event_rule" "audit" {
  name                = "${var.name_prefix}-audit-daily"
  description         = "Run the audit (every balance against its ledger) once a day"
  schedule_expression = local.audit_schedule
  tags                = local.tags
}

resource "aws_cloudwatch_event_target" "audit" {
  rule  = aws_cloudwatch_event_rule.audit.name
  arn   = aws_lambda_function.this["sweeper"].arn
  input = jsonencode({ task = "audit" })
  retry_policy {
    maximum_retry_attempts       = 2
    maximum_event_age_in_seconds = 3600
  }
}

resource "aws_lambda_permission" "audit" {
  statement_id  = "AllowEventBridgeAudit"
  action        = "lambda:InvokeFunction"
  function_name = local.sweeper_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.audit.arn
}

# One alarm per event name, each on one metric (the same as CDK, where the local cloud's
# CloudFormation refuses metric math alarms).
resource "aws_cloudwatch_metric_alarm" "ledger_row_changed" {
  for_each            = { modified = "MODIFY", removed = "REMOVE" }
  alarm_name          = "${var.name_prefix}-ledger-row-${each.key}"
  alarm_description   = "A ledger row was ${each.key}: the ledger is append-only, so this is tampering or a bug outside the money path. Look at the sweeper logs for ledger_row_changed (user_id, ref, event_name) and at CloudTrail for who wrote to the ledger table; restore the row from point-in-time recovery, then run atelier-admin audit."
  namespace           = local.metric_namespace
  metric_name         = local.metric.ledgerRowsChanged
  dimensions          = { FunctionName = local.sweeper_name, EventName = each.value }
  period              = 60
  statistic           = "Sum"
  threshold           = 1
  evaluation_periods  = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  tags                = local.tags
}
