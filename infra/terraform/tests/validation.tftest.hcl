# Every variable's validation, offline: `terraform test` with a mocked AWS provider plans the
# module (no credentials, no API call) once with the defaults and good values, then once per
# variable with a bad value, which must fail that variable's validation and nothing else.
# Run by `cargo xtask infra-test`; by hand: terraform init && terraform test (in this folder).

mock_provider "aws" {
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
    }
  }
  mock_data "aws_region" {
    defaults = {
      name = "us-east-1"
    }
  }
  mock_data "aws_caller_identity" {
    defaults = {
      account_id = "123456789012"
    }
  }
}

variables {
  # Empty stand-ins for `cargo xtask package`'s zips.
  dist_dir = "tests/fixtures/lambda-dist"
}

run "plans_with_the_defaults" {
  command = plan
}

run "plans_with_good_values" {
  command = plan
  variables {
    name_prefix          = "atelier-prod"
    production           = true
    schema_file          = "schema.json"
    env_names_file       = "env-names.json"
    jwt_issuer           = "http://127.0.0.1:8811/dev-issuer"
    jwt_audience         = "atelier-local"
    alarm_email          = "oncall@example.com"
    checkout_return_urls = ["https://app.example.com/", "http://localhost:8787/"]
    web_origins          = ["https://app.example.com", "http://localhost:8787"]
    per_ip_rate_limit    = 1000
    auth_domain_prefix   = "atelier-login"
    tags                 = { team = "photos" }
    # A consumer reserving more than its event source runs, an API reservation.
    consumer_max_concurrency      = 4
    consumer_reserved_concurrency = 6
    api_reserved_concurrency      = 50
  }
}

# CORS from the code's one definition (cors.json, kept equal to `atelier-admin cors` by
# `cargo xtask infra-test`): the API's preflight answers DELETE for the privacy routes, and the
# bucket lets the same origins PUT and GET presigned URLs.
run "deploys_the_cors_rules_of_the_code" {
  command = plan
  variables {
    web_origins = ["https://app.example.com"]
  }
  assert {
    condition     = toset(aws_apigatewayv2_api.http.cors_configuration[0].allow_methods) == toset(jsondecode(file("cors.json")).api.allow_methods)
    error_message = "The API's CORS methods are not cors.json's."
  }
  assert {
    condition     = contains(aws_apigatewayv2_api.http.cors_configuration[0].allow_methods, "DELETE")
    error_message = "The API's CORS does not allow DELETE (the privacy routes)."
  }
  assert {
    condition     = toset(aws_apigatewayv2_api.http.cors_configuration[0].allow_headers) == toset(jsondecode(file("cors.json")).api.allow_headers)
    error_message = "The API's CORS request headers are not cors.json's."
  }
  assert {
    condition     = toset(aws_apigatewayv2_api.http.cors_configuration[0].expose_headers) == toset(jsondecode(file("cors.json")).api.expose_headers)
    error_message = "The API's CORS exposed headers are not cors.json's."
  }
  assert {
    condition     = aws_apigatewayv2_api.http.cors_configuration[0].max_age == jsondecode(file("cors.json")).api.max_age_secs
    error_message = "The API's CORS max age is not cors.json's."
  }
  assert {
    condition     = toset(aws_apigatewayv2_api.http.cors_configuration[0].allow_origins) == toset(["https://app.example.com"])
    error_message = "The API's CORS origins are not web_origins."
  }
  assert {
    condition = alltrue([for r in aws_s3_bucket_cors_configuration.assets.cors_rule : (
      toset(r.allowed_methods) == toset(jsondecode(file("cors.json")).bucket.allow_methods)
      && toset(r.allowed_headers) == toset(jsondecode(file("cors.json")).bucket.allow_headers)
      && toset(r.expose_headers) == toset(jsondecode(file("cors.json")).bucket.expose_headers)
      && r.max_age_seconds == jsondecode(file("cors.json")).bucket.max_age_secs
      && toset(r.allowed_origins) == toset(["https://app.example.com"])
    )])
    error_message = "The bucket's CORS rule is not cors.json's."
  }
}

