//! Configuration: the only reader of environment variables. Read once at cold start into
//! typed values; a missing or malformed variable fails with its name.

use std::collections::HashMap;

use crate::adapters::model::catalogue::{self, Model, Provider, Serves};
use crate::domain::Micros;
use crate::domain::breaker::BreakerSettings;
use crate::domain::identity::{ADDRESS_KEY_MIN_BYTES, AddressKey};

/// Every environment variable the code reads: ONE table. The constants, [`env::ALL`] (what
/// `atelier-admin env-names` prints and the infrastructure sets) and the readers below all
/// come from it: a name is declared here or it cannot be read ([`ConfigError::Undeclared`]),
/// and a unit test records every name the readers ask for and compares it with the table.
pub mod env {
    /// One variable: its name, whether the code refuses to start without it, what it is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Var {
        pub name: &'static str,
        pub required: bool,
        pub description: &'static str,
    }

    macro_rules! table {
        ($($ident:ident = $name:literal, $required:expr, $description:expr;)*) => {
            $(pub const $ident: &str = $name;)*
            /// Every variable, in the order `env-names` prints them.
            pub const ALL: &[Var] = &[$(Var { name: $name, required: $required, description: $description }),*];
        };
    }

    table! {
        ACCOUNTS_TABLE = "ATELIER_ACCOUNTS_TABLE", true,
            "DynamoDB table of accounts (balance, in-flight count)";
        LEDGER_TABLE = "ATELIER_LEDGER_TABLE", true, "DynamoDB table of the append-only ledger";
        JOBS_TABLE = "ATELIER_JOBS_TABLE", true, "DynamoDB table of jobs";
        BUDGET_TABLE = "ATELIER_BUDGET_TABLE", true, "DynamoDB table of the daily cost breaker";
        ATTEMPTS_TABLE = "ATELIER_ATTEMPTS_TABLE", true, "DynamoDB table of paid-call attempts";
        QUOTAS_TABLE = "ATELIER_QUOTAS_TABLE", true,
            "DynamoDB table of per-user per-day counters (upload slots and bytes), expired by TTL";
        PAYMENTS_TABLE = "ATELIER_PAYMENTS_TABLE", true,
            "DynamoDB table of paid purchases by Stripe payment id";
        SIGNUPS_TABLE = "ATELIER_SIGNUPS_TABLE", true,
            "DynamoDB table of signup grants by the keyed hash of the verified address (never the address): one grant per address";
        WEBHOOKS_TABLE = "ATELIER_WEBHOOKS_TABLE", true,
            "DynamoDB table of the webhook outbox: endpoints, events and their delivery log";
        WEBHOOK_QUEUE_URL = "ATELIER_WEBHOOK_QUEUE_URL", true,
            "SQS queue URL of webhook deliveries: one message per (event, endpoint) attempt, consumed by the sweeper";
        WEBHOOK_TIMEOUT_SECS = "ATELIER_WEBHOOK_TIMEOUT_SECS", false,
            "how long one webhook POST may take before it counts as failed (default 15, as Svix)";
        WEBHOOK_PRIVATE_ADDRESSES = "ATELIER_WEBHOOK_PRIVATE_ADDRESSES", false,
            "refuse (default): webhooks go only to public addresses, checked after DNS resolution at each send and when an endpoint is added; allow: also loopback, private and link-local ones (local runs only, where the receivers are on this machine)";
        APNS_URL = "ATELIER_APNS_URL", false,
            "APNs base URL (default https://api.push.apple.com; the sandbox is https://api.sandbox.push.apple.com); an http:// URL is spoken as h2c with prior knowledge, for the local stand-in only";
        FCM_URL = "ATELIER_FCM_URL", false, "FCM HTTP v1 base URL (default https://fcm.googleapis.com)";
        FCM_TOKEN_URL = "ATELIER_FCM_TOKEN_URL", false,
            "OAuth2 token URL where the FCM service account's JWT is exchanged for a bearer (default https://oauth2.googleapis.com/token)";
        PUSH_SECRET_ID = "ATELIER_PUSH_SECRET_ID", false,
            "Secrets Manager id of the push credentials (JSON: apns {key_id, team_id, topic, key_pem}, fcm {project_id, client_email, private_key}), read by the sweeper, which sends the pushes; without it no push is derived";
        QUEUE_URL = "ATELIER_QUEUE_URL", true, "SQS queue URL of the job doorbell";
        BUCKET = "ATELIER_BUCKET", true, "private S3 bucket of uploads and results";
        MAX_IN_FLIGHT = "ATELIER_MAX_IN_FLIGHT", false,
            "edits one user may have queued or processing (default 3)";
        UPLOAD_URL_TTL_SECS = "ATELIER_UPLOAD_URL_TTL_SECS", false,
            "lifetime of presigned upload URLs in seconds (default 900)";
        UPLOAD_SLOTS_PER_DAY = "ATELIER_UPLOAD_SLOTS_PER_DAY", false,
            "upload slots one user may ask for per UTC day (default 150)";
        UPLOAD_BYTES_PER_DAY = "ATELIER_UPLOAD_BYTES_PER_DAY", false,
            "bytes of uploads (as declared and signed) one user may ask for per UTC day (default 1073741824 = 1 GiB; at least the largest single upload, 20 MiB)";
        REQUESTS_PER_WINDOW = "ATELIER_REQUESTS_PER_WINDOW", false,
            "API requests one signed-in caller may make per window, counted across every execution environment (default 100; past it 429 TOO_MANY_REQUESTS with Retry-After)";
        REQUEST_WINDOW_SECS = "ATELIER_REQUEST_WINDOW_SECS", false,
            "the length of that window in seconds (default 10)";
        EMAIL_VERIFIED_CLAIM = "ATELIER_EMAIL_VERIFIED_CLAIM", false,
            "the token claim that says the caller's e-mail is verified (boolean true or the string \"true\"); only such a caller gets the signup grant (default email_verified)";
        ADDRESS_KEY_SECRET_ID = "ATELIER_ADDRESS_KEY_SECRET_ID", false,
            "Secrets Manager id of the key (at least 32 bytes) of the HMAC-SHA256 under which a verified address is recorded with its signup grant, read by the API at cold start; the API needs it or ATELIER_ADDRESS_KEY";
        ADDRESS_KEY = "ATELIER_ADDRESS_KEY", false,
            "the address key itself (local development only; prefer the secret)";
        RESULT_URL_TTL_SECS = "ATELIER_RESULT_URL_TTL_SECS", false,
            "lifetime of presigned result download URLs in seconds (default 600)";
        RESULT_RETENTION_DAYS = "ATELIER_RESULT_RETENTION_DAYS", false,
            "days the bucket keeps an edit's images under results/ (its result, candidates and kept inputs); the same number as the bucket's lifecycle rule, so a job whose images expired says so instead of handing out a dead link (default 90)";
        DAILY_CAP_MICROS = "ATELIER_DAILY_CAP_MICROS", false,
            "default daily model spend cap in micro-dollars for days the operator has not capped (default 20000000 = 20 USD; `atelier-admin budget set-cap` overrides it)";
        USER_DAILY_SHARE_MICROS = "ATELIER_USER_DAILY_SHARE_MICROS", false,
            "model spend one user may cause in a UTC day, refunded jobs included, in micro-dollars (default 3000000 = 3 USD; `atelier-admin budget share` overrides it per user)";
        CONSUMER_TIMEOUT_SECS = "ATELIER_CONSUMER_TIMEOUT_SECS", false,
            "the consumer function's timeout in seconds (default 300)";
        STUCK_AFTER_SECS = "ATELIER_STUCK_AFTER_SECS", false,
            "a job processing longer than this is failed and refunded by the sweeper (default 900; must exceed the consumer timeout)";
        REQUEUE_AFTER_SECS = "ATELIER_REQUEUE_AFTER_SECS", false,
            "a job still queued this long after it was submitted is sent again; each later re-send waits four times longer than the one before (default 60)";
        REQUEUE_MAX_SECS = "ATELIER_REQUEUE_MAX_SECS", false,
            "the longest wait between two re-sends of a queued job (default 900; at least the first wait)";
        QUEUED_DEADLINE_SECS = "ATELIER_QUEUED_DEADLINE_SECS", false,
            "a job still queued this long after it was submitted is failed and refunded by the sweeper (default 3600; must be longer than the first re-send wait)";
        MODEL_BASE_URL = "ATELIER_MODEL_BASE_URL", false,
            "model provider base URL (default: the stand-in server on 127.0.0.1:8788 without a key, https://api.openai.com with one)";
        MODEL_API_KEY_SECRET_ID = "ATELIER_MODEL_API_KEY_SECRET_ID", false,
            "Secrets Manager id of the provider key, read by the consumer at cold start";
        MODEL_API_KEY = "ATELIER_MODEL_API_KEY", false,
            "the provider key itself (local development only; prefer the secret)";
        VISION_MODEL = "ATELIER_VISION_MODEL", false,
            "model for the readiness check, review and comparison: a vision row of the model catalogue not past its shutdown (default gpt-5.4-mini)";
        IMAGE_MODEL = "ATELIER_IMAGE_MODEL", false,
            "model for the edit: an edit row of the model catalogue not past its shutdown (default gpt-image-2.5-sunburst)";
        EDIT_PROVIDERS = "ATELIER_EDIT_PROVIDERS", false,
            "providers of the edit in failover order, comma-separated, of openai and gemini: the first serves, the next only after a definite failure of the one before (default openai)";
        VISION_PROVIDERS = "ATELIER_VISION_PROVIDERS", false,
            "providers of the readiness check, review and comparison in failover order, comma-separated, of openai and gemini (default openai)";
        BREAKER_FAILURES = "ATELIER_BREAKER_FAILURES", false,
            "consecutive definite failures (connection refused, 429, a 5xx other than 504, no such model) that open a model provider's circuit breaker, sending its calls straight to the next provider of the list (default 5)";
        BREAKER_COOLDOWN_SECS = "ATELIER_BREAKER_COOLDOWN_SECS", false,
            "seconds a provider's open circuit breaker stays open before one probe call may go through (default 60)";
        GEMINI_BASE_URL = "ATELIER_GEMINI_BASE_URL", false,
            "Gemini API base URL (default: the stand-in server on 127.0.0.1:8788 without a key, https://generativelanguage.googleapis.com with one); used only when a provider list names gemini";
        GEMINI_API_KEY_SECRET_ID = "ATELIER_GEMINI_API_KEY_SECRET_ID", false,
            "Secrets Manager id of the Gemini key, read by the consumer at cold start when a provider list names gemini";
        GEMINI_API_KEY = "ATELIER_GEMINI_API_KEY", false,
            "the Gemini key itself (local development only; prefer the secret)";
        LOG_FORMAT = "AWS_LAMBDA_LOG_FORMAT", false, "JSON (default in Lambda) or Text";
        LOG_LEVEL = "AWS_LAMBDA_LOG_LEVEL", false, "log level filter (default info)";
        CREDIT_PACKS = "ATELIER_CREDIT_PACKS", false,
            "credit packs for sale, NAME:CREDITS:AMOUNT:CURRENCY[:APP_STORE_PRODUCT_ID[:GOOGLE_PLAY_PRODUCT_ID]] separated by commas, the amount in minor units; the optional fields sell the pack as that App Store consumable and that Google Play one-time product (the App Store field may be empty before a Google Play one: starter:50:500:usd::starter_pack) (default starter:50:500:usd,studio:250:2000:usd)";
        CHECKOUT_RETURN_URLS = "ATELIER_CHECKOUT_RETURN_URLS", false,
            "URL prefixes a checkout's success and cancel URLs must start with, comma-separated; the first is the default (default http://localhost:8787/)";
        STRIPE_BASE_URL = "ATELIER_STRIPE_BASE_URL", false,
            "Stripe API base URL (default https://api.stripe.com with a secret id, else the stand-in on 127.0.0.1:12111)";
        STRIPE_SECRET_ID = "ATELIER_STRIPE_SECRET_ID", false,
            "Secrets Manager id of the Stripe keys, a JSON object {\"secret_key\": \"sk_…\", \"webhook_secret\": \"whsec_…\"}, read by the API at cold start";
        STRIPE_SECRET_KEY = "ATELIER_STRIPE_SECRET_KEY", false,
            "the Stripe secret key itself (local development only; prefer the secret)";
        STRIPE_WEBHOOK_SECRET = "ATELIER_STRIPE_WEBHOOK_SECRET", false,
            "the Stripe webhook signing secret itself (local development only; prefer the secret)";
        STORE_PURCHASE_MAX_AGE_HOURS = "ATELIER_STORE_PURCHASE_MAX_AGE_HOURS", false,
            "App Store and Google Play purchases: the age (hours, 1-720) past which a purchase an app posts is checked with the store's server API before it grants (Get Transaction Info; Google's voided purchases), or refused as TRANSACTION_STALE when the App Store Server API is not configured (default 72)";
        APPLE_ROOT_CERTS = "ATELIER_APPLE_ROOT_CERTS", false,
            "App Store purchases: the trusted root certificates of signed App Store data (Apple Root CA - G3 in production), PEM blocks or base64 DER separated by commas; with ATELIER_APPLE_BUNDLE_ID it enables POST /v1/purchases/apple and /v1/webhooks/apple";
        APPLE_BUNDLE_ID = "ATELIER_APPLE_BUNDLE_ID", false,
            "App Store purchases: the iOS app's bundle id that signed transactions and notifications must name";
        APPLE_ENVIRONMENT = "ATELIER_APPLE_ENVIRONMENT", false,
            "App Store purchases: Production (default) or Sandbox, the store whose signed data is accepted";
        APPLE_APP_APPLE_ID = "ATELIER_APPLE_APP_APPLE_ID", false,
            "App Store purchases: the app's numeric Apple id, checked on production notifications when set";
        APPLE_API_SECRET_ID = "ATELIER_APPLE_API_SECRET_ID", false,
            "App Store consumption answers: Secrets Manager id of an App Store Server API key (JSON: keyId, issuerId, privateKey, an In-App Purchase key's .p8 PEM), read by the API at cold start; with a key stored, CONSUMPTION_REQUEST notifications are answered for accounts that consented; an empty secret leaves them unanswered";
        APPLE_API_KEY = "ATELIER_APPLE_API_KEY", false,
            "App Store consumption answers: the App Store Server API key's JSON itself, in place of ATELIER_APPLE_API_SECRET_ID (local development only; prefer the secret)";
        APPLE_API_URL = "ATELIER_APPLE_API_URL", false,
            "App Store Server API base URL (default https://api.storekit.apple.com, or https://api.storekit-sandbox.apple.com with ATELIER_APPLE_ENVIRONMENT=Sandbox)";
        GOOGLE_PLAY_PACKAGE_NAME = "ATELIER_GOOGLE_PLAY_PACKAGE_NAME", false,
            "Google Play purchases: the Android app's package name; with ATELIER_GOOGLE_PLAY_SECRET_ID (and a key stored in it) or ATELIER_GOOGLE_PLAY_KEY it enables POST /v1/purchases/google and /v1/webhooks/google";
        GOOGLE_PLAY_SECRET_ID = "ATELIER_GOOGLE_PLAY_SECRET_ID", false,
            "Google Play purchases: Secrets Manager id of the service account's JSON key (client_email, private_key), granted the Android Publisher API, read by the API at cold start; an empty secret leaves Google Play off";
        GOOGLE_PLAY_KEY = "ATELIER_GOOGLE_PLAY_KEY", false,
            "Google Play purchases: the service account's JSON key itself, in place of ATELIER_GOOGLE_PLAY_SECRET_ID (local development only; prefer the secret)";
        GOOGLE_PLAY_PUBLISHER_URL = "ATELIER_GOOGLE_PLAY_PUBLISHER_URL", false,
            "Google Play purchases: Android Publisher API base URL (default https://androidpublisher.googleapis.com)";
        GOOGLE_PLAY_TOKEN_URL = "ATELIER_GOOGLE_PLAY_TOKEN_URL", false,
            "Google Play purchases: OAuth2 token URL where the service account's JWT is exchanged for a bearer (default https://oauth2.googleapis.com/token)";
        GOOGLE_PLAY_PUSH_AUDIENCE = "ATELIER_GOOGLE_PLAY_PUSH_AUDIENCE", false,
            "Google Play purchases: the audience of the Real-time Developer Notifications Pub/Sub push subscription (its OIDC token's aud); required with the package name";
        GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT = "ATELIER_GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT", false,
            "Google Play purchases: the e-mail of the service account the push subscription signs its OIDC tokens as; required with the package name";
        GOOGLE_CERTS_URL = "ATELIER_GOOGLE_CERTS_URL", false,
            "Google Play purchases: where Google's token signing keys are (a JWKS; default https://www.googleapis.com/oauth2/v3/certs)";
        UNBOUND_STORE_PURCHASES = "ATELIER_UNBOUND_STORE_PURCHASES", false,
            "refuse (default): an App Store transaction without appAccountToken, or a Google Play purchase without obfuscatedAccountId, is refused (403 PURCHASE_NOT_BOUND), since anyone who holds it could claim it; accept: granted to whoever posts it first (for an app that cannot set the account token; see docs/mobile.md for the risk)";
        OPERATOR = "ATELIER_OPERATOR", false,
            "atelier-admin only: the operator recorded on a grant's ledger row when --operator is not given";
    }

    /// The table's entry for `name`.
    pub fn find(name: &str) -> Option<&'static Var> {
        ALL.iter().find(|v| v.name == name)
    }
}

