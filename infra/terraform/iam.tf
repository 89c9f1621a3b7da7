# Least privilege, written out per function (DynamoDB: data-grants.json). TransactWriteItems
# has no IAM action of its own: each item is authorised as its own PutItem/UpdateItem/
# ConditionCheckItem. The ledger is append-only: PutItem/GetItem/Query, never UpdateItem or DeleteItem.

locals {
  # data-grants.json: each function's item actions per table and the indexes it queries, the
  # one list the CDK construct reads too.
  data_grant_list = jsondecode(file("${path.module}/data-grants.json")).functions
  data_grants     = { for fn, tables in local.data_grant_list : fn => { for t, g in tables : t => g.actions } }
  index_grants = {
    for fn, tables in local.data_grant_list : fn => {
      for t, g in tables : t => [for i in try(g.indexes, []) : "${aws_dynamodb_table.this[t].arn}/index/${i}"] if length(try(g.indexes, [])) > 0
    }
  }
}

data "aws_iam_policy_document" "assume_lambda" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "function" {
  for_each           = local.functions
  name_prefix        = "${var.name_prefix}-${each.key}-"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = local.tags
}

data "aws_iam_policy_document" "function" {
  for_each = local.functions

  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.function[each.key].arn}:*"]
  }

  # The item actions on each table; Query alone on the indexes named (nothing else applies to one).
  dynamic "statement" {
    for_each = local.data_grants[each.key]
    content {
      actions   = statement.value
      resources = [aws_dynamodb_table.this[statement.key].arn]
    }
  }
  dynamic "statement" {
    for_each = local.index_grants[each.key]
    content {
      actions   = ["dynamodb:Query"]
      resources = statement.value
    }
  }

  # API: presign PUTs into uploads/, HEAD/GET objects; ring the doorbell. The edit's kept
  # inputs (results/{user}/{job}/inputs/) are copied by the consumer.
  dynamic "statement" {
    for_each = each.key == "api" ? [1] : []
    content {
      actions   = ["s3:PutObject"]
      resources = ["${aws_s3_bucket.assets.arn}/uploads/*"]
    }
  }
  # Deletion (an upload, an edit's images, an account) removes and lists users' objects; the
  # sweeper finishes the account deletions a processing job left pending.
  dynamic "statement" {
    for_each = contains(["api", "sweeper"], each.key) ? [1] : []
    content {
      actions   = ["s3:DeleteObject"]
      resources = ["${aws_s3_bucket.assets.arn}/uploads/*", "${aws_s3_bucket.assets.arn}/results/*"]
    }
  }
  dynamic "statement" {
    for_each = contains(["api", "sweeper"], each.key) ? [1] : []
    content {
      actions   = ["s3:ListBucket"]
      resources = [aws_s3_bucket.assets.arn]
      condition {
        test     = "StringLike"
        variable = "s3:prefix"
        values   = ["uploads/*", "results/*"]
      }
    }
  }
  dynamic "statement" {
    for_each = each.key == "api" ? [1] : []
    content {
      actions   = ["s3:GetObject"]
      resources = ["${aws_s3_bucket.assets.arn}/*"]
    }
  }
  dynamic "statement" {
    for_each = contains(["api", "sweeper"], each.key) ? [1] : []
    content {
      actions   = ["sqs:SendMessage"]
      resources = [aws_sqs_queue.jobs.arn]
    }
  }

  # API: read the Stripe keys (checkout, the webhook's signature check) and the address key
  # (the signup grant's address hashes); no other function can.
  dynamic "statement" {
    for_each = each.key == "api" ? [1] : []
    content {
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [aws_secretsmanager_secret.stripe_keys.arn, aws_secretsmanager_secret.address_key.arn, aws_secretsmanager_secret.google_play_key.arn, aws_secretsmanager_secret.apple_api_key.arn]
    }
  }

  # Sweeper: read the push credentials (it alone sends pushes).
  dynamic "statement" {
    for_each = each.key == "sweeper" ? [1] : []
    content {
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [aws_secretsmanager_secret.push_keys.arn]
    }
  }

  # Consumer: read inputs (copied uploads/ → results/…/inputs/), write results only, read the
  # provider key, receive from the queue.
  dynamic "statement" {
    for_each = each.key == "consumer" ? [1] : []
    content {
      actions   = ["s3:GetObject"]
      resources = ["${aws_s3_bucket.assets.arn}/*"]
    }
  }
  dynamic "statement" {
    for_each = each.key == "consumer" ? [1] : []
    content {
      actions   = ["s3:PutObject"]
      resources = ["${aws_s3_bucket.assets.arn}/results/*"]
    }
  }
  dynamic "statement" {
    for_each = each.key == "consumer" ? [1] : []
    content {
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [aws_secretsmanager_secret.provider_key.arn, aws_secretsmanager_secret.gemini_key.arn, aws_secretsmanager_secret.signing_key.arn]
    }
  }
  dynamic "statement" {
    for_each = each.key == "consumer" ? [1] : []
    content {
      actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"]
      resources = [aws_sqs_queue.jobs.arn]
    }
  }
}

resource "aws_iam_role_policy" "function" {
  for_each = local.functions
  name     = "least-privilege"
  role     = aws_iam_role.function[each.key].id
  policy   = data.aws_iam_policy_document.function[each.key].json
}
