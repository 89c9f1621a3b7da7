//! Building the Stripe side at cold start: the keys read once from Secrets Manager when a
//! secret id is configured (else the plain local values). Without keys, buying is off: the
//! checkout and the webhook answer `503 PAYMENTS_NOT_CONFIGURED`, and nothing is ever
//! accepted unsigned.

use super::Stripe;
use super::stripe::StripeClient;
use crate::adapters::aws::Clients;
use crate::config::{ConfigError, PaymentSettings, env};

/// Why the Stripe side could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("reading the Stripe keys from Secrets Manager ({secret_id})")]
    Secret {
        secret_id: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(
        "the Stripe secret {secret_id} is not a JSON object with secret_key and webhook_secret"
    )]
    SecretShape { secret_id: String },
    #[error("building the Stripe client")]
    Client(#[source] reqwest::Error),
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
            let value = clients
                .secret_string(id)
                .await
                .map_err(|source| SetupError::Secret {
                    secret_id: id.clone(),
                    source,
                })?;
            let keys: Keys = value
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