# Rule 12: the API's submit and repair transactions check the user's day on the budget table
# (a ConditionCheck item, authorised as dynamodb:ConditionCheckItem on that table), and the
# API does nothing else with it.
# Verification failures (metrics.json's VerificationFailures): one alarm per Source the code
# emits, App Store data on the api, push credentials on the sweeper.
run "alarms_on_each_verification_failure_source" {
  command = plan

  assert {
    condition = toset([for k in ["app-store-transactions-refused", "app-store-notifications-refused", "push-credentials-refused-apns", "push-credentials-refused-fcm"] :
      aws_cloudwatch_metric_alarm.this[k].dimensions.Source
    ]) == toset(["app_store_transaction", "app_store_notification", "apns", "fcm"])
    error_message = "Each VerificationFailures source needs its alarm."
  }
  assert {
    condition = alltrue([for k in ["app-store-transactions-refused", "app-store-notifications-refused", "push-credentials-refused-apns", "push-credentials-refused-fcm"] :
      aws_cloudwatch_metric_alarm.this[k].metric_name == jsondecode(file("metrics.json")).names.verificationFailures
    ])
    error_message = "The verification alarms must watch VerificationFailures."
  }
  assert {
    condition     = aws_cloudwatch_metric_alarm.this["push-credentials-refused-apns"].dimensions.FunctionName == aws_lambda_function.this["sweeper"].function_name && aws_cloudwatch_metric_alarm.this["app-store-notifications-refused"].dimensions.FunctionName == aws_lambda_function.this["api"].function_name
    error_message = "Push credentials are the sweeper's, App Store data the api's."
  }
  assert {
    condition     = aws_cloudwatch_metric_alarm.this["push-credentials-refused-fcm"].threshold == 1 && aws_cloudwatch_metric_alarm.this["app-store-transactions-refused"].threshold == 10
    error_message = "One refused push pages; App Store transactions page on a run of 10."
  }
}

# The dashboard: one screen of four rows of 24 columns (15 widgets), VerificationFailures
# among them split by Source, as infra/lib/dashboard.ts draws it.
run "dashboard_shows_verification_failures_by_source" {
  command = plan

  assert {
    condition     = length(jsondecode(aws_cloudwatch_dashboard.main.dashboard_body).widgets) == 15
    error_message = "The dashboard has 15 widgets, as the CDK one."
  }
  assert {
    condition = alltrue([for y in [0, 6, 12, 18] :
      sum([for w in jsondecode(aws_cloudwatch_dashboard.main.dashboard_body).widgets : w.width if w.y == y]) == 24
    ])
    error_message = "Each of the four rows fills 24 columns."
  }
  assert {
    condition = [for w in jsondecode(aws_cloudwatch_dashboard.main.dashboard_body).widgets :
      w.properties.metrics[0][0].expression if w.properties.title == "Verification failures, by source"
    ] == ["SEARCH('{Atelier,FunctionName,Source} MetricName=\"VerificationFailures\"', 'Sum', 300)"]
    error_message = "One widget shows VerificationFailures by Source."
  }
}

run "grants_the_api_only_the_budget_check" {
  command = plan

  assert {
    condition     = local.data_grants.api.budget == ["dynamodb:ConditionCheckItem"]
    error_message = "the API needs dynamodb:ConditionCheckItem on the budget table, and nothing more"
  }
}

run "refuses_bad_name_prefix" {
  command = plan
  variables {
    name_prefix = "Atelier_Prod"
  }
  expect_failures = [var.name_prefix]
}

run "refuses_bad_production" {
  command = plan
  variables {
    production = null
  }
  expect_failures = [var.production]
}

run "refuses_bad_arch" {
  command = plan
  variables {
    arch = "aarch64"
  }
  expect_failures = [var.arch]
}

run "refuses_bad_dist_dir" {
  command = plan
  variables {
    dist_dir = "tests/fixtures/nowhere"
  }
  expect_failures = [var.dist_dir]
}

run "refuses_bad_code_s3" {
  command = plan
  variables {
    dist_dir = null
    code_s3  = { bucket = "Not_A_Bucket", key_prefix = "builds" }
  }
  expect_failures = [var.code_s3]
}

# The zips from a pipeline's bucket instead of a local folder: each function reads its own key
# under the prefix, at the pinned object version where one is given.
run "takes_the_zips_from_s3" {
  command = plan
  variables {
    dist_dir = null
    code_s3 = {
      bucket          = "artifacts-123456789012"
      key_prefix      = "atelier/1.4.0/"
      object_versions = { atelier-consumer = "3HL4kqtJlcpXroDTDmJ" }
    }
  }
  assert {
    condition     = aws_lambda_function.this["consumer"].s3_key == "atelier/1.4.0/atelier-consumer/bootstrap.zip" && aws_lambda_function.this["consumer"].s3_object_version == "3HL4kqtJlcpXroDTDmJ"
    error_message = "the consumer's code is not its key and version in code_s3"
  }
  assert {
    condition     = aws_lambda_function.this["api"].s3_bucket == "artifacts-123456789012" && aws_lambda_function.this["api"].filename == null && aws_lambda_function.this["api"].s3_object_version == null
    error_message = "the API's code must come from the bucket alone, unpinned"
  }
}

