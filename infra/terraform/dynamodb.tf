# One table per entry of the code's schema: keys, sparse GSIs (projection ALL), TTL where used.

resource "aws_dynamodb_table" "this" {
  #checkov:skip=CKV_AWS_119:Encrypted at rest with the AWS owned key; a customer managed key costs per month and per request and no one outside this account reads the data.
  for_each = local.schema

  name                        = "${var.name_prefix}-${each.key}"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = each.value.partition_key.name
  range_key                   = try(each.value.sort_key.name, null)
  deletion_protection_enabled = var.production
  # The ledger tamper alarm (guard.tf): keys only, the alarm names the row, never its amounts.
  stream_enabled   = contains(["ledger", "webhooks"], each.key)
  stream_view_type = contains(["ledger", "webhooks"], each.key) ? "KEYS_ONLY" : null

  dynamic "attribute" {
    # Every key attribute of the table and its indexes, once.
    for_each = {
      for k in concat(
        [each.value.partition_key],
        each.value.sort_key == null ? [] : [each.value.sort_key],
        flatten([for i in each.value.indexes : concat([i.partition_key], i.sort_key == null ? [] : [i.sort_key])]),
      ) : k.name => k.type...
    }
    content {
      name = attribute.key
      type = attribute.value[0]
    }
  }

  dynamic "global_secondary_index" {
    for_each = each.value.indexes
    content {
      name            = global_secondary_index.value.name
      hash_key        = global_secondary_index.value.partition_key.name
      range_key       = try(global_secondary_index.value.sort_key.name, null)
      projection_type = "ALL"
    }
  }

  dynamic "ttl" {
    for_each = each.value.ttl_attribute == null ? [] : [each.value.ttl_attribute]
    content {
      attribute_name = ttl.value
      enabled        = true
    }
  }

  point_in_time_recovery {
    enabled = true
  }

  tags = merge(local.tags, { "atelier:table" = each.key })
}