/// Physical names of the resources, as deployed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resources {
    pub accounts_table: String,
    pub ledger_table: String,
    pub jobs_table: String,
    pub budget_table: String,
    pub attempts_table: String,
    pub quotas_table: String,
    pub payments_table: String,
    pub signups_table: String,
    pub webhooks_table: String,
    pub queue_url: String,
    pub webhook_queue_url: String,
    pub bucket: String,
}

impl Resources {
    /// The names the local stack uses for a given prefix (the local runner and the tests),
    /// with the queue URL as ministack forms it.
    pub fn local(prefix: &str, endpoint: &str) -> Resources {
        Resources {
            accounts_table: format!("{prefix}-accounts"),
            ledger_table: format!("{prefix}-ledger"),
            jobs_table: format!("{prefix}-jobs"),
            budget_table: format!("{prefix}-budget"),
            attempts_table: format!("{prefix}-attempts"),
            quotas_table: format!("{prefix}-quotas"),
            payments_table: format!("{prefix}-payments"),
            signups_table: format!("{prefix}-signups"),
            webhooks_table: format!("{prefix}-webhooks"),
            queue_url: format!(
                "{}/000000000000/{prefix}-jobs",
                endpoint.trim_end_matches('/')
            ),
            webhook_queue_url: format!(
                "{}/000000000000/{prefix}-webhooks",
                endpoint.trim_end_matches('/')
            ),
            bucket: format!("{prefix}-assets"),
        }
    }

