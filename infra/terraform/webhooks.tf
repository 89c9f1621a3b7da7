# Signed webhooks (../../shared/src/domain/webhooks/): the outbox's rights and the disabled-endpoint
# alarm. The table comes from the code's schema like every other ("webhooks"). The api and
# consumer write an event row in the transaction that ends a job or grants a purchase
# (PutItem); the sweeper also delivers due events once a minute (Query on the due index,
# GetItem/PutItem/UpdateItem for rounds, attempts and endpoint failure counts).
# Keep in step with ../lib/webhooks.ts.

locals {
  webhooks_table_arn = aws_dynamodb_table.this["webhooks"].arn
  webhooks_due_index = [for i in local.schema["webhooks"].indexes : i.name][0]
  webhook_actions = {
    api      = ["dynamodb:PutItem"]
    consumer = ["dynamodb:PutItem"]
    sweeper  = ["dynamodb:Query", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
  }
}

data "aws_iam_policy_document" "webhooks" {
  for_each = local.webhook_actions
  statement {
    sid       = "WebhookOutbox"
    actions   = each.value
    resources = [local.webhooks_table_arn, "${local.webhooks_table_arn}/index/${local.webhooks_due_index}"]
  }
}

resource "aws_iam_role_policy" "webhooks" {
  for_each = local.webhook_actions
  name     = "webhook-outbox"
  role     = aws_iam_role.function[each.key].id
  policy   = data.aws_iam_policy_document.webhooks[each.key].json
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
