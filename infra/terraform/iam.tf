# Least privilege, written out per function. TransactWriteItems has no IAM action of its own:
# each item is authorised as its own PutItem/UpdateItem/ConditionCheckItem. The ledger is
# append-only: PutItem/GetItem/Query, never UpdateItem or DeleteItem.

locals {
  item_write_read = ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem"]
  ledger_actions  = ["dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:Query"]

  # Table ARN plus each index by name (Query on an index needs the index ARN).
  table_resources = {
    for name, t in local.schema : name => concat(
      [aws_dynamodb_table.this[name].arn],
      [for i in t.indexes : "${aws_dynamodb_table.this[name].arn}/index/${i.name}"],
    )
  }

  data_grants = {
    # quotas: the upload counters, one conditional UpdateItem per slot, and the devices
    # registered for push (a Put or Delete in a transaction with the count's Update, listed by
    # Query; the sweeper lists and removes them for an account's deletion). budget: the user's daily
    # share, a ConditionCheck item in the submit and repair transactions (rule 12). signups: the
    # address claim, a conditional Put in the signup grant's transaction; never read or deleted.
    api      = { accounts = local.item_write_read, jobs = local.item_write_read, ledger = local.ledger_actions, quotas = ["dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query"], payments = local.item_write_read, budget = ["dynamodb:ConditionCheckItem"], signups = ["dynamodb:PutItem"] }
    consumer = { accounts = local.item_write_read, jobs = local.item_write_read, ledger = local.ledger_actions, budget = local.item_write_read, attempts = local.item_write_read }
    sweeper  = { accounts = local.item_write_read, jobs = local.item_write_read, ledger = local.ledger_actions, budget = local.item_write_read, attempts = local.item_write_read, quotas = ["dynamodb:Query", "dynamodb:DeleteItem", "dynamodb:UpdateItem"] }
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

  # The indexes only with Query: no other item action reaches an index.
  dynamic "statement" {
    for_each = local.data_grants[each.key]
    content {
      actions   = statement.value
      resources = contains(statement.value, "dynamodb:Query") ? local.table_resources[statement.key] : [aws_dynamodb_table.this[statement.key].arn]
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
      actions   = ["sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"]
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

  # Consumer: read inputs, write results, read the provider key, receive from the queue.
  dynamic "statement" {
    for_each = each.key == "consumer" ? [1] : []
    content {
      actions   = ["s3:GetObject", "s3:PutObject"]
      resources = ["${aws_s3_bucket.assets.arn}/*"]
    }
  }
  dynamic "statement" {
    for_each = each.key == "consumer" ? [1] : []
    content {
      actions   = ["secretsmanager:GetSecretValue"]
      resources = [aws_secretsmanager_secret.provider_key.arn, aws_secretsmanager_secret.gemini_key.arn]
    }
  }
  dynamic "statement" {
    for_each = each.key == "consumer" ? [1] : []
    content {
      actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"]
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