    /// The queue's name (the last segment of its URL).
    pub fn queue_name(&self) -> &str {
        self.queue_url.rsplit('/').next().unwrap_or(&self.queue_url)
    }

    /// The environment that makes [`Config::from_env`] find these names.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        vec![
            (env::ACCOUNTS_TABLE, self.accounts_table.clone()),
            (env::LEDGER_TABLE, self.ledger_table.clone()),
            (env::JOBS_TABLE, self.jobs_table.clone()),
            (env::BUDGET_TABLE, self.budget_table.clone()),
            (env::ATTEMPTS_TABLE, self.attempts_table.clone()),
            (env::QUOTAS_TABLE, self.quotas_table.clone()),
            (env::PAYMENTS_TABLE, self.payments_table.clone()),
            (env::SIGNUPS_TABLE, self.signups_table.clone()),
            (env::WEBHOOKS_TABLE, self.webhooks_table.clone()),
            (env::QUEUE_URL, self.queue_url.clone()),
            (env::WEBHOOK_QUEUE_URL, self.webhook_queue_url.clone()),
            (env::BUCKET, self.bucket.clone()),
        ]
    }
}

/// Business limits that are configuration rather than code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Rule 11: edits one user may have queued or processing.
    pub max_in_flight: u32,
    pub upload_url_ttl_secs: u64,
    /// Upload slots one user may ask for per UTC day, and their declared bytes together.
    pub upload_slots_per_day: u32,
    pub upload_bytes_per_day: u64,
    pub result_url_ttl_secs: u64,
    /// Days the bucket's lifecycle keeps `results/` (the deployment sets both from one value).
    pub result_retention_days: u32,
    /// Rule 8: provider spend allowed per UTC day, micro-dollars (new days start with this).
    pub daily_cap_micros: Micros,
    /// Rule 12: model spend one user may cause per UTC day (an operator's override wins).
    pub user_daily_share_micros: Micros,
    /// Rule 6: recovery timings.
    pub consumer_timeout_secs: u64,
    pub stuck_after_secs: u64,
    /// A queued job is sent again this long after its submit, then after waits that grow
    /// fourfold up to `requeue_max_secs` (waiting is not failure: a waiting message is not lost).
    pub requeue_after_secs: u64,
    pub requeue_max_secs: u64,
    /// A job still queued this long after it was created is failed and refunded.
    pub queued_deadline_secs: u64,
    /// Rule 15: when a model provider's circuit breaker opens and how long it stays open.
    pub breaker: BreakerSettings,
    /// Requests one signed-in caller may make per window of `request_window_secs`
    /// (docs/design.md, "One caller's flood").
    pub requests_per_window: u32,
    pub request_window_secs: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_in_flight: 3,
            upload_url_ttl_secs: 900,
            upload_slots_per_day: DEFAULT_UPLOAD_SLOTS_PER_DAY,
            upload_bytes_per_day: DEFAULT_UPLOAD_BYTES_PER_DAY,
            result_url_ttl_secs: 600,
            result_retention_days: 90,
            daily_cap_micros: Micros::new(20_000_000),
            // ≈ 40 edits with a repair each at ≈ $0.07 (docs/design.md, rule 12).
            user_daily_share_micros: Micros::new(3_000_000),
            consumer_timeout_secs: 300,
            stuck_after_secs: 900,
            requeue_after_secs: 60,
            requeue_max_secs: 900,
            queued_deadline_secs: 3600,
            breaker: BreakerSettings::default(),
            requests_per_window: DEFAULT_REQUESTS_PER_WINDOW,
            request_window_secs: DEFAULT_REQUEST_WINDOW_SECS,
        }
    }
}

/// A person's busiest minute in the app (an upload, a quote per change, a submit, the
/// long-poll, History and Account pages) is a few dozen requests; a phone or CLI retrying with
/// back-off stays far below 10 a second. A flood past it is refused before any other work.
pub const DEFAULT_REQUESTS_PER_WINDOW: u32 = 100;
pub const DEFAULT_REQUEST_WINDOW_SECS: u64 = 10;

/// A heavy honest day: 50 edits, each with its three uploads (original, mask, style
/// reference), is 150 slots.
pub const DEFAULT_UPLOAD_SLOTS_PER_DAY: u32 = 150;
/// 1 GiB: those 50 edits with a 12 MP original (≈ 8 MiB as JPEG, more as PNG), a mask and a
/// style reference (≈ 4 MiB) each come to ≈ 650 MiB; an abuser's month at the cap stores
/// ≈ 30 GiB (≈ $0.70 of S3 Standard) before the lifecycle deletes it.
pub const DEFAULT_UPLOAD_BYTES_PER_DAY: u64 = 1 << 30;
/// The largest single upload (an original); a day's byte limit below it would refuse every photo.
pub const MAX_UPLOAD_BYTES: u64 = 20 * 1024 * 1024;

/// How much longer each re-send of a queued job waits than the one before.
pub const REQUEUE_BACKOFF_FACTOR: u64 = 4;

impl Limits {
    /// How long after a queued job's `dispatches`-th dispatch (the submit's is the first) the
    /// sweeper sends it again: `requeue_after_secs`, four times longer after each re-send, at
    /// most `requeue_max_secs`. A job waiting in a backlog thus gets about one more message
    /// per fourfold wait (1, 5, 20, 35, 50 minutes with the defaults), not one a minute.
    pub fn resend_wait(&self, dispatches: u32) -> std::time::Duration {
        let mut wait = self.requeue_after_secs;
        for _ in 1..dispatches.max(1) {
            wait = wait.saturating_mul(REQUEUE_BACKOFF_FACTOR);
            if wait >= self.requeue_max_secs {
                break;
            }
        }
        std::time::Duration::from_secs(wait.min(self.requeue_max_secs))
    }

    /// How long after its submit a new job's first re-send is due.
    pub fn first_resend_after(&self) -> std::time::Duration {
        self.resend_wait(1)
    }

    /// How long a job may stay queued before the sweeper fails and refunds it.
    pub fn queued_deadline(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.queued_deadline_secs)
    }
}

/// Everything the functions read from their environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub resources: Resources,
    pub limits: Limits,
    pub identity: IdentitySettings,
    pub payments: PaymentSettings,
    pub webhooks: WebhookSettings,
    pub push: PushSettings,
}

/// Where pushes go and where their credentials are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSettings {
    pub apns_url: String,
    pub fcm_url: String,
    pub fcm_token_url: String,
    /// [`env::PUSH_SECRET_ID`]; `None`: push is off.
    pub secret_id: Option<String>,
}

impl PushSettings {
    fn from_lookup(get: &Get<'_>) -> Result<PushSettings, ConfigError> {
        let or = |name, default: &str| -> Result<String, ConfigError> {
            Ok(get(name)?
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned()))
        };
        Ok(PushSettings {
            apns_url: or(env::APNS_URL, "https://api.push.apple.com")?,
            fcm_url: or(env::FCM_URL, "https://fcm.googleapis.com")?,
            fcm_token_url: or(env::FCM_TOKEN_URL, "https://oauth2.googleapis.com/token")?,
            secret_id: get(env::PUSH_SECRET_ID)?
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()),
        })
    }
}

/// How webhooks are delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookSettings {
    pub retry: crate::domain::webhooks::RetryPolicy,
    /// One POST's limit.
    pub timeout_secs: u64,
    /// POSTs one endpoint may have in flight at once (a slow receiver is not flooded).
    pub endpoint_concurrency: u32,
    /// Whether endpoints may be inside the network (local runs only).
    pub private_addresses: crate::adapters::webhooks::PrivateAddresses,
}

impl Default for WebhookSettings {
    fn default() -> WebhookSettings {
        WebhookSettings {
            retry: crate::domain::webhooks::RetryPolicy::default(),
            timeout_secs: 15,
            endpoint_concurrency: 4,
            private_addresses: crate::adapters::webhooks::PrivateAddresses::Refuse,
        }
    }
}

impl WebhookSettings {
    fn from_lookup(get: &Get<'_>) -> Result<WebhookSettings, ConfigError> {
        let defaults = WebhookSettings::default();
        Ok(WebhookSettings {
            retry: defaults.retry,
            timeout_secs: number(get, env::WEBHOOK_TIMEOUT_SECS, defaults.timeout_secs, 1, 30)?,
            endpoint_concurrency: defaults.endpoint_concurrency,
            private_addresses: private_addresses(get)?,
        })
    }
}

/// `refuse` (the default) or `allow`.
fn private_addresses(
    get: &Get<'_>,
) -> Result<crate::adapters::webhooks::PrivateAddresses, ConfigError> {
    use crate::adapters::webhooks::PrivateAddresses;
    let name = env::WEBHOOK_PRIVATE_ADDRESSES;
    match get(name)?.as_deref().map(str::trim) {
        None | Some("refuse") => Ok(PrivateAddresses::Refuse),
        Some("allow") => Ok(PrivateAddresses::Allow),
        Some(other) => Err(ConfigError::Invalid {
            name,
            reason: format!("expected refuse or allow, got {other:?}"),
        }),
    }
}

/// What the code reads from the verified token beyond `sub`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentitySettings {
    /// The claim saying the e-mail is verified (Cognito's ID token: `email_verified`).
    pub email_verified_claim: String,
    /// The key of the addresses' hashes ([`env::ADDRESS_KEY`]); the API reads the secret
    /// ([`Self::address_key_secret_id`]) into it at cold start.
    pub address_key: Option<AddressKey>,
    pub address_key_secret_id: Option<String>,
}