run "refuses_both_code_sources" {
  command = plan
  variables {
    code_s3 = { bucket = "artifacts-123456789012" }
  }
  expect_failures = [aws_lambda_function.this]
}

run "refuses_neither_code_source" {
  command = plan
  variables {
    dist_dir = null
  }
  expect_failures = [aws_lambda_function.this]
}

# What another module wires to: every function and role by name and ARN (the ARNs themselves
# are known only after apply).
run "outputs_the_functions_and_roles" {
  command = plan
  assert {
    condition     = keys(output.function_arns) == ["api", "consumer", "sweeper"] && keys(output.role_arns) == ["api", "consumer", "sweeper"]
    error_message = "function_arns and role_arns must name api, consumer and sweeper"
  }
  assert {
    condition     = output.function_names == { api = "atelier-api", consumer = "atelier-consumer", sweeper = "atelier-sweeper" }
    error_message = "function_names must be the deployed names"
  }
}

run "refuses_bad_schema_file" {
  command = plan
  variables {
    schema_file = "tests/fixtures/missing.json"
  }
  expect_failures = [var.schema_file]
}

run "refuses_bad_env_names_file" {
  command = plan
  variables {
    env_names_file = "variables.tf"
  }
  expect_failures = [var.env_names_file]
}

run "refuses_bad_daily_cap_micros" {
  command = plan
  variables {
    daily_cap_micros = -1
  }
  expect_failures = [var.daily_cap_micros]
}

run "refuses_bad_user_daily_share_micros" {
  command = plan
  variables {
    user_daily_share_micros = 0.5
  }
  expect_failures = [var.user_daily_share_micros]
}

run "refuses_bad_sweeper_reserved_concurrency" {
  command = plan
  variables {
    sweeper_reserved_concurrency = 11
  }
  expect_failures = [var.sweeper_reserved_concurrency]
}

run "refuses_bad_consumer_reserved_concurrency" {
  command = plan
  variables {
    consumer_reserved_concurrency = 51
  }
  expect_failures = [var.consumer_reserved_concurrency]
}

run "refuses_a_consumer_reservation_below_its_event_source" {
  command = plan
  variables {
    consumer_max_concurrency      = 4
    consumer_reserved_concurrency = 3
  }
  expect_failures = [aws_lambda_event_source_mapping.jobs]
}

run "refuses_bad_api_reserved_concurrency" {
  command = plan
  variables {
    api_reserved_concurrency = 1.5
  }
  expect_failures = [var.api_reserved_concurrency]
}

run "refuses_bad_consumer_max_concurrency" {
  command = plan
  variables {
    consumer_max_concurrency = 1
  }
  expect_failures = [var.consumer_max_concurrency]
}

run "refuses_bad_max_in_flight" {
  command = plan
  variables {
    max_in_flight = 0
  }
  expect_failures = [var.max_in_flight]
}

run "refuses_bad_jwt_issuer" {
  command = plan
  variables {
    jwt_issuer = "http://issuer.example.com/"
  }
  expect_failures = [var.jwt_issuer]
}

run "refuses_bad_jwt_audience" {
  command = plan
  variables {
    jwt_audience = "two words"
  }
  expect_failures = [var.jwt_audience]
}

run "refuses_bad_model_base_url" {
  command = plan
  variables {
    model_base_url = "api.openai.com"
  }
  expect_failures = [var.model_base_url]
}

run "sells_packs_in_the_app_store_when_configured" {
  command = plan
  variables {
    credit_packs       = "starter:50:500:usd:com.example.starter,studio:250:2000:usd"
    apple_root_certs   = "MIIB"
    apple_bundle_id    = "com.example.photos"
    apple_environment  = "Sandbox"
    apple_app_apple_id = 1234567890
  }
  assert {
    condition     = local.function_env["ATELIER_APPLE_BUNDLE_ID"] == "com.example.photos" && local.function_env["ATELIER_APPLE_APP_APPLE_ID"] == "1234567890"
    error_message = "the App Store settings reach the functions"
  }
}

