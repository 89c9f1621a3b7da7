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
  validation {
    condition     = var.production != null
    error_message = "production is true or false, not null."
  }
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
  description = "Folder holding atelier-api/bootstrap.zip, atelier-consumer/bootstrap.zip and atelier-sweeper/bootstrap.zip, as `cargo xtask package` writes them (<repository>/target/lambda-dist/<arch>; README.md: \"The function zips\"). null: code_s3 gives the zips."
  type        = string
  default     = null
  validation {
    condition = var.dist_dir == null || alltrue([
      for package in ["atelier-api", "atelier-consumer", "atelier-sweeper"] :
      try(fileexists("${var.dist_dir}/${package}/bootstrap.zip"), false)
    ])
    error_message = "dist_dir must hold <function>/bootstrap.zip for atelier-api, atelier-consumer and atelier-sweeper: run `cargo xtask package` (with --arch arm64 for arch = \"arm64\") in the Atelier repository and pass its target/lambda-dist/<arch>."
  }
}

variable "code_s3" {
  description = "The zips in S3 instead of dist_dir (a pipeline's artifact bucket, in the deployment's region): <key_prefix><function>/bootstrap.zip for atelier-api, atelier-consumer and atelier-sweeper, the layout of `cargo xtask package`. object_versions (by function package name) pins each zip's version in a versioned bucket, so a new upload under the same key is deployed by the next apply. null: dist_dir."
  type = object({
    bucket          = string
    key_prefix      = optional(string, "")
    object_versions = optional(map(string), {})
  })
  default = null
  validation {
    condition = var.code_s3 == null || try(
      can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.code_s3.bucket))
      && (var.code_s3.key_prefix == "" || endswith(var.code_s3.key_prefix, "/"))
      && alltrue([for k in keys(var.code_s3.object_versions) : contains(["atelier-api", "atelier-consumer", "atelier-sweeper"], k)]),
      false
    )
    error_message = "code_s3 needs a valid bucket name, a key_prefix that is empty or ends with \"/\", and object_versions keyed by atelier-api, atelier-consumer or atelier-sweeper."
  }
}

variable "schema_file" {
  description = "The tables, as `atelier-admin schema` prints them for the code you deploy. null: schema.json in this module (the copy of its release)."
  type        = string
  default     = null
  validation {
    condition     = var.schema_file == null || (endswith(coalesce(var.schema_file, "-"), ".json") && try(fileexists(var.schema_file), false))
    error_message = "schema_file must be an existing .json file (the output of `atelier-admin schema`), or null."
  }
}

variable "env_names_file" {
  description = "The environment variables the code reads, as `atelier-admin env-names` prints them for the code you deploy. null: env-names.json in this module (the copy of its release)."
  type        = string
  default     = null
  validation {
    condition     = var.env_names_file == null || (endswith(coalesce(var.env_names_file, "-"), ".json") && try(fileexists(var.env_names_file), false))
    error_message = "env_names_file must be an existing .json file (the output of `atelier-admin env-names`), or null."
  }
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
  description = "Concurrency reserved for the sweeper, so API load cannot throttle refunds; the webhook delivery queue takes up to 8 of it (0: none, only for accounts whose concurrency limit is 10)."
  type        = number
  default     = 10
  validation {
    condition     = var.sweeper_reserved_concurrency >= 0 && var.sweeper_reserved_concurrency <= 10 && floor(var.sweeper_reserved_concurrency) == var.sweeper_reserved_concurrency
    error_message = "sweeper_reserved_concurrency is an integer between 0 and 10."
  }
}

variable "consumer_reserved_concurrency" {
  description = "Concurrency reserved for the consumer, so API load (long-polls included) cannot throttle paid jobs: 0 (none, only for accounts whose concurrency limit is 10) or at least consumer_max_concurrency. null: consumer_max_concurrency."
  type        = number
  default     = null
  validation {
    condition     = var.consumer_reserved_concurrency == null || try(var.consumer_reserved_concurrency >= 0 && var.consumer_reserved_concurrency <= 50 && floor(var.consumer_reserved_concurrency) == var.consumer_reserved_concurrency, false)
    error_message = "consumer_reserved_concurrency is null or an integer between 0 and 50."
  }
}