impl Default for IdentitySettings {
    fn default() -> IdentitySettings {
        IdentitySettings {
            email_verified_claim: "email_verified".to_owned(),
            address_key: None,
            address_key_secret_id: None,
        }
    }
}

/// A variable that is missing or malformed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("environment variable {0} is required but not set")]
    Missing(&'static str),
    #[error("environment variable {name} is invalid: {reason}")]
    Invalid { name: &'static str, reason: String },
    /// A reader asked for a name [`env::ALL`] does not declare (a bug: declare it there).
    #[error("environment variable {0} is read but not declared in config::env")]
    Undeclared(&'static str),
}

/// The one way the fallible readers look a variable up: only names the table declares.
fn declared(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<String>, ConfigError> {
    match env::find(name) {
        Some(var) => Ok(get(var.name)),
        None => Err(ConfigError::Undeclared(name)),
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        let vars: HashMap<String, String> = std::env::vars().collect();
        Config::from_lookup(|k| vars.get(k).cloned())
    }

    /// Reads from any lookup (tests use a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let declared_get = |name: &'static str| declared(&get, name);
        Ok(Config {
            payments: PaymentSettings::from_lookup(&get)?,
            resources: Resources::from_lookup(&declared_get)?,
            limits: Limits::from_lookup(&declared_get)?,
            webhooks: WebhookSettings::from_lookup(&declared_get)?,
            push: PushSettings::from_lookup(&declared_get)?,
            identity: IdentitySettings {
                email_verified_claim: email_verified_claim(&declared_get)?,
                address_key: address_key(&declared_get)?,
                address_key_secret_id: declared_get(env::ADDRESS_KEY_SECRET_ID)?
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty()),
            },
        })
    }
}

/// How the readers below look a declared variable up.
type Get<'a> = dyn Fn(&'static str) -> Result<Option<String>, ConfigError> + 'a;

/// A variable that must be set and non-blank.
fn required(get: &Get<'_>, name: &'static str) -> Result<String, ConfigError> {
    match get(name)? {
        Some(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        _ => Err(ConfigError::Missing(name)),
    }
}

/// An integer in `min..=max`, or `default` when unset.
fn number(
    get: &Get<'_>,
    name: &'static str,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, ConfigError> {
    match get(name)? {
        None => Ok(default),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(ConfigError::Invalid {
                name,
                reason: format!("expected an integer in {min}..={max}, got {v:?}"),
            }),
        },
    }
}

impl Resources {
    fn from_lookup(get: &Get<'_>) -> Result<Resources, ConfigError> {
        Ok(Resources {
            accounts_table: required(get, env::ACCOUNTS_TABLE)?,
            ledger_table: required(get, env::LEDGER_TABLE)?,
            jobs_table: required(get, env::JOBS_TABLE)?,
            budget_table: required(get, env::BUDGET_TABLE)?,
            attempts_table: required(get, env::ATTEMPTS_TABLE)?,
            quotas_table: required(get, env::QUOTAS_TABLE)?,
            payments_table: required(get, env::PAYMENTS_TABLE)?,
            signups_table: required(get, env::SIGNUPS_TABLE)?,
            webhooks_table: required(get, env::WEBHOOKS_TABLE)?,
            queue_url: required(get, env::QUEUE_URL)?,
            webhook_queue_url: required(get, env::WEBHOOK_QUEUE_URL)?,
            bucket: required(get, env::BUCKET)?,
        })
    }
}

/// The consumer's and sweeper's timings, read together because each bounds the next.
struct Timings {
    consumer_timeout_secs: u64,
    stuck_after_secs: u64,
    requeue_after_secs: u64,
    requeue_max_secs: u64,
    queued_deadline_secs: u64,
}

impl Timings {
    fn from_lookup(get: &Get<'_>) -> Result<Timings, ConfigError> {
        let number = |name, default, min, max| number(get, name, default, min, max);
        let defaults = Limits::default();
        let consumer_timeout_secs = number(
            env::CONSUMER_TIMEOUT_SECS,
            defaults.consumer_timeout_secs,
            1,
            900,
        )?;
        let stuck_after_secs =
            number(env::STUCK_AFTER_SECS, defaults.stuck_after_secs, 60, 86_400)?;
        if stuck_after_secs <= consumer_timeout_secs {
            // A live consumer must never be swept: its job would be refunded while it pays.
            return Err(ConfigError::Invalid {
                name: env::STUCK_AFTER_SECS,
                reason: format!(
                    "{stuck_after_secs} s must be longer than the consumer timeout ({consumer_timeout_secs} s)"
                ),
            });
        }
        let requeue_after_secs = number(
            env::REQUEUE_AFTER_SECS,
            defaults.requeue_after_secs,
            10,
            3600,
        )?;
        let requeue_max_secs =
            number(env::REQUEUE_MAX_SECS, defaults.requeue_max_secs, 10, 86_400)?;
        if requeue_max_secs < requeue_after_secs {
            return Err(ConfigError::Invalid {
                name: env::REQUEUE_MAX_SECS,
                reason: format!(
                    "{requeue_max_secs} s is shorter than the first re-send wait ({requeue_after_secs} s)"
                ),
            });
        }
        let queued_deadline_secs = number(
            env::QUEUED_DEADLINE_SECS,
            defaults.queued_deadline_secs,
            60,
            345_600,
        )?;
        if queued_deadline_secs <= requeue_after_secs {
            // Every job would be failed before its lost doorbell could ever be rung again.
            return Err(ConfigError::Invalid {
                name: env::QUEUED_DEADLINE_SECS,
                reason: format!(
                    "{queued_deadline_secs} s must be longer than the first re-send wait ({requeue_after_secs} s)"
                ),
            });
        }
        Ok(Timings {
            consumer_timeout_secs,
            stuck_after_secs,
            requeue_after_secs,
            requeue_max_secs,
            queued_deadline_secs,
        })
    }
}

impl Limits {
    fn from_lookup(get: &Get<'_>) -> Result<Limits, ConfigError> {
        let number = |name, default, min, max| number(get, name, default, min, max);
        let defaults = Limits::default();
        let Timings {
            consumer_timeout_secs,
            stuck_after_secs,
            requeue_after_secs,
            requeue_max_secs,
            queued_deadline_secs,
        } = Timings::from_lookup(get)?;
        let (requests_per_window, request_window_secs) = request_budget(get)?;
        Ok(Limits {
            max_in_flight: u32::try_from(number(
                env::MAX_IN_FLIGHT,
                defaults.max_in_flight.into(),
                1,
                10_000,
            )?)
            .unwrap_or(defaults.max_in_flight),
            upload_url_ttl_secs: number(
                env::UPLOAD_URL_TTL_SECS,
                defaults.upload_url_ttl_secs,
                30,
                3600,
            )?,
            upload_slots_per_day: u32::try_from(number(
                env::UPLOAD_SLOTS_PER_DAY,
                defaults.upload_slots_per_day.into(),
                1,
                1_000_000,
            )?)
            .unwrap_or(defaults.upload_slots_per_day),
            upload_bytes_per_day: number(
                env::UPLOAD_BYTES_PER_DAY,
                defaults.upload_bytes_per_day,
                MAX_UPLOAD_BYTES,
                1 << 40,
            )?,
            result_url_ttl_secs: number(
                env::RESULT_URL_TTL_SECS,
                defaults.result_url_ttl_secs,
                30,
                3600,
            )?,
            result_retention_days: u32::try_from(number(
                env::RESULT_RETENTION_DAYS,
                defaults.result_retention_days.into(),
                1,
                3650,
            )?)
            .unwrap_or(defaults.result_retention_days),
            daily_cap_micros: Micros::from_unsigned(u128::from(number(
                env::DAILY_CAP_MICROS,
                defaults.daily_cap_micros.get().unsigned_abs(),
                0,
                1_000_000_000_000,
            )?)),
            user_daily_share_micros: Micros::from_unsigned(u128::from(number(
                env::USER_DAILY_SHARE_MICROS,
                defaults.user_daily_share_micros.get().unsigned_abs(),
                1,
                1_000_000_000_000,
            )?)),
            consumer_timeout_secs,
            stuck_after_secs,
            requeue_after_secs,
            requeue_max_secs,
            queued_deadline_secs,
            breaker: breaker(get)?,
            requests_per_window,
            request_window_secs,
        })
    }
}

/// [`env::REQUESTS_PER_WINDOW`] and [`env::REQUEST_WINDOW_SECS`].
fn request_budget(get: &Get<'_>) -> Result<(u32, u64), ConfigError> {
    let defaults = Limits::default();
    let per_window = number(
        get,
        env::REQUESTS_PER_WINDOW,
        defaults.requests_per_window.into(),
        1,
        1_000_000,
    )?;
    let secs = number(
        get,
        env::REQUEST_WINDOW_SECS,
        defaults.request_window_secs,
        1,
        3600,
    )?;
    Ok((
        u32::try_from(per_window).unwrap_or(defaults.requests_per_window),
        secs,
    ))
}

