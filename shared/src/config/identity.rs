//! What the code reads from the verified token, and the key of the addresses' hashes.

use super::env;
use super::read::{ConfigError, Get};
use crate::domain::identity::{ADDRESS_KEY_MIN_BYTES, AddressKey};

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

/// [`env::ADDRESS_KEY`], when set: at least [`ADDRESS_KEY_MIN_BYTES`] bytes.
pub(super) fn address_key(get: &Get<'_>) -> Result<Option<AddressKey>, ConfigError> {
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
pub(super) fn email_verified_claim(get: &Get<'_>) -> Result<String, ConfigError> {
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
