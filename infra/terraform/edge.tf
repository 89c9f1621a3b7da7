# Optional per-IP limits in front of the API (var.per_ip_rate_limit). AWS WAF cannot be
# associated with an API Gateway HTTP API (only REST APIs, CloudFront, ALB, AppSync, ...), so
# a CloudFront distribution forwards every request to the HTTP API uncached and a
# CloudFront-scoped web ACL blocks an IP past the limit. CloudFront-scoped WAF lives in
# us-east-1: the provider must be there. The HTTP API's own URL stays reachable; the limit
# binds clients of the published `api_cdn_url`, stage throttling still bounds the rest.

locals {
  per_ip_front = var.per_ip_rate_limit == null ? 0 : 1
}

resource "aws_wafv2_web_acl" "per_ip" {
  #checkov:skip=CKV2_AWS_31:WAF logging needs a Firehose or a log group named aws-waf-logs-*; sampled requests and CloudWatch metrics show what was blocked.
  #checkov:skip=CKV_AWS_192:The API takes JSON and presigns uploads; no Java/Log4j anywhere, the Log4j managed rule group would bill for nothing.
  count       = local.per_ip_front
  name        = "${var.name_prefix}-per-ip"
  description = "Atelier: at most ${coalesce(var.per_ip_rate_limit, 0)} requests per client IP in 5 minutes"
  scope       = "CLOUDFRONT"
  tags        = local.tags

  default_action {
    allow {}
  }

  rule {
    name     = "per-ip-rate"
    priority = 0
    action {
      block {}
    }
    statement {
      rate_based_statement {
        limit                 = var.per_ip_rate_limit
        aggregate_key_type    = "IP"
        evaluation_window_sec = 300
      }
    }
    visibility_config {
      cloudwatch_metrics_enabled = true
      metric_name                = "AtelierPerIpRate"
      sampled_requests_enabled   = true
    }
  }

  visibility_config {
    cloudwatch_metrics_enabled = true
    metric_name                = "AtelierPerIp"
    sampled_requests_enabled   = true
  }

  lifecycle {
    precondition {
      condition     = data.aws_region.current.name == "us-east-1"
      error_message = "per_ip_rate_limit needs the provider in us-east-1 (CloudFront-scoped WAF is created there)."
    }
  }
}

data "aws_cloudfront_cache_policy" "disabled" {
  count = local.per_ip_front
  name  = "Managed-CachingDisabled"
}

data "aws_cloudfront_origin_request_policy" "all_viewer_except_host" {
  count = local.per_ip_front
  name  = "Managed-AllViewerExceptHostHeader"
}

resource "aws_cloudfront_distribution" "api" {
  #checkov:skip=CKV_AWS_86:The HTTP API writes an access log per request, client IP included; WAF samples blocked requests.
  #checkov:skip=CKV_AWS_174:The default *.cloudfront.net certificate cannot set a minimum protocol; a custom domain with its own certificate sets TLS 1.2+.
  #checkov:skip=CKV2_AWS_42:The default *.cloudfront.net certificate until the operator adds a custom domain.
  #checkov:skip=CKV_AWS_310:One origin (the HTTP API); a failover origin would be a second deployment.
  #checkov:skip=CKV_AWS_305:An API, not a website: there is no root object.
  #checkov:skip=CKV2_AWS_32:JSON API responses; the API sets its own headers, no browser pages to protect.
  #checkov:skip=CKV2_AWS_47:No Java/Log4j behind it; the Log4j managed rule group would bill for nothing.
  #checkov:skip=CKV_AWS_374:No geo restriction: the product is offered worldwide.
  count           = local.per_ip_front
  enabled         = true
  comment         = "Atelier API behind per-IP rate limits (WAF)"
  price_class     = "PriceClass_100"
  web_acl_id      = aws_wafv2_web_acl.per_ip[0].arn
  is_ipv6_enabled = true
  tags            = local.tags

  origin {
    origin_id   = "http-api"
    domain_name = replace(aws_apigatewayv2_api.http.api_endpoint, "https://", "")
    custom_origin_config {
      http_port              = 80
      https_port             = 443
      origin_protocol_policy = "https-only"
      origin_ssl_protocols   = ["TLSv1.2"]
    }
  }

  default_cache_behavior {
    target_origin_id         = "http-api"
    viewer_protocol_policy   = "https-only"
    allowed_methods          = ["GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"]
    cached_methods           = ["GET", "HEAD"]
    cache_policy_id          = data.aws_cloudfront_cache_policy.disabled[0].id
    origin_request_policy_id = data.aws_cloudfront_origin_request_policy.all_viewer_except_host[0].id
  }

  restrictions {
    geo_restriction {
      restriction_type = "none"
    }
  }

  viewer_certificate {
    cloudfront_default_certificate = true
  }
}