/// [`env::BREAKER_FAILURES`] and [`env::BREAKER_COOLDOWN_SECS`].
fn breaker(get: &Get<'_>) -> Result<BreakerSettings, ConfigError> {
    let defaults = BreakerSettings::default();
    let failures = number(
        get,
        env::BREAKER_FAILURES,
        defaults.failures.into(),
        1,
        1_000,
    )?;
    let cooldown_secs = number(
        get,
        env::BREAKER_COOLDOWN_SECS,
        u64::try_from(defaults.cooldown_ms / 1_000).unwrap_or(60),
        1,
        3_600,
    )?;
    Ok(BreakerSettings {
        failures: u32::try_from(failures).unwrap_or(defaults.failures),
        cooldown_ms: i64::try_from(cooldown_secs.saturating_mul(1_000))
            .unwrap_or(defaults.cooldown_ms),
    })
}

/// [`env::ADDRESS_KEY`], when set: at least [`ADDRESS_KEY_MIN_BYTES`] bytes.
fn address_key(get: &Get<'_>) -> Result<Option<AddressKey>, ConfigError> {
    let name = env::ADDRESS_KEY;
    match get(name)? {
        None => Ok(None),
        Some(v) => AddressKey::parse(&v).map(Some).ok_or(ConfigError::Invalid {
            name,
            reason: format!("expected at least {ADDRESS_KEY_MIN_BYTES} bytes"),
        }),
    }
}

