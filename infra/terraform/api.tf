# HTTP API with a JWT authorizer (the stack's Cognito pool unless jwt_issuer is given).

resource "aws_cognito_user_pool" "users" {
  count                    = local.use_cognito ? 1 : 0
  name                     = "${var.name_prefix}-users"
  username_attributes      = ["email"]
  auto_verified_attributes = ["email"]
  mfa_configuration        = "OPTIONAL"
  deletion_protection      = var.production ? "ACTIVE" : "INACTIVE"

  # A changed address is verified before it replaces the verified one, so email_verified
  # (which decides the signup grant) is never true for an unconfirmed address.
  user_attribute_update_settings {
    attributes_require_verification_before_update = ["email"]
  }

  software_token_mfa_configuration {
    enabled = true
  }

  password_policy {
    minimum_length    = 12
    require_lowercase = true
    require_uppercase = true
    require_numbers   = true
    require_symbols   = true
  }

  account_recovery_setting {
    recovery_mechanism {
      name     = "verified_email"
      priority = 1
    }
  }

  tags = local.tags
}

resource "aws_cognito_user_pool_client" "app" {
  count                         = local.use_cognito ? 1 : 0
  name                          = "${var.name_prefix}-app"
  user_pool_id                  = aws_cognito_user_pool.users[0].id
  generate_secret               = false
  explicit_auth_flows           = ["ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]
  prevent_user_existence_errors = "ENABLED"
  # The hosted UI: authorization code + PKCE back to the web app (no client secret).
  allowed_oauth_flows_user_pool_client = true
  allowed_oauth_flows                  = ["code"]
  allowed_oauth_scopes                 = ["openid", "email"]
  supported_identity_providers         = ["COGNITO"]
  callback_urls                        = ["${local.web_origins[0]}/"]
  logout_urls                          = ["${local.web_origins[0]}/"]
}

data "aws_caller_identity" "current" {}

resource "aws_cognito_user_pool_domain" "hosted_ui" {
  count        = local.use_cognito ? 1 : 0
  domain       = coalesce(var.auth_domain_prefix, "${var.name_prefix}-${data.aws_caller_identity.current.account_id}")
  user_pool_id = aws_cognito_user_pool.users[0].id
}

locals {
  jwt_issuer   = local.use_cognito ? "https://cognito-idp.${data.aws_region.current.name}.amazonaws.com/${aws_cognito_user_pool.users[0].id}" : var.jwt_issuer
  jwt_audience = local.use_cognito ? aws_cognito_user_pool_client.app[0].id : var.jwt_audience
  # Public by design: health, style catalogue, OpenAPI document. Everything else needs a JWT.
  public_routes = ["GET /healthz", "GET /v1/styles", "GET /v1/openapi.json", "GET /v1/packs"]
  # Called by Stripe and the App Store, which have no JWT: the function verifies the
  # Stripe-Signature, or Apple's signed payload (ES256, x5c chain to Apple's root), instead.
  signed_webhook_routes = ["POST /v1/webhooks/stripe", "POST /v1/webhooks/apple", "POST /v1/webhooks/google"]
}

resource "aws_apigatewayv2_api" "http" {
  name          = "${var.name_prefix}-api"
  protocol_type = "HTTP"
  tags          = local.tags

  # API Gateway answers preflights itself (before the JWT authorizer).
  cors_configuration {
    allow_origins     = local.web_origins
    allow_methods     = local.cors.api.allow_methods
    allow_headers     = local.cors.api.allow_headers
    expose_headers    = local.cors.api.expose_headers
    allow_credentials = false
    max_age           = local.cors.api.max_age_secs
  }

  lifecycle {
    precondition {
      condition     = local.use_cognito || var.jwt_audience != null
      error_message = "jwt_audience is required when jwt_issuer is set."
    }
  }
}

resource "aws_apigatewayv2_authorizer" "jwt" {
  api_id           = aws_apigatewayv2_api.http.id
  name             = "jwt"
  authorizer_type  = "JWT"
  identity_sources = ["$request.header.Authorization"]
  jwt_configuration {
    issuer   = local.jwt_issuer
    audience = [local.jwt_audience]
  }
}

resource "aws_apigatewayv2_integration" "api" {
  api_id                 = aws_apigatewayv2_api.http.id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.this["api"].invoke_arn
  payload_format_version = "2.0"
}

resource "aws_apigatewayv2_route" "authorized" {
  api_id             = aws_apigatewayv2_api.http.id
  route_key          = "ANY /{proxy+}"
  target             = "integrations/${aws_apigatewayv2_integration.api.id}"
  authorization_type = "JWT"
  authorizer_id      = aws_apigatewayv2_authorizer.jwt.id
}

resource "aws_apigatewayv2_route" "public" {
  #checkov:skip=CKV_AWS_309:Public by design (health, style catalogue, OpenAPI document, credit packs; the Stripe and App Store webhooks, which verify the caller's signature of every request); every other route is ANY /{proxy+} with the JWT authorizer.
  for_each           = toset(concat(local.public_routes, local.signed_webhook_routes))
  api_id             = aws_apigatewayv2_api.http.id
  route_key          = each.value
  target             = "integrations/${aws_apigatewayv2_integration.api.id}"
  authorization_type = "NONE"
}

resource "aws_cloudwatch_log_group" "api_access" {
  #checkov:skip=CKV_AWS_158:Access logs carry request ids, routes, statuses and the caller's sub, no secrets; the CloudWatch default encryption suffices.
  #checkov:skip=CKV_AWS_338:Retention is 14 days (90 in production) to keep cost at rest near zero.
  name              = "/aws/apigateway/${var.name_prefix}-api"
  retention_in_days = local.log_retention_days
  tags              = local.tags
}

resource "aws_apigatewayv2_stage" "default" {
  api_id      = aws_apigatewayv2_api.http.id
  name        = "$default"
  auto_deploy = true

  default_route_settings {
    throttling_rate_limit  = var.throttle_rate_limit
    throttling_burst_limit = var.throttle_burst_limit
  }

  access_log_settings {
    destination_arn = aws_cloudwatch_log_group.api_access.arn
    format = jsonencode({
      requestId            = "$context.requestId"
      time                 = "$context.requestTime"
      ip                   = "$context.identity.sourceIp"
      method               = "$context.httpMethod"
      route                = "$context.routeKey"
      status               = "$context.status"
      latencyMs            = "$context.responseLatency"
      integrationLatencyMs = "$context.integrationLatency"
      responseLength       = "$context.responseLength"
      user                 = "$context.authorizer.claims.sub"
      authorizerError      = "$context.authorizer.error"
      integrationError     = "$context.integrationErrorMessage"
    })
  }

  tags = local.tags
}

resource "aws_lambda_permission" "api" {
  statement_id  = "AllowApiGateway"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.this["api"].function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/*/*"
}
