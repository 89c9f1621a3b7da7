//! Every environment variable the code reads: ONE table. The constants, [`env::ALL`] (what
//! `atelier-admin env-names` prints and the infrastructure sets) and the readers below all
//! come from it: a name is declared here or it cannot be read ([`ConfigError::Undeclared`]),
//! and a unit test records every name the readers ask for and compares it with the table.

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
    SIGNING_SECRET_ID = "ATELIER_SIGNING_SECRET_ID", false,
        "Secrets Manager id of the content credentials' signing key, a JSON object {\"certificate_chain\": \"PEM, the signing certificate first\", \"private_key\": \"PKCS #8 PEM, P-256\"}, read by the consumer at cold start: every delivered result is signed with it (C2PA)";
    SIGNING_CREDENTIALS = "ATELIER_SIGNING_CREDENTIALS", false,
        "the signing key's JSON itself (local development and tests only; prefer the secret)";
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