/// The claim name: 1–64 of `A-Za-z0-9_:.-` (a claim name, never an expression).
fn email_verified_claim(get: &Get<'_>) -> Result<String, ConfigError> {
    let name = env::EMAIL_VERIFIED_CLAIM;
    match get(name)?.map(|v| v.trim().to_owned()) {
        None => Ok(IdentitySettings::default().email_verified_claim),
        Some(v)
            if (1..=64).contains(&v.len())
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_:.-".contains(c)) =>
        {
            Ok(v)
        }
        Some(v) => Err(ConfigError::Invalid {
            name,
            reason: format!("expected a claim name (1-64 of A-Z a-z 0-9 _ : . -), got {v:?}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn local_names_round_trip_through_the_environment() {
        let r = Resources::local("atelier-test", "http://127.0.0.1:4566");
        let c = Config::from_lookup(lookup(r.to_env())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.resources, r);
        assert_eq!(c.limits, Limits::default());
        assert_eq!(r.queue_name(), "atelier-test-jobs");
    }

    #[test]
    fn a_stuck_threshold_not_longer_than_the_consumer_timeout_is_refused() {
        let mut env = Resources::local("p", "http://x").to_env();
        env.push((env::CONSUMER_TIMEOUT_SECS, "300".into()));
        env.push((env::STUCK_AFTER_SECS, "300".into()));
        assert!(matches!(
            Config::from_lookup(lookup(env)),
            Err(ConfigError::Invalid {
                name: env::STUCK_AFTER_SECS,
                ..
            })
        ));
    }

    #[test]
    fn resend_waits_grow_fourfold_from_the_first_up_to_the_longest() {
        let l = Limits::default();
        let waits: Vec<u64> = (1..=7).map(|n| l.resend_wait(n).as_secs()).collect();
        assert_eq!(waits, [60, 240, 900, 900, 900, 900, 900]);
        assert_eq!(l.first_resend_after().as_secs(), 60);
        assert_eq!(Limits::default().resend_wait(u32::MAX).as_secs(), 900);
    }

    #[test]
    fn a_queued_deadline_not_longer_than_the_first_resend_wait_is_refused() {
        let mut env = Resources::local("p", "http://x").to_env();
        env.push((env::REQUEUE_AFTER_SECS, "120".into()));
        env.push((env::QUEUED_DEADLINE_SECS, "120".into()));
        assert!(matches!(
            Config::from_lookup(lookup(env)),
            Err(ConfigError::Invalid {
                name: env::QUEUED_DEADLINE_SECS,
                ..
            })
        ));
    }

    #[test]
    fn a_longest_resend_wait_shorter_than_the_first_is_refused() {
        let mut env = Resources::local("p", "http://x").to_env();
        env.push((env::REQUEUE_AFTER_SECS, "300".into()));
        env.push((env::REQUEUE_MAX_SECS, "60".into()));
        assert!(matches!(
            Config::from_lookup(lookup(env)),
            Err(ConfigError::Invalid {
                name: env::REQUEUE_MAX_SECS,
                ..
            })
        ));
    }

    #[test]
    fn the_queued_deadline_defaults_to_an_hour_and_is_read_from_its_variable() {
        let env = Resources::local("p", "http://x").to_env();
        let c = Config::from_lookup(lookup(env.clone())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.limits.queued_deadline_secs, 3600);
        let mut env = env;
        env.push((env::QUEUED_DEADLINE_SECS, "7200".into()));
        let c = Config::from_lookup(lookup(env)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.limits.queued_deadline_secs, 7200);
    }

    #[test]
    fn webhooks_refuse_private_addresses_unless_a_local_run_allows_them() {
        use crate::adapters::webhooks::PrivateAddresses;
        let read = |value: Option<&str>| {
            let mut env = Resources::local("p", "http://x").to_env();
            env.extend(value.map(|v| (env::WEBHOOK_PRIVATE_ADDRESSES, v.to_owned())));
            Config::from_lookup(lookup(env)).map(|c| c.webhooks.private_addresses)
        };
        assert_eq!(read(None), Ok(PrivateAddresses::Refuse));
        assert_eq!(read(Some("refuse")), Ok(PrivateAddresses::Refuse));
        assert_eq!(read(Some("allow")), Ok(PrivateAddresses::Allow));
        assert!(matches!(
            read(Some("yes")),
            Err(ConfigError::Invalid {
                name: env::WEBHOOK_PRIVATE_ADDRESSES,
                ..
            })
        ));
    }

    #[test]
    fn unbound_store_purchases_are_refused_unless_the_deployment_accepts_them() {
        let read = |value: Option<&str>| {
            let mut env = Resources::local("p", "http://x").to_env();
            env.extend(value.map(|v| (env::UNBOUND_STORE_PURCHASES, v.to_owned())));
            Config::from_lookup(lookup(env)).map(|c| c.payments.unbound_store_purchases)
        };
        assert_eq!(read(None), Ok(UnboundPurchases::Refuse));
        assert_eq!(read(Some("refuse")), Ok(UnboundPurchases::Refuse));
        assert_eq!(read(Some("accept")), Ok(UnboundPurchases::Accept));
        assert!(matches!(
            read(Some("yes")),
            Err(ConfigError::Invalid {
                name: env::UNBOUND_STORE_PURCHASES,
                ..
            })
        ));
    }

    #[test]
    fn log_settings_default_to_json_at_info() {
        assert_eq!(
            LogSettings::from_lookup(|_| None),
            LogSettings {
                level: "info".into(),
                text: false
            }
        );
        let set = LogSettings::from_lookup(lookup(vec![
            (env::LOG_LEVEL, "DEBUG".into()),
            (env::LOG_FORMAT, "Text".into()),
        ]));
        assert_eq!(
            set,
            LogSettings {
                level: "debug".into(),
                text: true
            }
        );
    }

    /// Runs every reader with `set` and returns each name they asked for.
    fn names_read(set: &[(&str, &str)]) -> std::collections::BTreeSet<String> {
        let asked = std::cell::RefCell::new(std::collections::BTreeSet::new());
        let mut env = Resources::local("p", "http://x").to_env();
        for (k, v) in set {
            if let Some(var) = env::find(k) {
                env.push((var.name, (*v).to_owned()));
            }
        }
        let recording = |k: &str| {
            asked.borrow_mut().insert(k.to_owned());
            env.iter()
                .rev()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.clone())
        };
        let _ = Config::from_lookup(recording).unwrap_or_else(|e| panic!("{e}"));
        let _ = ModelSettings::from_lookup(recording).unwrap_or_else(|e| panic!("{e}"));
        let _ = LogSettings::from_lookup(recording);
        let _ = PaymentSettings::from_lookup(recording).unwrap_or_else(|e| panic!("{e}"));
        let _ = AdminSettings::from_lookup(recording);
        asked.into_inner()
    }

    #[test]
    fn every_variable_the_code_reads_is_in_the_one_table_and_every_listed_one_is_read() {
        let listed: std::collections::BTreeSet<String> =
            env::ALL.iter().map(|v| v.name.to_owned()).collect();
        // Defaults, and every variable set (a reader may only ask for some names when others
        // are set, e.g. the model URL's default depends on the key).
        let all_set = [
            (env::MODEL_API_KEY, "k"),
            (env::MODEL_API_KEY_SECRET_ID, "arn"),
            (env::MODEL_BASE_URL, "https://m.example"),
            (env::GEMINI_API_KEY, "g"),
            (env::GEMINI_API_KEY_SECRET_ID, "arn-g"),
            (env::GEMINI_BASE_URL, "https://g.example"),
            (env::DAILY_CAP_MICROS, "7"),
            (env::RESULT_URL_TTL_SECS, "60"),
            (env::RESULT_RETENTION_DAYS, "30"),
            (env::EMAIL_VERIFIED_CLAIM, "custom:verified"),
            (env::STRIPE_SECRET_KEY, "sk_test_x"),
        ];
        let mut read = names_read(&[]);
        read.extend(names_read(&all_set));
        let unlisted: Vec<_> = read.difference(&listed).collect();
        assert!(
            unlisted.is_empty(),
            "read but missing from config::env (so from env-names and the infrastructure): {unlisted:?}"
        );
        let unread: Vec<_> = listed.difference(&read).collect();
        assert!(unread.is_empty(), "listed but never read: {unread:?}");
        // The two the table once lacked.
        assert!(env::find("ATELIER_DAILY_CAP_MICROS").is_some());
        assert!(env::find("ATELIER_RESULT_URL_TTL_SECS").is_some());
        let mut names: Vec<_> = env::ALL.iter().map(|v| v.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), env::ALL.len(), "a name listed twice");
    }

    #[test]
    fn payment_settings_name_a_bad_catalogue_or_return_url_and_never_print_the_keys() {
        let bad = |name: &'static str, value: &str| {
            PaymentSettings::from_lookup(lookup(vec![(name, value.to_owned())]))
        };
        assert!(matches!(
            bad(env::CREDIT_PACKS, "starter:0:500:usd"),
            Err(ConfigError::Invalid {
                name: env::CREDIT_PACKS,
                ..
            })
        ));
        assert!(matches!(
            bad(env::CHECKOUT_RETURN_URLS, "javascript:alert(1)"),
            Err(ConfigError::Invalid {
                name: env::CHECKOUT_RETURN_URLS,
                ..
            })
        ));
        let keyed = PaymentSettings::from_lookup(lookup(vec![
            (env::STRIPE_SECRET_KEY, "sk_test_secret".into()),
            (env::STRIPE_WEBHOOK_SECRET, "whsec_secret".into()),
        ]))
        .unwrap_or_else(|e| panic!("{e}"));
        let shown = format!("{keyed:?}");
        assert!(
            !shown.contains("sk_test_secret") && !shown.contains("whsec_secret"),
            "{shown}"
        );
        assert_eq!(keyed.stripe_base_url, STAND_IN_STRIPE_URL);
        let deployed =
            PaymentSettings::from_lookup(lookup(vec![(env::STRIPE_SECRET_ID, "arn".into())]))
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(deployed.stripe_base_url, "https://api.stripe.com");
    }

    #[test]
    fn a_name_the_table_does_not_declare_cannot_be_read() {
        assert_eq!(
            declared(&|_| Some("x".into()), "ATELIER_NOT_DECLARED"),
            Err(ConfigError::Undeclared("ATELIER_NOT_DECLARED"))
        );
    }

    #[test]
    fn upload_limits_and_the_verified_claim_are_read_and_checked() {
        let c = Config::from_lookup(lookup(Resources::local("p", "http://x").to_env()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.limits.upload_slots_per_day, 150);
        assert_eq!(c.limits.upload_bytes_per_day, 1 << 30);
        assert_eq!(c.identity.email_verified_claim, "email_verified");
        let mut env = Resources::local("p", "http://x").to_env();
        env.push((env::UPLOAD_SLOTS_PER_DAY, "3".into()));
        env.push((env::UPLOAD_BYTES_PER_DAY, "30000000".into()));
        env.push((env::EMAIL_VERIFIED_CLAIM, " custom:email_ok ".into()));
        let c = Config::from_lookup(lookup(env)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.limits.upload_slots_per_day, 3);
        assert_eq!(c.limits.upload_bytes_per_day, 30_000_000);
        assert_eq!(c.identity.email_verified_claim, "custom:email_ok");
        let refused = [
            (env::UPLOAD_SLOTS_PER_DAY, "0", "no slot at all"),
            (
                env::UPLOAD_BYTES_PER_DAY,
                "1000",
                "below one photo's 20 MiB",
            ),
            (env::EMAIL_VERIFIED_CLAIM, "a b", "not a claim name"),
            (env::EMAIL_VERIFIED_CLAIM, "", "empty"),
        ];
        for (name, value, why) in refused {
            let mut env = Resources::local("p", "http://x").to_env();
            env.push((name, value.into()));
            assert!(
                matches!(Config::from_lookup(lookup(env)), Err(ConfigError::Invalid { name: n, .. }) if n == name),
                "{why}"
            );
        }
    }

    #[test]
    fn the_daily_cap_is_read_from_its_variable() {
        let mut env = Resources::local("p", "http://x").to_env();
        env.push((env::DAILY_CAP_MICROS, "5000000".into()));
        let c = Config::from_lookup(lookup(env)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.limits.daily_cap_micros, Micros::new(5_000_000));
    }

    #[test]
    fn the_user_share_is_read_from_its_variable_and_zero_is_refused() {
        let mut env = Resources::local("p", "http://x").to_env();
        env.push((env::USER_DAILY_SHARE_MICROS, "250000".into()));
        let c = Config::from_lookup(lookup(env.clone())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.limits.user_daily_share_micros, Micros::new(250_000));
        env.push((env::USER_DAILY_SHARE_MICROS, "0".into()));
        env.swap_remove(env.len() - 2);
        assert!(
            Config::from_lookup(lookup(env)).is_err(),
            "a zero share refuses every user"
        );
    }

    #[test]
    fn missing_and_malformed_variables_are_named() {
        let r = Resources::local("p", "http://x");
        let mut env = r.to_env();
        env.retain(|(k, _)| *k != env::JOBS_TABLE);
        assert_eq!(
            Config::from_lookup(lookup(env)),
            Err(ConfigError::Missing(env::JOBS_TABLE))
        );
        let mut env = r.to_env();
        env.push((env::MAX_IN_FLIGHT, "zero".into()));
        assert!(matches!(
            Config::from_lookup(lookup(env)),
            Err(ConfigError::Invalid {
                name: env::MAX_IN_FLIGHT,
                ..
            })
        ));
    }

    #[test]
    fn a_model_past_its_shutdown_stops_the_cold_start_naming_variable_date_and_replacements() {
        let today = time::macros::date!(2026 - 12 - 01);
        let get = |k: &str| (k == env::IMAGE_MODEL).then(|| "gpt-image-1".to_owned());
        let err = ModelSettings::from_lookup_on(get, today).expect_err("gpt-image-1 is shut down");
        let text = err.to_string();
        for part in [env::IMAGE_MODEL, "2026-10-23", "gpt-image-2.5-sunburst"] {
            assert!(text.contains(part), "{part} missing from: {text}");
        }
    }

    #[test]
    fn provider_lists_default_to_openai_alone_and_refuse_unknown_or_repeated_names() {
        let today = time::macros::date!(2026 - 12 - 01);
        let defaults = ModelSettings::from_lookup_on(|_| None, today).expect("defaults");
        assert_eq!(defaults.edit_providers, [Provider::OpenAi]);
        assert_eq!(defaults.vision_providers, [Provider::OpenAi]);
        assert!(!defaults.uses(Provider::Gemini));
        let set = |v: &'static str| move |k: &str| (k == env::EDIT_PROVIDERS).then(|| v.to_owned());
        let both = ModelSettings::from_lookup_on(set("openai, gemini"), today).expect("both");
        assert_eq!(both.edit_providers, [Provider::OpenAi, Provider::Gemini]);
        assert!(both.uses(Provider::Gemini));
        for bad in ["openai,openai", "anthropic", "openai,"] {
            match ModelSettings::from_lookup_on(set(bad), today) {
                Err(ConfigError::Invalid { name, .. }) => assert_eq!(name, env::EDIT_PROVIDERS),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        let keyed = |k: &str| (k == env::GEMINI_API_KEY).then(|| "g-secret".to_owned());
        let keyed = ModelSettings::from_lookup_on(keyed, today).expect("keyed");
        assert_eq!(keyed.gemini_base_url, GEMINI_URL);
        assert!(!format!("{keyed:?}").contains("g-secret"));
    }

    #[test]
    fn unknown_or_misplaced_models_are_refused_and_defaults_are_current() {
        let today = time::macros::date!(2026 - 12 - 01);
        let cases = [
            ("unknown", env::IMAGE_MODEL, "gpt-image-9"),
            ("a vision model for edits", env::IMAGE_MODEL, "gpt-5.4-mini"),
            (
                "an edit model for vision",
                env::VISION_MODEL,
                "gpt-image-2.5-flare",
            ),
            (
                "gpt-4.1-mini after its shutdown",
                env::VISION_MODEL,
                "gpt-4.1-mini",
            ),
        ];
        let later = time::macros::date!(2027 - 01 - 14);
        for (why, name, id) in cases {
            let get = |k: &str| (k == name).then(|| id.to_owned());
            let on = if id == "gpt-4.1-mini" { later } else { today };
            match ModelSettings::from_lookup_on(get, on) {
                Err(ConfigError::Invalid { name: n, .. }) => assert_eq!(n, name, "{why}"),
                other => panic!("{why}: {other:?}"),
            }
        }
        let defaults = ModelSettings::from_lookup_on(|_| None, today).expect("defaults");
        assert_eq!(defaults.image_model.id, catalogue::DEFAULT_IMAGE_MODEL);
        assert_eq!(defaults.vision_model.id, catalogue::DEFAULT_VISION_MODEL);
    }
}

/// The model provider settings (the consumer only).
#[derive(Clone, PartialEq, Eq)]
pub struct ModelSettings {
    pub base_url: String,
    pub api_key_secret_id: Option<String>,
    pub api_key: Option<String>,
    /// The catalogue row of the vision model (configured or the default).
    pub vision_model: &'static Model,
    /// The catalogue row of the edit model (configured or the default).
    pub image_model: &'static Model,
    /// The providers of the edit, in failover order (never empty, no repeats).
    pub edit_providers: Vec<Provider>,
    /// The providers of the vision calls, in failover order (never empty, no repeats).
    pub vision_providers: Vec<Provider>,
    /// Gemini's base URL, key secret and key (used only when a list names gemini).
    pub gemini_base_url: String,
    pub gemini_api_key_secret_id: Option<String>,
    pub gemini_api_key: Option<String>,
}

impl ModelSettings {
    /// Whether a provider list names `provider`.
    pub fn uses(&self, provider: Provider) -> bool {
        self.edit_providers.contains(&provider) || self.vision_providers.contains(&provider)
    }
}

/// Where Google serves the Gemini API.
pub const GEMINI_URL: &str = "https://generativelanguage.googleapis.com";

/// A provider list: known names, comma-separated, at least one, none twice.
fn providers(name: &'static str, value: Option<String>) -> Result<Vec<Provider>, ConfigError> {
    let raw = value.unwrap_or_else(|| Provider::OpenAi.as_str().to_owned());
    let invalid = |reason: String| ConfigError::Invalid { name, reason };
    let mut out = Vec::new();
    for part in raw.split(',').map(str::trim) {
        let provider = Provider::parse(part)
            .ok_or_else(|| invalid(format!("{part:?} is not a provider; known: openai, gemini")))?;
        if out.contains(&provider) {
            return Err(invalid(format!("{part} is listed twice")));
        }
        out.push(provider);
    }
    Ok(out)
}

/// An http(s) base URL, without a trailing slash.
fn http_url(name: &'static str, url: String) -> Result<String, ConfigError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ConfigError::Invalid {
            name,
            reason: format!("not an http(s) URL: {url:?}"),
        });
    }
    Ok(url.trim_end_matches('/').to_owned())
}

