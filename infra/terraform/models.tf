# The model lifecycle alarms (infra/lib/models.ts in the CDK app): the daily days-to-shutdown
# gauge the sweeper's audit task records, and the provider's "no such model" answers.

locals {
  models = jsondecode(file("${path.module}/models.json"))
  # Ids by the calls they serve, without those shut down by the day of the plan.
  usable_models = {
    for kind in ["edit", "vision"] : kind => [
      for m in local.models.models : m.id
      if m.serves == kind && tonumber(replace(coalesce(m.shutdown, "9999-12-31"), "-", "")) > tonumber(formatdate("YYYYMMDD", plantimestamp()))
    ]
  }
}

resource "aws_cloudwatch_metric_alarm" "model_shutdown_near" {
  alarm_name          = "${var.name_prefix}-model-shutdown-near"
  alarm_description   = "A configured model is ${local.models.shutdown_warning_days} days or fewer from its provider's announced shutdown (or past it): after that day every edit fails. The sweeper logs model_shutdown_near with the model; set image_model / vision_model to a current model of models.json and apply."
  namespace           = local.models.metrics.namespace
  metric_name         = local.models.metrics.days_to_shutdown
  dimensions          = { FunctionName = aws_lambda_function.this["sweeper"].function_name }
  statistic           = "Minimum"
  period              = 86400
  threshold           = local.models.shutdown_warning_days
  evaluation_periods  = 1
  comparison_operator = "LessThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  tags                = local.tags
}

resource "aws_cloudwatch_metric_alarm" "model_unavailable" {
  alarm_name          = "${var.name_prefix}-model-unavailable"
  alarm_description   = "The provider answered \"no such model\" (model_not_found) for the configured model: every job fails (each is refunded) until the configuration names a model it serves. The consumer logs model_unavailable with the model; set image_model / vision_model to a current model of models.json and apply."
  namespace           = local.models.metrics.namespace
  metric_name         = local.models.metrics.model_unavailable
  dimensions          = { FunctionName = aws_lambda_function.this["consumer"].function_name }
  statistic           = "Sum"
  period              = 300
  threshold           = 1
  evaluation_periods  = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  tags                = local.tags
}

# One alarm per provider whose circuit breaker opened (docs/design.md rule 15).
resource "aws_cloudwatch_metric_alarm" "provider_breaker_open" {
  for_each            = toset(local.models.providers)
  alarm_name          = "${var.name_prefix}-provider-breaker-open-${each.key}"
  alarm_description   = "The ${each.key} circuit breaker opened: ${each.key} failed definitely (connection refused, 429, 5xx, no such model) ATELIER_BREAKER_FAILURES times in a row, so its calls go straight to the next provider of the provider lists, or fail and are refunded when none is left. It re-fires while each probe after a cool-down fails, and clears once a probe succeeds (provider_breaker_closed in the consumer log). See docs/operations.md."
  namespace           = local.models.metrics.namespace
  metric_name         = local.models.metrics.provider_breaker
  dimensions          = { FunctionName = aws_lambda_function.this["consumer"].function_name, Provider = each.key, Transition = "opened" }
  statistic           = "Sum"
  period              = 300
  threshold           = 1
  evaluation_periods  = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = [aws_sns_topic.alarms.arn]
  tags                = local.tags
}
