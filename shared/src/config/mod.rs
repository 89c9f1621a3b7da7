//! Configuration: the only reader of environment variables. Read once at cold start into
//! typed values; a missing or malformed variable fails with its name. Plain values below the
//! adapters that use them: nothing here imports an adapter, a store or a service.

use std::collections::HashMap;

pub mod env;
mod identity;
mod limits;
mod models;
mod operations;
mod payments;
mod push;
mod read;
mod resources;
mod stores;
mod webhooks;

pub use identity::IdentitySettings;
pub use limits::*;
pub use models::*;
pub use operations::*;
pub use payments::*;
pub use push::PushSettings;
pub use read::ConfigError;
pub use resources::Resources;
pub use stores::*;
pub use webhooks::*;

use identity::{address_key, email_verified_claim};
use read::declared;

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

#[cfg(test)]
mod tests;
