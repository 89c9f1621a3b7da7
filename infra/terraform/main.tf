# Atelier on AWS, the same system as the CDK app beside this module (README.md here; the
# repository's infra/README.md for both). Tables come from the code's schema and the functions'
# environment from the code's list of variables: schema.json and env-names.json in this folder
# are copies of `atelier-admin schema` / `env-names` (and cors.json of `atelier-admin cors`) that `cargo xtask infra-schema` writes and
# `cargo xtask infra-test` keeps equal to the code (one source for both IaC flavours). The
# module reads no file outside its folder, so it works from a registry or a git source.

locals {
  # Every metric name the code emits (atelier-admin metrics, committed as metrics.json).
  metrics          = jsondecode(file("${path.module}/metrics.json"))
  metric           = local.metrics.names
  metric_namespace = local.metrics.namespace
  schema_file      = coalesce(var.schema_file, "${path.module}/schema.json")
  env_names_file   = coalesce(var.env_names_file, "${path.module}/env-names.json")
  schema           = { for t in jsondecode(file(local.schema_file)) : t.logical => t }
  env_names        = jsondecode(file(local.env_names_file))
  # What a browser may send to the API and the bucket (`atelier-admin cors`, shared/src/adapters/cors.rs);
  # the origins are `web_origins`.
  cors = jsondecode(file("${path.module}/cors.json"))

  functions = {
    api      = { package = "atelier-api", memory = 512, timeout = 29, description = "HTTP API: validate, debit, insert, enqueue, 202" }
    consumer = { package = "atelier-consumer", memory = 1024, timeout = local.consumer_timeout, description = "Job consumer: claim, check, reserve, edit, review, deliver" }
    sweeper  = { package = "atelier-sweeper", memory = 256, timeout = 60, description = "Sweeper: re-enqueue, fail and refund the stuck, settle orphans" }
  }
  # The queue's visibility timeout is six times the consumer's; the sweeper calls a job stuck
  # after 15 minutes, longer than the consumer can run (docs/design.md rule 6).
  consumer_timeout  = 300
  stuck_after_secs  = 900
  max_receive_count = 5

  log_retention_days = var.production ? 90 : 14
  use_cognito        = var.jwt_issuer == null
  tags               = merge({ project = "atelier", prefix = var.name_prefix }, var.tags)
}

data "aws_region" "current" {}
data "aws_partition" "current" {}
