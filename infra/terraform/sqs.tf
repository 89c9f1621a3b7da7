resource "aws_sqs_queue" "dead_letter" {
  name                      = "${var.name_prefix}-jobs-dlq"
  message_retention_seconds = 14 * 24 * 3600
  sqs_managed_sse_enabled   = true
  tags                      = local.tags
}

resource "aws_sqs_queue" "jobs" {
  name                       = "${var.name_prefix}-jobs"
  visibility_timeout_seconds = 6 * local.consumer_timeout
  message_retention_seconds  = 4 * 24 * 3600
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dead_letter.arn
    maxReceiveCount     = local.max_receive_count
  })
  tags = local.tags
}

data "aws_iam_policy_document" "queue_tls_only" {
  for_each = { jobs = aws_sqs_queue.jobs.arn, dead_letter = aws_sqs_queue.dead_letter.arn }
  statement {
    sid       = "TlsOnly"
    effect    = "Deny"
    actions   = ["sqs:*"]
    resources = [each.value]
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

resource "aws_sqs_queue_policy" "tls_only" {
  for_each  = { jobs = aws_sqs_queue.jobs.id, dead_letter = aws_sqs_queue.dead_letter.id }
  queue_url = each.value
  policy    = data.aws_iam_policy_document.queue_tls_only[each.key].json
}