variable "api_reserved_concurrency" {
  description = "Concurrency reserved for the API, which is also the most API instances at once (0: none; the API shares the account's unreserved pool, bounded by stage throttling)."
  type        = number
  default     = 0
  validation {
    condition     = var.api_reserved_concurrency >= 0 && var.api_reserved_concurrency <= 1000 && floor(var.api_reserved_concurrency) == var.api_reserved_concurrency
    error_message = "api_reserved_concurrency is an integer between 0 and 1000."
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
  validation {
    condition     = var.max_in_flight >= 1 && var.max_in_flight <= 100 && floor(var.max_in_flight) == var.max_in_flight
    error_message = "max_in_flight must be an integer in 1..100."
  }
}

variable "jwt_issuer" {
  description = "OIDC issuer URL of the bearer tokens (https://..., or http on the loopback for a local cloud). null: a Cognito user pool created here."
  type        = string
  default     = null
  validation {
    condition     = var.jwt_issuer == null || can(regex("^https://\\S+$|^http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?(/\\S*)?$", coalesce(var.jwt_issuer, "-")))
    error_message = "jwt_issuer must be an https:// URL (or http://127.0.0.1 / http://localhost), or null for the module's own Cognito user pool."
  }
}

variable "jwt_audience" {
  description = "Audience (aud or client_id claim) the tokens must carry; required with jwt_issuer, ignored without it."
  type        = string
  default     = null
  validation {
    condition     = var.jwt_audience == null || can(regex("^\\S{1,256}$", coalesce(var.jwt_audience, "-")))
    error_message = "jwt_audience is 1-256 characters without spaces, or null."
  }
}

variable "model_base_url" {
  description = "Base URL of the OpenAI-compatible model API."
  type        = string
  default     = "https://api.openai.com"
  validation {
    condition     = can(regex("^https://\\S+$|^http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?(/\\S*)?$", var.model_base_url))
    error_message = "model_base_url must be an https:// URL (or http://127.0.0.1 / http://localhost for a stand-in model)."
  }
}

# Failover order per call kind (docs/design.md rule 15): the first provider serves; the next
# only after a definite failure of the one before. OpenAI alone by default.
variable "edit_providers" {
  description = "Providers of the edit in failover order, of openai and gemini."
  type        = list(string)
  default     = ["openai"]
  validation {
    condition     = length(var.edit_providers) > 0 && length(distinct(var.edit_providers)) == length(var.edit_providers) && alltrue([for p in var.edit_providers : contains(["openai", "gemini"], p)])
    error_message = "edit_providers must list openai and/or gemini, each once."
  }
}

variable "vision_providers" {
  description = "Providers of the readiness check, review and comparison in failover order, of openai and gemini."
  type        = list(string)
  default     = ["openai"]
  validation {
    condition     = length(var.vision_providers) > 0 && length(distinct(var.vision_providers)) == length(var.vision_providers) && alltrue([for p in var.vision_providers : contains(["openai", "gemini"], p)])
    error_message = "vision_providers must list openai and/or gemini, each once."
  }
}

variable "gemini_base_url" {
  description = "Base URL of the Gemini API (used only when a provider list names gemini)."
  type        = string
  default     = "https://generativelanguage.googleapis.com"
  validation {
    condition     = can(regex("^https://\\S+$|^http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?(/\\S*)?$", var.gemini_base_url))
    error_message = "gemini_base_url must be an https:// URL (or http://127.0.0.1 / http://localhost for a stand-in model)."
  }
}

# The models: a row of the code's model catalogue (models.json, `atelier-admin models`, kept in
# step by `cargo xtask infra-schema`) that can serve the calls and is not past its provider's
# shutdown on the day of the plan (local.usable_models, models.tf), as the consumer refuses at
# cold start.
variable "image_model" {
  description = "The edit model: an edit model of models.json not past its shutdown (prices in docs/costs.md)."
  type        = string
  default     = "gpt-image-2.5-sunburst"
  validation {
    condition     = contains(local.usable_models.edit, var.image_model)
    error_message = "image_model must be an edit model of models.json whose provider has not shut it down (gpt-image-1 was shut down on 2026-10-23; use gpt-image-2.5-sunburst or gpt-image-2.5-flare)."
  }
}

variable "vision_model" {
  description = "The vision model (readiness check, review, comparison): a vision model of models.json not past its shutdown."
  type        = string
  default     = "gpt-5.4-mini"
  validation {
    condition     = contains(local.usable_models.vision, var.vision_model)
    error_message = "vision_model must be a vision model of models.json whose provider has not shut it down."
  }
}

variable "credit_packs" {
  description = "Credit packs for sale: NAME:CREDITS:AMOUNT:CURRENCY[:APP_STORE_PRODUCT_ID[:GOOGLE_PLAY_PRODUCT_ID]], comma-separated, the amount in minor units (cents); the optional fields sell the pack as that App Store consumable and that Google Play one-time product (the App Store field may be empty before a Google Play one)."
  type        = string
  default     = "starter:50:500:usd,studio:250:2000:usd"
  validation {
    condition     = can(regex("^[a-z0-9_-]+:[0-9]+:[0-9]+:[A-Za-z]{3}(:[A-Za-z0-9._-]{1,100}|:[A-Za-z0-9._-]{0,100}:[a-z0-9][a-z0-9._]{0,138})?(,[a-z0-9_-]+:[0-9]+:[0-9]+:[A-Za-z]{3}(:[A-Za-z0-9._-]{1,100}|:[A-Za-z0-9._-]{0,100}:[a-z0-9][a-z0-9._]{0,138})?)*$", var.credit_packs))
    error_message = "credit_packs is NAME:CREDITS:AMOUNT:CURRENCY[:APP_STORE_PRODUCT_ID[:GOOGLE_PLAY_PRODUCT_ID]][,...], e.g. starter:50:500:usd, starter:50:500:usd:com.example.starter or starter:50:500:usd::starter_pack (NAME in a-z 0-9 _ -, a three-letter currency)."
  }
}

variable "apple_root_certs" {
  description = "App Store purchases: the trusted root certificates of Apple's signed data (Apple Root CA - G3), PEM or base64 DER, comma-separated. Set with apple_bundle_id to enable POST /v1/purchases/apple and /v1/webhooks/apple; empty: App Store purchases off."
  type        = string
  default     = ""
  validation {
    condition     = length(var.apple_root_certs) <= 32768 && can(regex("^[-A-Za-z0-9+/=,\\s]*$", var.apple_root_certs))
    error_message = "apple_root_certs is PEM or base64 DER certificates, comma-separated, at most 32 KiB."
  }
}

variable "apple_bundle_id" {
  description = "App Store purchases: the iOS app's bundle id that signed transactions and notifications must name (empty: off)."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^([A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*)?$", var.apple_bundle_id)) && length(var.apple_bundle_id) <= 155
    error_message = "apple_bundle_id is a bundle id such as com.example.atelier (letters, digits, hyphens and dots), or empty."
  }
}

variable "apple_environment" {
  description = "App Store purchases: Production or Sandbox, the App Store whose signed data is accepted."
  type        = string
  default     = "Production"
  validation {
    condition     = contains(["Production", "Sandbox"], var.apple_environment)
    error_message = "apple_environment is Production or Sandbox."
  }
}

variable "apple_app_apple_id" {
  description = "App Store purchases: the app's numeric Apple id, checked on production notifications (null: not checked)."
  type        = number
  default     = null
  validation {
    condition     = var.apple_app_apple_id == null ? true : var.apple_app_apple_id > 0 && floor(var.apple_app_apple_id) == var.apple_app_apple_id
    error_message = "apple_app_apple_id is a positive whole number, or null."
  }
}

variable "google_play_package_name" {
  description = "Google Play purchases: the Android app's package name. Set with google_play_push_audience and google_play_push_service_account, then store the service account's JSON key in google_play_key_secret_arn, to enable POST /v1/purchases/google and /v1/webhooks/google; empty: Google Play purchases off."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^([A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)+)?$", var.google_play_package_name)) && length(var.google_play_package_name) <= 150
    error_message = "google_play_package_name is a package name such as com.example.atelier, or empty."
  }
}

