//! How webhooks are delivered, and whether endpoints may be inside the network.

use super::env;
use super::read::{ConfigError, Get, number};

/// How webhooks are delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookSettings {
    pub retry: crate::domain::webhooks::RetryPolicy,
    /// One POST's limit.
    pub timeout_secs: u64,
    /// POSTs one endpoint may have in flight at once (a slow receiver is not flooded).
    pub endpoint_concurrency: u32,
    /// Whether endpoints may be inside the network (local runs only).
    pub private_addresses: PrivateAddresses,
}

impl Default for WebhookSettings {
    fn default() -> WebhookSettings {
        WebhookSettings {
            retry: crate::domain::webhooks::RetryPolicy::default(),
            timeout_secs: 15,
            endpoint_concurrency: 4,
            private_addresses: PrivateAddresses::Refuse,
        }
    }
}

impl WebhookSettings {
    pub(super) fn from_lookup(get: &Get<'_>) -> Result<WebhookSettings, ConfigError> {
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
fn private_addresses(get: &Get<'_>) -> Result<PrivateAddresses, ConfigError> {
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

/// Whether webhooks may go to loopback, private and link-local addresses
/// (`ATELIER_WEBHOOK_PRIVATE_ADDRESSES`): only local runs allow it, where the receivers are on
/// this machine. Refused by default, so a deployment never POSTs inside its own network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrivateAddresses {
    #[default]
    Refuse,
    Allow,
}