run "refuses_a_bad_apple_environment" {
  command = plan
  variables {
    apple_environment = "Xcode"
  }
  expect_failures = [var.apple_environment]
}

run "refuses_a_bad_apple_bundle_id_and_app_id" {
  command = plan
  variables {
    apple_bundle_id    = "com example/photos"
    apple_app_apple_id = -1
  }
  expect_failures = [var.apple_bundle_id, var.apple_app_apple_id]
}

run "refuses_bad_credit_packs" {
  command = plan
  variables {
    credit_packs = "starter:fifty:500:usd"
  }
  expect_failures = [var.credit_packs]
}

run "refuses_bad_checkout_return_urls" {
  command = plan
  variables {
    checkout_return_urls = []
  }
  expect_failures = [var.checkout_return_urls]
}

run "refuses_bad_alarm_email" {
  command = plan
  variables {
    alarm_email = "oncall at example.com"
  }
  expect_failures = [var.alarm_email]
}

run "refuses_bad_upload_retention_days" {
  command = plan
  variables {
    upload_retention_days = 0
  }
  expect_failures = [var.upload_retention_days]
}

run "refuses_bad_result_retention_days" {
  command = plan
  variables {
    result_retention_days = 3651
  }
  expect_failures = [var.result_retention_days]
}

run "refuses_bad_upload_slots_per_day" {
  command = plan
  variables {
    upload_slots_per_day = 1.5
  }
  expect_failures = [var.upload_slots_per_day]
}

run "refuses_bad_upload_bytes_per_day" {
  command = plan
  variables {
    upload_bytes_per_day = 1048576
  }
  expect_failures = [var.upload_bytes_per_day]
}

run "refuses_bad_email_verified_claim" {
  command = plan
  variables {
    email_verified_claim = "email verified"
  }
  expect_failures = [var.email_verified_claim]
}

run "refuses_bad_per_ip_rate_limit" {
  command = plan
  variables {
    per_ip_rate_limit = 5
  }
  expect_failures = [var.per_ip_rate_limit]
}

run "refuses_bad_throttle_rate_limit" {
  command = plan
  variables {
    throttle_rate_limit = 0
  }
  expect_failures = [var.throttle_rate_limit]
}

run "refuses_bad_throttle_burst_limit" {
  command = plan
  variables {
    throttle_burst_limit = 5001
  }
  expect_failures = [var.throttle_burst_limit]
}

run "refuses_bad_tags" {
  command = plan
  variables {
    tags = { "aws:owner" = "me" }
  }
  expect_failures = [var.tags]
}

run "refuses_bad_outage_alarm_thresholds" {
  command = plan
  variables {
    outage_alarm_thresholds = { edit_failed = 5 }
  }
  expect_failures = [var.outage_alarm_thresholds]
}

run "refuses_bad_reversal_alarm_per_hour" {
  command = plan
  variables {
    reversal_alarm_per_hour = 0
  }
  expect_failures = [var.reversal_alarm_per_hour]
}

run "refuses_bad_budget_alert_percents" {
  command = plan
  variables {
    budget_alert_percents = [50, 150]
  }
  expect_failures = [var.budget_alert_percents]
}

run "refuses_bad_web_site" {
  command = plan
  variables {
    web_site = null
  }
  expect_failures = [var.web_site]
}

run "refuses_bad_web_origins" {
  command = plan
  variables {
    web_origins = ["https://app.example.com/"]
  }
  expect_failures = [var.web_origins]
}

run "refuses_bad_auth_domain_prefix" {
  command = plan
  variables {
    auth_domain_prefix = "my-cognito-login"
  }
  expect_failures = [var.auth_domain_prefix]
}

run "plans_with_each_current_model" {
  command = plan
  variables {
    image_model  = "gpt-image-2.5-flare"
    vision_model = "gpt-5.4-mini"
  }
}

run "refuses_an_image_model_past_its_shutdown" {
  command = plan
  variables {
    image_model = "gpt-image-1"
  }
  expect_failures = [var.image_model]
}

run "refuses_an_unknown_image_model" {
  command = plan
  variables {
    image_model = "gpt-image-9"
  }
  expect_failures = [var.image_model]
}

run "refuses_a_vision_model_for_edits" {
  command = plan
  variables {
    image_model = "gpt-5.4-mini"
  }
  expect_failures = [var.image_model]
}

run "refuses_an_edit_model_for_vision" {
  command = plan
  variables {
    vision_model = "gpt-image-2.5-sunburst"
  }
  expect_failures = [var.vision_model]
}
