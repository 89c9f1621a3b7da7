variable "name_prefix" {
  description = "Prefix of every resource name (e.g. atelier-prod)."
  type        = string
  default     = "atelier"
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name_prefix))
    error_message = "name_prefix: lower-case letters, digits and dashes, 2-31 characters."
  }
}

variable "production" {
  description = "Production: deletion protection on tables and the user pool, longer log retention."
  type        = bool
  default     = false
}

variable "arch" {
  description = "Lambda architecture; must match `cargo xtask package --arch`."
  type        = string
  default     = "x86_64"
  validation {
    condition     = contains(["x86_64", "arm64"], var.arch)
    error_message = "arch must be x86_64 or arm64."
  }
}

variable "dist_dir" {
  description = "Folder holding <function>/bootstrap.zip, as `cargo xtask package` writes it (target/lambda-dist/<arch>)."
  type        = string
}

variable "schema_file" {
  description = "The tables (output of `atelier-admin schema`). Default: infra/schema.json beside this module."
  type        = string
  default     = null
}

variable "env_names_file" {
  description = "The variables the code reads (output of `atelier-admin env-names`). Default: infra/env-names.json."
  type        = string
  default     = null
}

variable "daily_cap_micros" {
  description = "Default daily model spend cap in micro-dollars (20000000 = 20 USD, the code's default) for days the operator has not capped (atelier-admin budget set-cap overrides it); 0 refuses every paid call."
  type        = number
  default     = 20000000
  validation {
    condition     = var.daily_cap_micros >= 0 && floor(var.daily_cap_micros) == var.daily_cap_micros
    error_message = "daily_cap_micros is a non-negative integer."
  }
}

variable "user_daily_share_micros" {
  description = "Model spend one user may cause in a UTC day, refunded jobs included, in micro-dollars (3000000 = 3 USD, the code's default); past it their submits are refused (429 DAILY_LIMIT_REACHED). atelier-admin budget share overrides it per user."
  type        = number
  default     = 3000000
  validation {
    condition     = var.user_daily_share_micros >= 1 && floor(var.user_daily_share_micros) == var.user_daily_share_micros
    error_message = "user_daily_share_micros is a positive integer."
  }
}

variable "sweeper_reserved_concurrency" {
  description = "Concurrency reserved for the sweeper, so API load cannot throttle refunds (0: none, only for accounts whose concurrency limit is 10)."
  type        = number
  default     = 2
  validation {
    condition     = var.sweeper_reserved_concurrency >= 0 && var.sweeper_reserved_concurrency <= 10 && floor(var.sweeper_reserved_concurrency) == var.sweeper_reserved_concurrency
    error_message = "sweeper_reserved_concurrency is an integer between 0 and 10."
  }
}

variable "consumer_max_concurrency" {
  description = "Most consumer instances at once (SQS event source maximum concurrency; AWS minimum 2)."
  type        = number
  default     = 2
  validation {
    condition     = var.consumer_max_concurrency >= 2 && var.consumer_max_concurrency <= 50
    error_message = "consumer_max_concurrency must be between 2 and 50."
  }
}

variable "max_in_flight" {
  description = "Edits one user may have queued or processing at once."
  type        = number
  default     = 3
}

variable "jwt_issuer" {
  description = "OIDC issuer URL of the bearer tokens. null: a Cognito user pool created here."
  type        = string
  default     = null
}

variable "jwt_audience" {
  description = "Audience (aud or client_id) of the tokens; required with jwt_issuer."
  type        = string
  default     = null
}

variable "model_base_url" {
  description = "Base URL of the OpenAI-compatible model API."
  type        = string
  default     = "https://api.openai.com"
}

variable "credit_packs" {
  description = "Credit packs for sale: NAME:CREDITS:AMOUNT:CURRENCY, comma-separated, the amount in minor units (cents)."
  type        = string
  default     = "starter:50:500:usd,studio:250:2000:usd"
}

variable "checkout_return_urls" {
  description = "URL prefixes a checkout's success and cancel URLs must start with (the first is the default): your web app's origin, e.g. https://app.example.com/."
  type        = list(string)
  default     = ["http://localhost:8787/"]
}

variable "alarm_email" {
  description = "E-mail address subscribed to the alarm topic (null: none)."
  type        = string
  default     = null
}

variable "upload_retention_days" {
  description = "Days before an object under uploads/ expires. An upload is needed only until an edit is submitted: the submit copies it into the edit's own prefix under results/, kept as long as the result, so repairs never read the upload."
  type        = number
  default     = 7
}

