# The private bucket of uploads and results. Clients reach objects only through presigned URLs.

resource "aws_s3_bucket" "assets" {
  #checkov:skip=CKV_AWS_18:Objects are reached only through presigned URLs the API issues and logs (upload_presigned); access logs would need a second bucket and add no who-asked-for-what.
  #checkov:skip=CKV_AWS_21:Objects are written once under unique keys (asset and job ids) and never overwritten; versioning would only keep what the lifecycle rules are meant to delete.
  #checkov:skip=CKV_AWS_144:Cross-region replication doubles storage for derived, per-user images; not worth it at this stage (documented in ../README.md).
  #checkov:skip=CKV_AWS_145:SSE-S3 (AES256) encryption at rest; a KMS key would add per-request cost to every presigned GET/PUT.
  #checkov:skip=CKV2_AWS_62:No consumer of object events: jobs are created through the API, which checks the upload exists.
  bucket_prefix = "${var.name_prefix}-assets-"
  force_destroy = !var.production
  tags          = local.tags
}

resource "aws_s3_bucket_public_access_block" "assets" {
  bucket                  = aws_s3_bucket.assets.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_ownership_controls" "assets" {
  bucket = aws_s3_bucket.assets.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "assets" {
  bucket = aws_s3_bucket.assets.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "assets" {
  bucket = aws_s3_bucket.assets.id

  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"
    filter {}
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }

  rule {
    id     = "expire-abandoned-uploads"
    status = "Enabled"
    filter {
      prefix = "uploads/"
    }
    expiration {
      days = var.upload_retention_days
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }

  # Delivered images and repair candidates (results/{user}/{job}/…).
  rule {
    id     = "expire-results"
    status = "Enabled"
    filter {
      prefix = "results/"
    }
    expiration {
      days = var.result_retention_days
    }
  }
}

resource "aws_s3_bucket_cors_configuration" "assets" {
  bucket = aws_s3_bucket.assets.id
  cors_rule {
    # The browser PUTs uploads and GETs results on presigned URLs; the signature (length and
    # type included) is the credential, CORS only decides which pages may read the answer.
    allowed_methods = local.cors.bucket.allow_methods
    allowed_origins = local.web_origins
    allowed_headers = local.cors.bucket.allow_headers
    expose_headers  = local.cors.bucket.expose_headers
    max_age_seconds = local.cors.bucket.max_age_secs
  }
}

data "aws_iam_policy_document" "assets_tls_only" {
  statement {
    sid       = "TlsOnly"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.assets.arn, "${aws_s3_bucket.assets.arn}/*"]
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

resource "aws_s3_bucket_policy" "assets" {
  bucket     = aws_s3_bucket.assets.id
  policy     = data.aws_iam_policy_document.assets_tls_only.json
  depends_on = [aws_s3_bucket_public_access_block.assets]
}