variable "google_play_push_audience" {
  description = "Google Play purchases: the audience of the Real-time Developer Notifications Pub/Sub push subscription (its OIDC token's aud), e.g. the webhook's URL; required with google_play_package_name."
  type        = string
  default     = ""
  validation {
    condition     = length(var.google_play_push_audience) <= 512 && can(regex("^\\S*$", var.google_play_push_audience))
    error_message = "google_play_push_audience is one string without spaces, at most 512 characters."
  }
}

variable "google_play_push_service_account" {
  description = "Google Play purchases: the e-mail of the service account the push subscription signs its OIDC tokens as; required with google_play_package_name."
  type        = string
  default     = ""
  validation {
    condition     = can(regex("^([^\\s@]+@[^\\s@]+)?$", var.google_play_push_service_account))
    error_message = "google_play_push_service_account is an e-mail address, or empty."
  }
}

variable "unbound_store_purchases" {
  description = "refuse: an App Store or Google Play purchase bought without the account's app_account_token is refused (403 PURCHASE_NOT_BOUND), since whoever holds it could claim it; accept: granted to whoever posts it first, for an app that cannot set the token (docs/mobile.md: the risk)."
  type        = string
  default     = "refuse"
  validation {
    condition     = contains(["refuse", "accept"], var.unbound_store_purchases)
    error_message = "unbound_store_purchases is refuse or accept."
  }
}