impl std::fmt::Debug for ModelSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSettings")
            .field("base_url", &self.base_url)
            .field("api_key_secret_id", &self.api_key_secret_id)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("vision_model", &self.vision_model.id)
            .field("image_model", &self.image_model.id)
            .field("edit_providers", &self.edit_providers)
            .field("vision_providers", &self.vision_providers)
            .field("gemini_base_url", &self.gemini_base_url)
            .field("gemini_api_key_secret_id", &self.gemini_api_key_secret_id)
            .field(
                "gemini_api_key",
                &self.gemini_api_key.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Where the stand-in model server listens by default.
pub const STAND_IN_MODEL_URL: &str = "http://127.0.0.1:8788";

impl ModelSettings {
    pub fn from_env() -> Result<ModelSettings, ConfigError> {
        let vars: HashMap<String, String> = std::env::vars().collect();
        ModelSettings::from_lookup(|k| vars.get(k).cloned())
    }

    /// Reads the settings on today's UTC date: a model past its shutdown is refused here, at
    /// cold start, naming the variable, the date and the models to use instead.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<ModelSettings, ConfigError> {
        ModelSettings::from_lookup_on(get, crate::clock::now().date())
    }

    /// [`ModelSettings::from_lookup`] as of `today`.
    pub fn from_lookup_on(
        get: impl Fn(&str) -> Option<String>,
        today: time::Date,
    ) -> Result<ModelSettings, ConfigError> {
        let opt = |name: &'static str| -> Result<Option<String>, ConfigError> {
            Ok(declared(&get, name)?
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()))
        };
        let api_key_secret_id = opt(env::MODEL_API_KEY_SECRET_ID)?;
        let api_key = opt(env::MODEL_API_KEY)?;
        let keyed = api_key_secret_id.is_some() || api_key.is_some();
        let base_url = opt(env::MODEL_BASE_URL)?.unwrap_or_else(|| {
            if keyed {
                "https://api.openai.com".to_owned()
            } else {
                STAND_IN_MODEL_URL.to_owned()
            }
        });
        let gemini_api_key_secret_id = opt(env::GEMINI_API_KEY_SECRET_ID)?;
        let gemini_api_key = opt(env::GEMINI_API_KEY)?;
        let gemini_keyed = gemini_api_key_secret_id.is_some() || gemini_api_key.is_some();
        let gemini_base_url = opt(env::GEMINI_BASE_URL)?.unwrap_or_else(|| {
            if gemini_keyed {
                GEMINI_URL.to_owned()
            } else {
                STAND_IN_MODEL_URL.to_owned()
            }
        });
        Ok(ModelSettings {
            base_url: http_url(env::MODEL_BASE_URL, base_url)?,
            edit_providers: providers(env::EDIT_PROVIDERS, opt(env::EDIT_PROVIDERS)?)?,
            vision_providers: providers(env::VISION_PROVIDERS, opt(env::VISION_PROVIDERS)?)?,
            gemini_base_url: http_url(env::GEMINI_BASE_URL, gemini_base_url)?,
            gemini_api_key_secret_id,
            gemini_api_key,
            api_key_secret_id,
            api_key,
            vision_model: model(
                env::VISION_MODEL,
                opt(env::VISION_MODEL)?,
                Serves::Vision,
                today,
            )?,
            image_model: model(
                env::IMAGE_MODEL,
                opt(env::IMAGE_MODEL)?,
                Serves::Edit,
                today,
            )?,
        })
    }
}

/// The catalogue row a model variable names (or the default), refused when unknown, of the
/// wrong kind, or shut down on `today`.
fn model(
    name: &'static str,
    value: Option<String>,
    serves: Serves,
    today: time::Date,
) -> Result<&'static Model, ConfigError> {
    let id = value.unwrap_or_else(|| {
        match serves {
            Serves::Edit => catalogue::DEFAULT_IMAGE_MODEL,
            Serves::Vision => catalogue::DEFAULT_VISION_MODEL,
        }
        .to_owned()
    });
    catalogue::check_configured(&id, serves, today).map_err(|e| ConfigError::Invalid {
        name,
        reason: e.to_string(),
    })
}

/// Where the stand-in Stripe listens by default (the port `stripe-mock` uses).
pub const STAND_IN_STRIPE_URL: &str = "http://127.0.0.1:12111";

/// Buying credits: the catalogue, where Stripe is, and how to find its keys. The keys
/// themselves are read at cold start ([`crate::adapters::payments::setup`]); the plain-value forms are
/// for local development.
#[derive(Clone, PartialEq, Eq)]
pub struct PaymentSettings {
    pub packs: crate::domain::Packs,
    /// Allowed prefixes of success and cancel URLs (no open redirect); never empty.
    pub return_urls: Vec<reqwest::Url>,
    pub stripe_base_url: String,
    pub stripe_secret_id: Option<String>,
    pub stripe_secret_key: Option<String>,
    pub stripe_webhook_secret: Option<String>,
    /// App Store purchases, when both the roots and the bundle id are configured.
    pub apple: Option<crate::adapters::payments::apple::AppleSettings>,
    /// Google Play purchases, when the package name and the key's secret id are configured.
    pub google_play: Option<crate::adapters::payments::google::GooglePlaySettings>,
    /// A store purchase older than this (seconds) is checked online before it grants, or
    /// refused without the store's server API (rule 13).
    pub store_max_age_secs: i64,
    /// What becomes of a store purchase bound to no account ([`env::UNBOUND_STORE_PURCHASES`]).
    pub unbound_store_purchases: UnboundPurchases,
}

/// Whether an App Store or Google Play purchase that names no account (no `appAccountToken`,
/// no `obfuscatedAccountId`) is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnboundPurchases {
    /// Refused: only the account the app bought for can claim a purchase.
    #[default]
    Refuse,
    /// Granted to whoever posts it first.
    Accept,
}

/// `refuse` (the default) or `accept`.
fn unbound_purchases(
    opt: &impl Fn(&'static str) -> Result<Option<String>, ConfigError>,
) -> Result<UnboundPurchases, ConfigError> {
    let name = env::UNBOUND_STORE_PURCHASES;
    match opt(name)?.as_deref() {
        None | Some("refuse") => Ok(UnboundPurchases::Refuse),
        Some("accept") => Ok(UnboundPurchases::Accept),
        Some(other) => Err(ConfigError::Invalid {
            name,
            reason: format!("expected refuse or accept, got {other:?}"),
        }),
    }
}

impl std::fmt::Debug for PaymentSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("PaymentSettings")
            .field("packs", &self.packs)
            .field("return_urls", &self.return_urls)
            .field("stripe_base_url", &self.stripe_base_url)
            .field("stripe_secret_id", &self.stripe_secret_id)
            .field("stripe_secret_key", &redacted(&self.stripe_secret_key))
            .field(
                "stripe_webhook_secret",
                &redacted(&self.stripe_webhook_secret),
            )
            .field("apple", &self.apple)
            .field("google_play", &self.google_play)
            .field("store_max_age_secs", &self.store_max_age_secs)
            .field("unbound_store_purchases", &self.unbound_store_purchases)
            .finish()
    }
}

impl PaymentSettings {
    pub const DEFAULT_RETURN_URLS: &str = "http://localhost:8787/";
    /// [`env::STORE_PURCHASE_MAX_AGE_HOURS`]'s default: three days, Google's own limit for
    /// an unacknowledged purchase, and longer than any honest delay between buying and
    /// posting.
    pub const DEFAULT_STORE_MAX_AGE_HOURS: i64 = 72;

