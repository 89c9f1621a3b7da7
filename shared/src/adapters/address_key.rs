//! The key of the addresses' hashes, at the API's cold start: read once from Secrets Manager
//! when a secret id is configured, else the plain local value. The API refuses to start
//! without it, so no signup grant is ever given without its address being recorded.

use crate::adapters::aws::Clients;
use crate::config::{IdentitySettings, env};
use crate::domain::AddressKey;
use crate::domain::identity::ADDRESS_KEY_MIN_BYTES;

/// Why the key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum AddressKeyError {
    #[error(
        "neither {} nor {} is set: the API needs the address key",
        env::ADDRESS_KEY_SECRET_ID,
        env::ADDRESS_KEY
    )]
    Missing,
    #[error("reading the address key from Secrets Manager ({secret_id})")]
    Secret {
        secret_id: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error(
        "the address key secret {secret_id} is not a string of at least {ADDRESS_KEY_MIN_BYTES} bytes"
    )]
    SecretShape { secret_id: String },
}

/// The key: the secret's when one is configured, else [`env::ADDRESS_KEY`]'s.
pub async fn load(
    settings: &IdentitySettings,
    clients: &Clients,
) -> Result<AddressKey, AddressKeyError> {
    let Some(id) = &settings.address_key_secret_id else {
        return settings.address_key.clone().ok_or(AddressKeyError::Missing);
    };
    let value = clients
        .secret_string(id)
        .await
        .map_err(|source| AddressKeyError::Secret {
            secret_id: id.clone(),
            source,
        })?;
    value
        .as_deref()
        .and_then(AddressKey::parse)
        .ok_or_else(|| AddressKeyError::SecretShape {
            secret_id: id.clone(),
        })
}