variable "checkout_return_urls" {
  description = "URL prefixes a checkout's success and cancel URLs must start with (the first is the default): your web app's origin, e.g. https://app.example.com/."
  type        = list(string)
  default     = ["http://localhost:8787/"]
  validation {
    condition     = length(var.checkout_return_urls) >= 1 && length(var.checkout_return_urls) <= 10 && alltrue([for u in var.checkout_return_urls : can(regex("^https://\\S+$|^http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?(/\\S*)?$", u)) && !strcontains(u, ",")])
    error_message = "checkout_return_urls is 1-10 URLs, each https:// (or http on the loopback) and without commas."
  }
}

variable "alarm_email" {
  description = "E-mail address subscribed to the alarm topic (null: none; subscribe to alarm_topic_arn yourself)."
  type        = string
  default     = null
  validation {
    condition     = var.alarm_email == null || can(regex("^[^\\s@,]+@[^\\s@,]+\\.[^\\s@,]+$", coalesce(var.alarm_email, "-")))
    error_message = "alarm_email must be one e-mail address (name@domain.tld), or null."
  }
}

variable "upload_retention_days" {
  description = "Days before an object under uploads/ expires. An upload is needed only until an edit is submitted: the submit copies it into the edit's own prefix under results/, kept as long as the result, so repairs never read the upload."
  type        = number
  default     = 7
  validation {
    condition     = var.upload_retention_days >= 1 && var.upload_retention_days <= 3650 && floor(var.upload_retention_days) == var.upload_retention_days
    error_message = "upload_retention_days must be a whole number of days in 1..3650."
  }
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
    condition     = var.upload_slots_per_day >= 1 && var.upload_slots_per_day <= 1000000 && floor(var.upload_slots_per_day) == var.upload_slots_per_day
    error_message = "upload_slots_per_day must be an integer in 1..1000000."
  }
}

variable "requests_per_window" {
  description = "ATELIER_REQUESTS_PER_WINDOW: API requests one signed-in caller may make per window, counted across every instance; past it 429 TOO_MANY_REQUESTS."
  type        = number
  default     = 100
  validation {
    condition     = var.requests_per_window >= 1 && var.requests_per_window <= 1000000 && floor(var.requests_per_window) == var.requests_per_window
    error_message = "requests_per_window must be an integer in 1..1000000."
  }
}

variable "request_window_secs" {
  description = "ATELIER_REQUEST_WINDOW_SECS: the length of the per-caller request window, in seconds."
  type        = number
  default     = 10
  validation {
    condition     = var.request_window_secs >= 1 && var.request_window_secs <= 3600 && floor(var.request_window_secs) == var.request_window_secs
    error_message = "request_window_secs must be an integer in 1..3600."
  }
}

