//! Where pushes go and where their credentials are.

use super::env;
use super::read::{ConfigError, Get};

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
    pub(super) fn from_lookup(get: &Get<'_>) -> Result<PushSettings, ConfigError> {
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