    pub fn from_env() -> Result<PaymentSettings, ConfigError> {
        let vars: HashMap<String, String> = std::env::vars().collect();
        PaymentSettings::from_lookup(|k| vars.get(k).cloned())
    }

    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<PaymentSettings, ConfigError> {
        let opt = |name: &'static str| -> Result<Option<String>, ConfigError> {
            Ok(declared(&get, name)?
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()))
        };
        let packs = crate::domain::Packs::parse(
            &opt(env::CREDIT_PACKS)?.unwrap_or_else(|| crate::domain::Packs::DEFAULT.to_owned()),
        )
        .map_err(|e| ConfigError::Invalid {
            name: env::CREDIT_PACKS,
            reason: e.to_string(),
        })?;
        let return_urls = opt(env::CHECKOUT_RETURN_URLS)?
            .unwrap_or_else(|| Self::DEFAULT_RETURN_URLS.to_owned())
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(|u| {
                reqwest::Url::parse(u)
                    .ok()
                    .filter(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some())
                    .ok_or_else(|| ConfigError::Invalid {
                        name: env::CHECKOUT_RETURN_URLS,
                        reason: format!("not an http(s) URL: {u:?}"),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if return_urls.is_empty() {
            return Err(ConfigError::Invalid {
                name: env::CHECKOUT_RETURN_URLS,
                reason: "no URL given".to_owned(),
            });
        }
        let stripe_secret_id = opt(env::STRIPE_SECRET_ID)?;
        let stripe_base_url = opt(env::STRIPE_BASE_URL)?.unwrap_or_else(|| {
            if stripe_secret_id.is_some() {
                "https://api.stripe.com".to_owned()
            } else {
                STAND_IN_STRIPE_URL.to_owned()
            }
        });
        let stripe_base_url = http_url(env::STRIPE_BASE_URL, stripe_base_url)?;
        Ok(PaymentSettings {
            packs,
            return_urls,
            stripe_base_url,
            stripe_secret_id,
            stripe_secret_key: opt(env::STRIPE_SECRET_KEY)?,
            stripe_webhook_secret: opt(env::STRIPE_WEBHOOK_SECRET)?,
            apple: apple_settings(&opt)?,
            google_play: google_play_settings(&opt)?,
            store_max_age_secs: store_max_age_hours(&opt)? * 3600,
            unbound_store_purchases: unbound_purchases(&opt)?,
        })
    }
}

/// [`env::STORE_PURCHASE_MAX_AGE_HOURS`], 1-720.
fn store_max_age_hours(
    opt: &impl Fn(&'static str) -> Result<Option<String>, ConfigError>,
) -> Result<i64, ConfigError> {
    let name = env::STORE_PURCHASE_MAX_AGE_HOURS;
    match opt(name)? {
        None => Ok(PaymentSettings::DEFAULT_STORE_MAX_AGE_HOURS),
        Some(v) => match v.parse::<i64>() {
            Ok(h) if (1..=720).contains(&h) => Ok(h),
            _ => Err(ConfigError::Invalid {
                name,
                reason: format!("expected hours in 1..=720, got {v:?}"),
            }),
        },
    }
}

/// Google Play purchases: on when the package name and the key (its secret id, or locally the
/// key itself) are set; then the push subscription's audience and service account must be set
/// too.
fn google_play_settings(
    opt: &impl Fn(&'static str) -> Result<Option<String>, ConfigError>,
) -> Result<Option<crate::adapters::payments::google::GooglePlaySettings>, ConfigError> {
    let or = |name, default: &str| -> Result<String, ConfigError> {
        http_url(name, opt(name)?.unwrap_or_else(|| default.to_owned()))
    };
    // Every name is read whatever is set, so the table's test sees them all.
    let (package, secret_id, key) = (
        opt(env::GOOGLE_PLAY_PACKAGE_NAME)?,
        opt(env::GOOGLE_PLAY_SECRET_ID)?,
        opt(env::GOOGLE_PLAY_KEY)?,
    );
    let publisher_url = or(
        env::GOOGLE_PLAY_PUBLISHER_URL,
        "https://androidpublisher.googleapis.com",
    )?;
    let token_url = or(
        env::GOOGLE_PLAY_TOKEN_URL,
        "https://oauth2.googleapis.com/token",
    )?;
    let certs_url = or(
        env::GOOGLE_CERTS_URL,
        "https://www.googleapis.com/oauth2/v3/certs",
    )?;
    let (audience, account) = (
        opt(env::GOOGLE_PLAY_PUSH_AUDIENCE)?,
        opt(env::GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT)?,
    );
    use crate::adapters::payments::google::KeySource;
    let source = match (secret_id, key) {
        (Some(id), _) => KeySource::Secret(id),
        (None, Some(key)) => KeySource::Plain(key.into()),
        (None, None) => return Ok(None),
    };
    let Some(package_name) = package else {
        return Ok(None);
    };
    let required = |v: Option<String>, name| {
        v.ok_or_else(|| ConfigError::Invalid {
            name,
            reason: format!("required with {}", env::GOOGLE_PLAY_PACKAGE_NAME),
        })
    };
    Ok(Some(
        crate::adapters::payments::google::GooglePlaySettings {
            package_name,
            publisher_url,
            token_url,
            push_audience: required(audience, env::GOOGLE_PLAY_PUSH_AUDIENCE)?,
            push_service_account: required(account, env::GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT)?,
            certs_url,
            key: source,
        },
    ))
}

/// App Store purchases: on when the roots and the bundle id are set, each checked here.
fn apple_settings(
    opt: &impl Fn(&'static str) -> Result<Option<String>, ConfigError>,
) -> Result<Option<crate::adapters::payments::apple::AppleSettings>, ConfigError> {
    use crate::adapters::payments::apple::{AppleEnvironment, AppleSettings, parse_roots};
    let invalid = |name: &'static str, reason: String| ConfigError::Invalid { name, reason };
    // Every name is read whatever is set, so the table's test sees them all.
    let (roots, bundle_id) = (opt(env::APPLE_ROOT_CERTS)?, opt(env::APPLE_BUNDLE_ID)?);
    let (environment, app_apple_id) = (opt(env::APPLE_ENVIRONMENT)?, opt(env::APPLE_APP_APPLE_ID)?);
    let (api_secret, api_key, api_url) = (
        opt(env::APPLE_API_SECRET_ID)?,
        opt(env::APPLE_API_KEY)?,
        opt(env::APPLE_API_URL)?,
    );
    let (Some(roots), Some(bundle_id)) = (roots, bundle_id) else {
        return Ok(None);
    };
    let roots = parse_roots(&roots).map_err(|e| invalid(env::APPLE_ROOT_CERTS, e.to_string()))?;
    let environment = match environment {
        None => AppleEnvironment::Production,
        Some(e) => AppleEnvironment::parse(&e).ok_or_else(|| {
            invalid(
                env::APPLE_ENVIRONMENT,
                format!("{e:?}: expected Production or Sandbox"),
            )
        })?,
    };
    let app_apple_id = app_apple_id
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| invalid(env::APPLE_APP_APPLE_ID, format!("{v:?}: not an integer")))
        })
        .transpose()?;
    let api = apple_api_settings(environment, api_secret, api_key, api_url)?;
    Ok(Some(AppleSettings {
        roots,
        bundle_id,
        environment,
        app_apple_id,
        api,
    }))
}

/// The App Store Server API (consumption answers): on when its key's secret or the key is set.
fn apple_api_settings(
    environment: crate::adapters::payments::apple::AppleEnvironment,
    secret_id: Option<String>,
    key: Option<String>,
    url: Option<String>,
) -> Result<Option<crate::adapters::payments::apple::AppleApiSettings>, ConfigError> {
    use crate::adapters::payments::apple::AppleApiSettings;
    use crate::adapters::payments::apple_api::default_url;
    use crate::adapters::payments::google::KeySource;
    let key = match (secret_id, key) {
        (Some(id), _) => KeySource::Secret(id),
        (None, Some(key)) => KeySource::Plain(key.into()),
        (None, None) => return Ok(None),
    };
    let url = url.unwrap_or_else(|| default_url(environment).to_owned());
    Ok(Some(AppleApiSettings {
        url: http_url(env::APPLE_API_URL, url)?,
        key,
    }))
}

/// How the logs are written, as Lambda's advanced logging controls set it (read by
/// [`crate::adapters::telemetry::init`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// The filter directive, lower-cased (`AWS_LAMBDA_LOG_LEVEL`; default `info`).
    pub level: String,
    /// Plain text lines instead of JSON (`AWS_LAMBDA_LOG_FORMAT=Text`).
    pub text: bool,
}

impl LogSettings {
    /// Reads the process environment. Never fails: logging must start whatever is set.
    pub fn from_env() -> LogSettings {
        LogSettings::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads from any lookup (tests use a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> LogSettings {
        LogSettings {
            level: get(env::LOG_LEVEL)
                .unwrap_or_else(|| "info".to_owned())
                .to_lowercase(),
            text: get(env::LOG_FORMAT).is_some_and(|v| v.eq_ignore_ascii_case("text")),
        }
    }
}

/// The operator commands' own settings (`atelier-admin`; no function reads them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AdminSettings {
    /// Who runs the commands (`ATELIER_OPERATOR`), recorded on a grant's ledger row.
    pub operator: Option<String>,
}

impl AdminSettings {
    pub fn from_env() -> AdminSettings {
        AdminSettings::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads from any lookup (tests use a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> AdminSettings {
        AdminSettings {
            operator: get(env::OPERATOR)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()),
        }
    }
}

/// The configured model ids (or the defaults), as written and unchecked: the sweeper's daily
/// lifecycle check reads them, and must keep running (and refunding) when one is shut down.
pub fn configured_model_ids() -> [String; 2] {
    let read = |name: &'static str, default: &str| {
        std::env::var(name)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_owned())
    };
    [
        read(env::IMAGE_MODEL, catalogue::DEFAULT_IMAGE_MODEL),
        read(env::VISION_MODEL, catalogue::DEFAULT_VISION_MODEL),
    ]
}
