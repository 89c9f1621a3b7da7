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
  description = "Days before an object under uploads/ expires."
  type        = number
  default     = 30
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
