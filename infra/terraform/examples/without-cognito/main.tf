# Atelier behind an identity provider you already run (Auth0, Okta, Entra ID, another Cognito
# pool, ...): the HTTP API checks its JWTs and no user pool is created. No web site either:
# the app is served from your own origin, which CORS and the checkout return URLs name.
# `terraform validate` passes on this folder; to apply it, build the zips first
# (../../README.md: "The function zips") and pass their folder.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.70, < 7.0"
    }
  }
}

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy into."
  type        = string
  default     = "eu-west-1"
  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "region is an AWS region name such as eu-west-1."
  }
}

variable "dist_dir" {
  description = "Folder of the function zips: target/lambda-dist/arm64 of the Atelier repository after `cargo xtask package --arch arm64`."
  type        = string
  validation {
    condition     = length(trimspace(var.dist_dir)) > 0
    error_message = "dist_dir is the folder `cargo xtask package --arch arm64` wrote (target/lambda-dist/arm64)."
  }
}

variable "issuer" {
  description = "Your identity provider's OIDC issuer URL (the tokens' iss claim)."
  type        = string
  default     = "https://login.example.com/"
  validation {
    condition     = startswith(var.issuer, "https://")
    error_message = "issuer is an https:// URL."
  }
}

variable "audience" {
  description = "The audience (aud or client_id claim) your tokens carry for this API."
  type        = string
  default     = "atelier-api"
  validation {
    condition     = length(var.audience) > 0
    error_message = "audience must not be empty."
  }
}

variable "app_origin" {
  description = "Origin of your web app (CORS, and the prefix of checkout return URLs)."
  type        = string
  default     = "https://photos.example.com"
  validation {
    condition     = can(regex("^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?$", var.app_origin))
    error_message = "app_origin is https://host[:port], without a path or trailing slash."
  }
}

module "atelier" {
  # From a registry or git, e.g. source = "git::https://example.com/atelier.git//infra/terraform?ref=v1.2.0".
  source = "../.."

  name_prefix = "atelier-partner"
  production  = true
  arch        = "arm64"
  dist_dir    = var.dist_dir

  jwt_issuer           = var.issuer
  jwt_audience         = var.audience
  email_verified_claim = "email_verified"

  web_site             = false
  web_origins          = [var.app_origin]
  checkout_return_urls = ["${var.app_origin}/"]

  max_in_flight    = 5
  daily_cap_micros = 50000000
  tags             = { team = "photos" }
}

output "api_url" {
  description = "Base URL of the HTTP API (your app's API base URL)."
  value       = module.atelier.api_url
}

output "table_names" {
  description = "Table names for atelier-admin."
  value       = module.atelier.table_names
}

output "alarm_topic_arn" {
  description = "Subscribe your on-call tooling here."
  value       = module.atelier.alarm_topic_arn
}
