//! Building the Stripe side at cold start: the keys read once from Secrets Manager when a
//! secret id is configured (else the plain local values). Without keys, buying is off: the
//! checkout and the webhook answer `503 PAYMENTS_NOT_CONFIGURED`, and nothing is ever
//! accepted unsigned.

use super::Stripe;
use super::apple_api::{ApiKey, AppStoreApi};
use super::google::{GooglePlay, KeySource, ServiceAccountKey};
use super::stripe::StripeClient;
use crate::adapters::aws::Clients;
use crate::config::{ConfigError, PaymentSettings, env};

/// Why the Stripe side could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("reading the payment keys from Secrets Manager ({secret_id})")]
    Secret {
        secret_id: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(
        "the Stripe secret {secret_id} is not a JSON object with secret_key and webhook_secret"
    )]
    SecretShape { secret_id: String },
    #[error(
        "the Google Play secret {secret_id} is not a service account's JSON key (client_email, private_key)"
    )]
    KeyShape { secret_id: String },
    #[error("building the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error(
        "the App Store Server API secret {secret_id} is not a JSON object with keyId, issuerId and a P-256 privateKey"
    )]
    ApiKeyShape { secret_id: String },
}

#[derive(serde::Deserialize)]
struct Keys {
    secret_key: String,
    webhook_secret: String,
}

/// The Stripe side from `settings`, reading the secret when one is configured; `None` when
/// no keys are configured at all.
pub async fn connect(
    settings: &PaymentSettings,
    clients: &Clients,
) -> Result<Option<Stripe>, SetupError> {
    let keys = match &settings.stripe_secret_id {
        Some(id) => {
            let keys: Keys = read_secret(clients, id)
                .await?
                .and_then(|s| serde_json::from_str(&s).ok())
                .ok_or_else(|| SetupError::SecretShape {
                    secret_id: id.clone(),
                })?;
            Some(keys)
        }
        None => match (&settings.stripe_secret_key, &settings.stripe_webhook_secret) {
            (Some(k), Some(w)) => Some(Keys {
                secret_key: k.clone(),
                webhook_secret: w.clone(),
            }),
            (None, None) => None,
            _ => {
                return Err(ConfigError::Invalid {
                    name: env::STRIPE_WEBHOOK_SECRET,
                    reason: format!(
                        "{} and {} are set together or not at all",
                        env::STRIPE_SECRET_KEY,
                        env::STRIPE_WEBHOOK_SECRET
                    ),
                }
                .into());
            }
        },
    };
    // The deployed secret starts with empty keys until the operator stores real ones
    // (infra/README.md): buying stays off rather than the API failing to start.
    let Some(keys) = keys.filter(|k| !k.secret_key.is_empty() && !k.webhook_secret.is_empty())
    else {
        tracing::info!("payments_not_configured");
        return Ok(None);
    };
    let client = StripeClient::new(&settings.stripe_base_url, keys.secret_key)
        .map_err(SetupError::Client)?;
    tracing::info!(base_url = %settings.stripe_base_url, "payments_configured");
    Ok(Some(Stripe::new(client, keys.webhook_secret)))
}

/// How long one Android Publisher or certs call may take (the app waits on the purchase).
const GOOGLE_PLAY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Google Play from `settings`, reading the service account's key from its secret; `None`
/// when Google Play is not configured, or its secret holds no key yet (the deployed secret
/// starts empty until the operator stores one).
pub async fn connect_google_play(
    settings: &PaymentSettings,
    clients: &Clients,
) -> Result<Option<GooglePlay>, SetupError> {
    let Some(play) = &settings.google_play else {
        return Ok(None);
    };
    let (id, value) = match &play.key {
        KeySource::Secret(id) => (id.as_str(), read_secret(clients, id).await?),
        KeySource::Plain(key) => (env::GOOGLE_PLAY_KEY, Some(key.0.clone())),
    };
    let key: Option<ServiceAccountKey> = match value.as_deref().map(str::trim) {
        None | Some("" | "{}") => None,
        Some(text) => Some(
            serde_json::from_str(text).map_err(|_| SetupError::KeyShape {
                secret_id: id.to_owned(),
            })?,
        ),
    };
    let Some(key) = key.filter(|k| !k.client_email.is_empty() && !k.private_key_pem.is_empty())
    else {
        tracing::info!("google_play_not_configured");
        return Ok(None);
    };
    let client =
        GooglePlay::new(play.clone(), &key, GOOGLE_PLAY_TIMEOUT).map_err(SetupError::Client)?;
    tracing::info!(package_name = %play.package_name, publisher_url = %play.publisher_url, "google_play_configured");
    Ok(Some(client))
}

/// The App Store Server API client from `settings`, reading its key from its secret; `None`
/// when consumption answers are not configured or the secret holds no key yet.
pub async fn connect_app_store_api(
    settings: &PaymentSettings,
    clients: &Clients,
) -> Result<Option<AppStoreApi>, SetupError> {
    let Some((apple, api)) = settings
        .apple
        .as_ref()
        .and_then(|a| a.api.as_ref().map(|api| (a, api)))
    else {
        return Ok(None);
    };
    let (id, value) = match &api.key {
        KeySource::Secret(id) => (id.as_str(), read_secret(clients, id).await?),
        KeySource::Plain(key) => (env::APPLE_API_KEY, Some(key.0.clone())),
    };
    let shape = || SetupError::ApiKeyShape {
        secret_id: id.to_owned(),
    };
    let key: Option<ApiKey> = match value.as_deref().map(str::trim) {
        None | Some("" | "{}") => None,
        Some(text) => Some(serde_json::from_str(text).map_err(|_| shape())?),
    };
    let Some(key) = key.filter(|k| !k.private_key.is_empty()) else {
        tracing::info!("app_store_api_not_configured");
        return Ok(None);
    };
    let client = AppStoreApi::new(&api.url, &apple.bundle_id, &key).map_err(|_| shape())?;
    tracing::info!(url = %api.url, key_id = %key.key_id, "app_store_api_configured");
    Ok(Some(client))
}

async fn read_secret(clients: &Clients, id: &str) -> Result<Option<String>, SetupError> {
    clients
        .secret_string(id)
        .await
        .map_err(|source| SetupError::Secret {
            secret_id: id.to_owned(),
            source,
        })
}
