//! A saved login: what the keychain (`vault`) or `config.json` keeps per API.

use serde::{Deserialize, Serialize};

use crate::oidc::Refresh;

/// A saved login.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Login {
    pub token: String,
    /// Who the token is for (its `sub`), for messages and the journal's fingerprint.
    #[serde(default)]
    pub user: Option<String>,
    /// Seconds since the Unix epoch, when known.
    #[serde(default)]
    pub expires_at: Option<u64>,
    /// What renews the token before it expires (`login --oidc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh: Option<Refresh>,
}
