# Atelier with its own Cognito user pool (the default issuer): sign-up, e-mail verification
# and the hosted UI come with the module. `terraform validate` passes on this folder; to apply
# it, build the zips first (../../README.md: "The function zips") and pass their folder.

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
  description = "Folder of the function zips: target/lambda-dist/x86_64 of the Atelier repository after `cargo xtask package`."
  type        = string
  validation {
    condition     = length(trimspace(var.dist_dir)) > 0
    error_message = "dist_dir is the folder `cargo xtask package` wrote (target/lambda-dist/x86_64)."
  }
}

variable "alarm_email" {
  description = "Who receives the alarms (null: nobody yet; subscribe to the alarm topic later)."
  type        = string
  default     = null
  validation {
    condition     = var.alarm_email == null || can(regex("^[^\\s@,]+@[^\\s@,]+\\.[^\\s@,]+$", coalesce(var.alarm_email, "-")))
    error_message = "alarm_email must be one e-mail address, or null."
  }
}

module "atelier" {
  # From a registry or git, e.g. source = "git::https://example.com/atelier.git//infra/terraform?ref=v1.2.0".
  source = "../.."

  name_prefix = "atelier-demo"
  dist_dir    = var.dist_dir
  alarm_email = var.alarm_email
  # jwt_issuer unset: the module creates the user pool, its app client and hosted UI domain.
  auth_domain_prefix   = "atelier-demo-login"
  checkout_return_urls = ["http://localhost:8787/"]
}

output "api_url" {
  description = "Base URL of the HTTP API."
  value       = module.atelier.api_url
}

output "user_pool_id" {
  description = "The Cognito user pool the module created."
  value       = module.atelier.user_pool_id
}

output "web_oidc_client_id" {
  description = "VITE_OIDC_CLIENT_ID for the web build (the Cognito app client)."
  value       = module.atelier.web_oidc_client_id
}

output "provider_key_secret_arn" {
  description = "Store the model provider's key here after apply (put-secret-value)."
  value       = module.atelier.provider_key_secret_arn
}