variable "upload_bytes_per_day" {
  description = "ATELIER_UPLOAD_BYTES_PER_DAY: declared bytes of uploads one user may ask for per UTC day (default 1 GiB; at least one 20 MiB photo)."
  type        = number
  default     = 1073741824
  validation {
    condition     = var.upload_bytes_per_day >= 20971520 && floor(var.upload_bytes_per_day) == var.upload_bytes_per_day
    error_message = "upload_bytes_per_day must be an integer of at least 20971520 (one 20 MiB photo)."
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
  description = "API steady-state requests per second (API Gateway stage throttling)."
  type        = number
  default     = 1000
  validation {
    condition     = var.throttle_rate_limit > 0 && var.throttle_rate_limit <= 10000
    error_message = "throttle_rate_limit must be positive and at most 10000 (the account's default API Gateway quota)."
  }
}

variable "throttle_burst_limit" {
  description = "API burst requests (API Gateway stage throttling)."
  type        = number
  default     = 2000
  validation {
    condition     = var.throttle_burst_limit >= 1 && var.throttle_burst_limit <= 5000 && floor(var.throttle_burst_limit) == var.throttle_burst_limit
    error_message = "throttle_burst_limit must be an integer in 1..5000 (the account's default API Gateway burst quota)."
  }
}

variable "tags" {
  description = "Tags on every resource (besides project, prefix and the module's own)."
  type        = map(string)
  default     = {}
  validation {
    condition = length(var.tags) <= 40 && alltrue([
      for k, v in var.tags : length(k) >= 1 && length(k) <= 128 && length(v) <= 256 && !startswith(lower(k), "aws:")
    ])
    error_message = "tags: at most 40 (AWS allows 50 per resource, the module sets up to 3), keys 1-128 characters not starting with aws:, values up to 256."
  }
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

variable "reversal_alarm_per_hour" {
  description = "Purchases reversed (Stripe refunds and disputes) within an hour that raise the purchase-reversals alarm (the CDK app's REVERSALS_ALARM_PER_HOUR)."
  type        = number
  default     = 5
  validation {
    condition     = var.reversal_alarm_per_hour >= 1 && floor(var.reversal_alarm_per_hour) == var.reversal_alarm_per_hour
    error_message = "reversal_alarm_per_hour must be a whole number of at least 1."
  }
}

variable "budget_alert_percents" {
  description = "Alarms when the day's model spend (used + reserved) passes each of these percents of the cap."
  type        = list(number)
  default     = [50, 80, 95]
  validation {
    condition     = length(var.budget_alert_percents) <= 10 && alltrue([for p in var.budget_alert_percents : p > 0 && p <= 100])
    error_message = "budget_alert_percents: at most 10 percents, each in 1..100."
  }
}

variable "web_site" {
  description = "Create the web app's site (private S3 bucket + CloudFront with security headers). false: serve the app elsewhere."
  type        = bool
  default     = true
  validation {
    condition     = var.web_site != null
    error_message = "web_site is true or false, not null."
  }
}

variable "web_origins" {
  description = "Browser origins allowed to call the API and the storage (CORS), e.g. [\"https://app.example.com\"]. Empty: the site's CloudFront domain (http://localhost:8787 without a site)."
  type        = list(string)
  default     = []
  validation {
    condition     = length(var.web_origins) <= 20 && alltrue([for o in var.web_origins : can(regex("^(https://[A-Za-z0-9.-]+(:[0-9]{1,5})?|http://(127\\.0\\.0\\.1|localhost)(:[0-9]{1,5})?)$", o))])
    error_message = "web_origins: at most 20 origins (https://host[:port], or http on the loopback): no path, no trailing slash, never *."
  }
}

variable "auth_domain_prefix" {
  description = "Prefix of the Cognito hosted UI domain (<prefix>.auth.<region>.amazoncognito.com), globally unique. null: <name_prefix>-<account id>."
  type        = string
  default     = null
  validation {
    condition = var.auth_domain_prefix == null || (
      can(regex("^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$", coalesce(var.auth_domain_prefix, "-"))) &&
      !can(regex("aws|amazon|cognito", coalesce(var.auth_domain_prefix, "-")))
    )
    error_message = "auth_domain_prefix: 1-63 lower-case letters, digits and dashes (not at either end), without aws, amazon or cognito (Cognito reserves them); or null."
  }
}
