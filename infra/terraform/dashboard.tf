# One CloudWatch dashboard, one screen: money, pipeline, budget, money in (the same layout as
# infra/lib/dashboard.ts; drawn in infra/README.md "Dashboard"). Widgets that split a metric by
# a dimension use SEARCH, so a new failure code, refund source or verification source appears
# without an edit.

locals {
  fn_name = { for k, f in aws_lambda_function.this : k => f.function_name }
  region  = data.aws_region.current.name
  # A SEARCH over every dimension combination of a metric under the given keys.
  search = {
    refunded_credits = "SEARCH('{Atelier,FunctionName,RefundSource} MetricName=\"RefundedCredits\"', 'Sum', 300)"
    refunds          = "SEARCH('{Atelier,FunctionName,RefundSource} MetricName=\"Refunds\"', 'Sum', 300)"
    model_cost       = "SEARCH('{Atelier,FunctionName,CallKind} MetricName=\"ModelCallCostMicros\"', 'Sum', 300)"
    refusals         = "SEARCH('{Atelier,FunctionName,Status,Code} MetricName=\"Refusals\"', 'Sum', 300)"
    jobs_finished    = "SEARCH('{Atelier,FunctionName,Outcome,FailureCode} MetricName=\"JobsFinished\"', 'Sum', 300)"
    ledger_changed   = "SEARCH('{Atelier,FunctionName,EventName} MetricName=\"LedgerRowsChanged\"', 'Sum', 300)"
    purchased        = "SEARCH('{${local.metric_namespace},FunctionName,Pack} MetricName=\"${local.metric.purchasedCredits}\"', 'Sum', 300)"
    charged          = "SEARCH('{${local.metric_namespace},FunctionName,Operation} MetricName=\"${local.metric.chargedCredits}\"', 'Sum', 300)"
    verification     = "SEARCH('{${local.metric_namespace},FunctionName,Source} MetricName=\"${local.metric.verificationFailures}\"', 'Sum', 300)"
    revenue          = "SEARCH('{${local.metric_namespace},FunctionName,Pack,Currency} MetricName=\"${local.metric.purchaseRevenue}\"', 'Sum', 300)"
  }
  # [title, x, y, width, metrics, annotations]
  widgets = [
    ["Credits refunded, by source", 0, 0, 6, [[{ expression = local.search.refunded_credits, id = "e1" }]], []],
    ["Refunds, by source", 6, 0, 6, [[{ expression = local.search.refunds, id = "e1" }]], []],
    ["Model cost booked (µ$), by call kind", 12, 0, 6, [[{ expression = local.search.model_cost, id = "e1" }]], []],
    ["402 / 429 refusals, replays, key conflicts", 18, 0, 6, [
      [{ expression = local.search.refusals, id = "e1" }],
      [local.metric_namespace, local.metric.replays, "FunctionName", local.fn_name["api"], { stat = "Sum", label = "replays" }],
      [local.metric_namespace, local.metric.idempotencyConflicts, "FunctionName", local.fn_name["api"], { stat = "Sum", label = "key conflicts (409)" }],
    ], []],
    ["Jobs finished, by outcome and code", 0, 6, 6, [[{ expression = local.search.jobs_finished, id = "e1" }]], []],
    ["Queue wait and submit → delivered (ms)", 6, 6, 6, [
      [local.metric_namespace, local.metric.queueWait, "FunctionName", local.fn_name["consumer"], { stat = "p50", label = "queue wait p50" }],
      [local.metric_namespace, local.metric.queueWait, "FunctionName", local.fn_name["consumer"], { stat = "p95", label = "queue wait p95" }],
      [local.metric_namespace, local.metric.deliveryTime, "FunctionName", local.fn_name["consumer"], { stat = "p50", label = "delivered p50" }],
      [local.metric_namespace, local.metric.deliveryTime, "FunctionName", local.fn_name["consumer"], { stat = "p95", label = "delivered p95" }],
    ], []],
    ["Oldest queued job (s)", 12, 6, 6, [
      ["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", aws_sqs_queue.jobs.name, { stat = "Maximum" }],
    ], [{ value = 600, label = "oldest-queued-job alarm" }]],
    ["Function errors", 18, 6, 6, [
      for f in ["api", "consumer", "sweeper"] : ["AWS/Lambda", "Errors", "FunctionName", local.fn_name[f], { stat = "Sum", label = f }]
    ], []],
    ["Budget: share of the daily cap (%)", 0, 12, 12, [
      [local.metric_namespace, local.metric.budgetUsedPercent, "FunctionName", local.fn_name["consumer"], { stat = "Maximum", label = "used + reserved" }],
      [local.metric_namespace, local.metric.budgetSpentPercent, "FunctionName", local.fn_name["consumer"], { stat = "Maximum", label = "used" }],
      [local.metric_namespace, local.metric.budgetReservedPercent, "FunctionName", local.fn_name["consumer"], { stat = "Maximum", label = "reserved" }],
    ], [for p in var.budget_alert_percents : { value = p, label = "${p}% alert" }]],
    ["Sweeper: stuck jobs, failed refunds", 12, 12, 6, [
      [local.metric_namespace, local.metric.jobsStuck, "FunctionName", local.fn_name["sweeper"], { stat = "Maximum", label = "stuck" }],
      [local.metric_namespace, local.metric.refundsFailed, "FunctionName", local.fn_name["sweeper"], { stat = "Maximum", label = "refunds failed" }],
    ], []],
    ["Guards: ledger rows changed, audit offenders", 18, 12, 6, [
      [{ expression = local.search.ledger_changed, id = "e1" }],
      [local.metric_namespace, local.metric.auditOffenders, "FunctionName", local.fn_name["sweeper"], { stat = "Sum", label = "audit offenders" }],
    ], []],
    ["Credits purchased (by pack) vs charged (by operation)", 0, 18, 6, [
      [{ expression = local.search.purchased, id = "e1" }],
      [{ expression = local.search.charged, id = "e2" }],
    ], []],
    ["Revenue (minor units), by pack and currency", 6, 18, 6, [[{ expression = local.search.revenue, id = "e1" }]], []],
    ["Purchases reversed, signature failures", 12, 18, 6, [
      [local.metric_namespace, local.metric.paymentEvents, "FunctionName", local.fn_name["api"], "Outcome", local.metrics.values.paymentReversed, { stat = "Sum", label = "reversed" }],
      [local.metric_namespace, local.metric.paymentEvents, "FunctionName", local.fn_name["api"], "Outcome", local.metrics.values.paymentSignatureInvalid, { stat = "Sum", label = "signature invalid" }],
    ], []],
    # Each source's alarm has its own threshold (alarms.tf); this shows which one fired.
    ["Verification failures, by source", 18, 18, 6, [[{ expression = local.search.verification, id = "e1" }]], []],
  ]
}

resource "aws_cloudwatch_dashboard" "main" {
  dashboard_name = var.name_prefix
  dashboard_body = jsonencode({
    widgets = [
      for w in local.widgets : {
        type   = "metric"
        x      = w[1]
        y      = w[2]
        width  = w[3]
        height = 6
        properties = {
          title       = w[0]
          region      = local.region
          view        = "timeSeries"
          stacked     = false
          period      = 300
          metrics     = w[4]
          annotations = { horizontal = w[5] }
        }
      }
    ]
  })
}
