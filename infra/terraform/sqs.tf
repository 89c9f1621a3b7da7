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

# Webhook deliveries: one message per (event, endpoint) attempt, consumed by the sweeper.
resource "aws_sqs_queue" "webhooks_dead_letter" {
  name                      = "${var.name_prefix}-webhooks-dlq"
  message_retention_seconds = 14 * 24 * 3600
  sqs_managed_sse_enabled   = true
  tags                      = local.tags
}

resource "aws_sqs_queue" "webhooks" {
  name = "${var.name_prefix}-webhooks"
  # At least the sweeper's timeout (a batch of POSTs of 15 s each, made at once).
  visibility_timeout_seconds = 120
  message_retention_seconds  = 4 * 24 * 3600
  sqs_managed_sse_enabled    = true
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.webhooks_dead_letter.arn
    maxReceiveCount     = local.max_receive_count
  })
  tags = local.tags
}

locals {
  queue_arns = {
    jobs                 = aws_sqs_queue.jobs.arn
    dead_letter          = aws_sqs_queue.dead_letter.arn
    webhooks             = aws_sqs_queue.webhooks.arn
    webhooks_dead_letter = aws_sqs_queue.webhooks_dead_letter.arn
  }
  queue_ids = {
    jobs                 = aws_sqs_queue.jobs.id
    dead_letter          = aws_sqs_queue.dead_letter.id
    webhooks             = aws_sqs_queue.webhooks.id
    webhooks_dead_letter = aws_sqs_queue.webhooks_dead_letter.id
  }
}

data "aws_iam_policy_document" "queue_tls_only" {
  for_each = local.queue_arns
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
  for_each  = local.queue_ids
  queue_url = each.value
  policy    = data.aws_iam_policy_document.queue_tls_only[each.key].json
}