variable "result_retention_days" {
  description = "Days before an object under results/ (delivered images, repair candidates, the inputs each edit keeps for its repairs) expires; the functions read the same value (ATELIER_RESULT_RETENTION_DAYS), so a job whose images expired says so instead of handing out a dead link."
  type        = number
  default     = 90
  validation {
    condition     = var.result_retention_days >= 1 && var.result_retention_days <= 3650 && floor(var.result_retention_days) == var.result_retention_days
    error_message = "result_retention_days must be a whole number of days in 1..3650."
  }
}

variable "upload_slots_per_day" {
  description = "ATELIER_UPLOAD_SLOTS_PER_DAY: upload slots one user may ask for per UTC day (150: 50 edits with original, mask and style reference)."
  type        = number
  default     = 150
  validation {
    condition     = var.upload_slots_per_day >= 1 && var.upload_slots_per_day <= 1000000
    error_message = "upload_slots_per_day must be in 1..1000000."
  }
}

variable "upload_bytes_per_day" {
  description = "ATELIER_UPLOAD_BYTES_PER_DAY: declared bytes of uploads one user may ask for per UTC day (default 1 GiB; at least one 20 MiB photo)."
  type        = number
  default     = 1073741824
  validation {
    condition     = var.upload_bytes_per_day >= 20971520
    error_message = "upload_bytes_per_day must be at least 20971520 (one 20 MiB photo)."
  }
}

variable "email_verified_claim" {
  description = "ATELIER_EMAIL_VERIFIED_CLAIM: the token claim saying the e-mail is verified; only such callers get the signup grant."
  type        = string
  default     = "email_verified"
  validation {
    condition     = can(regex("^[A-Za-z0-9_:.-]{1,64}$", var.email_verified_claim))
    error_message = "email_verified_claim must be a claim name (1-64 of A-Z a-z 0-9 _ : . -)."
  }
}

variable "per_ip_rate_limit" {
  description = "Requests per client IP in any 5 minutes. Set: a CloudFront distribution with a WAF rate-based rule in front of the HTTP API (WAF cannot be associated with an HTTP API; the provider must be in us-east-1). null: none."
  type        = number
  default     = null
  validation {
    condition     = var.per_ip_rate_limit == null || (coalesce(var.per_ip_rate_limit, 0) >= 10 && coalesce(var.per_ip_rate_limit, 0) <= 2000000000)
    error_message = "per_ip_rate_limit must be in 10..2000000000 (WAF's range), or null."
  }
}

variable "throttle_rate_limit" {
  description = "API steady-state requests per second."
  type        = number
  default     = 25
}

variable "throttle_burst_limit" {
  description = "API burst requests."
  type        = number
  default     = 50
}

variable "tags" {
  description = "Tags on every resource."
  type        = map(string)
  default     = {}
}

variable "outage_alarm_thresholds" {
  description = "Failure codes that mean a provider outage, and how many jobs failed with the code in 5 minutes raise the alarm."
  type        = map(number)
  default     = { EDIT_FAILED = 5, CHECK_FAILED = 5 }
  validation {
    condition     = alltrue([for code, n in var.outage_alarm_thresholds : can(regex("^[A-Z_]{1,40}$", code)) && n >= 1])
    error_message = "outage_alarm_thresholds maps failure codes (A-Z and _) to a count of at least 1."
  }
}

variable "budget_alert_percents" {
  description = "Alarms when the day's model spend (used + reserved) passes each of these percents of the cap."
  type        = list(number)
  default     = [50, 80, 95]
  validation {
    condition     = alltrue([for p in var.budget_alert_percents : p > 0 && p <= 100])
    error_message = "budget_alert_percents must be in 1..100."
  }
}

variable "web_site" {
  description = "Create the web app's site (private S3 bucket + CloudFront with security headers). false: serve the app elsewhere."
  type        = bool
  default     = true
}

variable "web_origins" {
  description = "Browser origins allowed to call the API and the storage (CORS), e.g. [\"https://app.example.com\"]. Empty: the site's CloudFront domain (http://localhost:8787 without a site)."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for o in var.web_origins : can(regex("^(https://[A-Za-z0-9.-]+(:[0-9]{1,5})?|http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?)$", o))])
    error_message = "web_origins are origins (https://host[:port], or http on the loopback): no path, no trailing slash, never *."
  }
}

variable "auth_domain_prefix" {
  description = "Prefix of the Cognito hosted UI domain (<prefix>.auth.<region>.amazoncognito.com), globally unique. null: <name_prefix>-<account id>."
  type        = string
  default     = null
}
