# The web app (../../web, built by `npm run build` to web/dist): a private bucket behind a
# CloudFront distribution that reads it through Origin Access Control. Terraform creates the
# site empty; the `web_deploy_command` output uploads a build (hashed files under assets/
# cached a year, index.html revalidated every visit) and invalidates the cache.

locals {
  web_site = var.web_site ? 1 : 0
  # The CORS origins of the API and the assets bucket: the variable, else the site's domain
  # (the local web app without a site).
  web_origins = length(var.web_origins) > 0 ? var.web_origins : (
    var.web_site ? ["https://${aws_cloudfront_distribution.web[0].domain_name}"] : ["http://localhost:8787"]
  )
  # CSP connect-src: wildcards for the API and storage, not their own hosts, because their
  # CORS names this distribution (naming them here would be a dependency cycle).
  web_connect_src = compact([
    "https://*.execute-api.${data.aws_region.current.name}.amazonaws.com",
    "https://*.s3.${data.aws_region.current.name}.amazonaws.com",
    "https://cognito-idp.${data.aws_region.current.name}.amazonaws.com",
    "https://*.auth.${data.aws_region.current.name}.amazoncognito.com",
    local.use_cognito ? "" : var.jwt_issuer,
  ])
  web_csp = join("; ", [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' blob: data: https://*.s3.${data.aws_region.current.name}.amazonaws.com",
    "connect-src 'self' ${join(" ", local.web_connect_src)}",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ])
  web_url = var.web_site ? "https://${aws_cloudfront_distribution.web[0].domain_name}/" : null
}

resource "aws_s3_bucket" "web" {
  #checkov:skip=CKV_AWS_18:The public, immutable build of the web app, read only by CloudFront (OAC); an access-log bucket would record only CloudFront fetching files.
  #checkov:skip=CKV_AWS_21:Each deploy uploads the whole build again from git; versions would keep nothing the repository does not.
  #checkov:skip=CKV_AWS_144:A static build redeployable from git in a minute; replication would add cost for nothing.
  #checkov:skip=CKV_AWS_145:SSE-S3 (AES256) at rest; the files are public by nature (the app's code).
  #checkov:skip=CKV2_AWS_61:The build is replaced whole on each deploy; nothing expires.
  #checkov:skip=CKV2_AWS_62:No consumer of object events.
  count         = local.web_site
  bucket_prefix = "${var.name_prefix}-web-"
  force_destroy = !var.production
  tags          = local.tags
}

resource "aws_s3_bucket_public_access_block" "web" {
  count                   = local.web_site
  bucket                  = aws_s3_bucket.web[0].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "web" {
  count  = local.web_site
  bucket = aws_s3_bucket.web[0].id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "web" {
  count  = local.web_site
  bucket = aws_s3_bucket.web[0].id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

data "aws_iam_policy_document" "web" {
  count = local.web_site
  statement {
    sid       = "CloudFrontReads"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.web[0].arn}/*"]
    principals {
      type        = "Service"
      identifiers = ["cloudfront.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "AWS:SourceArn"
      values   = [aws_cloudfront_distribution.web[0].arn]
    }
  }
  statement {
    sid       = "TlsOnly"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.web[0].arn, "${aws_s3_bucket.web[0].arn}/*"]
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

resource "aws_s3_bucket_policy" "web" {
  count      = local.web_site
  bucket     = aws_s3_bucket.web[0].id
  policy     = data.aws_iam_policy_document.web[0].json
  depends_on = [aws_s3_bucket_public_access_block.web]
}

resource "aws_cloudfront_origin_access_control" "web" {
  count                             = local.web_site
  name                              = "${var.name_prefix}-web"
  description                       = "Atelier web app: CloudFront reads the private bucket"
  origin_access_control_origin_type = "s3"
  signing_behavior                  = "always"
  signing_protocol                  = "sigv4"
}

data "aws_cloudfront_cache_policy" "optimized" {
  count = local.web_site
  name  = "Managed-CachingOptimized"
}

resource "aws_cloudfront_response_headers_policy" "web" {
  count   = local.web_site
  name    = "${var.name_prefix}-web-security"
  comment = "Atelier web app: CSP, HSTS, no-sniff, frame denial, referrer policy"
  security_headers_config {
    content_security_policy {
      content_security_policy = local.web_csp
      override                = true
    }
    strict_transport_security {
      access_control_max_age_sec = 31536000
      include_subdomains         = true
      preload                    = true
      override                   = true
    }
    content_type_options {
      override = true
    }
    frame_options {
      frame_option = "DENY"
      override     = true
    }
    referrer_policy {
      referrer_policy = "strict-origin-when-cross-origin"
      override        = true
    }
  }
}

resource "aws_cloudfront_distribution" "web" {
  #checkov:skip=CKV_AWS_86:Static public files; every request that matters reaches the HTTP API, whose access log has it with its IP.
  #checkov:skip=CKV_AWS_68:Static files only; the API behind the app has its own throttling and the optional per-IP WAF front.
  #checkov:skip=CKV2_AWS_47:Static files, no Java/Log4j; a WAF would bill for nothing.
  #checkov:skip=CKV_AWS_174:The default *.cloudfront.net certificate cannot set a minimum protocol; a custom domain with its own certificate sets TLS 1.2+.
  #checkov:skip=CKV2_AWS_42:The default *.cloudfront.net certificate until the operator adds a custom domain.
  #checkov:skip=CKV_AWS_310:One origin (the site bucket); a failover origin would be a second copy of a static build.
  #checkov:skip=CKV_AWS_374:No geo restriction: the product is offered worldwide.
  count               = local.web_site
  enabled             = true
  comment             = "Atelier web app"
  default_root_object = "index.html"
  price_class         = "PriceClass_100"
  http_version        = "http2and3"
  is_ipv6_enabled     = true
  tags                = local.tags

  origin {
    origin_id                = "site"
    domain_name              = aws_s3_bucket.web[0].bucket_regional_domain_name
    origin_access_control_id = aws_cloudfront_origin_access_control.web[0].id
  }

  # CachingOptimized honours each object's Cache-Control (set at upload: web_deploy_command).
  default_cache_behavior {
    target_origin_id           = "site"
    viewer_protocol_policy     = "redirect-to-https"
    allowed_methods            = ["GET", "HEAD"]
    cached_methods             = ["GET", "HEAD"]
    compress                   = true
    cache_policy_id            = data.aws_cloudfront_cache_policy.optimized[0].id
    response_headers_policy_id = aws_cloudfront_response_headers_policy.web[0].id
  }

  ordered_cache_behavior {
    path_pattern               = "assets/*"
    target_origin_id           = "site"
    viewer_protocol_policy     = "redirect-to-https"
    allowed_methods            = ["GET", "HEAD"]
    cached_methods             = ["GET", "HEAD"]
    compress                   = true
    cache_policy_id            = data.aws_cloudfront_cache_policy.optimized[0].id
    response_headers_policy_id = aws_cloudfront_response_headers_policy.web[0].id
  }

  # The app routes itself: a deep link is index.html (S3 answers 403 for a missing key).
  dynamic "custom_error_response" {
    for_each = [403, 404]
    content {
      error_code            = custom_error_response.value
      response_code         = 200
      response_page_path    = "/index.html"
      error_caching_min_ttl = 0
    }
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
