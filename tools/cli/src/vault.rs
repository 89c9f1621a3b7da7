//! Where a login's secrets live: the OS keychain when one answers (the macOS Keychain, the
//! Windows Credential Manager, the Secret Service on Linux and the BSDs), else `config.json`
//! at 0600 as before. A token in a keychain is encrypted at rest and out of backups of the
//! home folder; a server without a desktop session has no keychain, so the file stays.

use crate::login::Login;

/// The keychain entry's service; its account is the API URL (one login per API, as in the file).
pub const SERVICE: &str = "atelier";
/// `auto` (the default: the keychain when it answers, else the file), `keychain` or `file`.
pub const STORE_ENV: &str = "ATELIER_CREDENTIALS";

/// Where the user asked logins to be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Auto,
    Keychain,
    File,
}

impl Choice {
    pub fn parse(value: Option<&str>) -> Result<Choice, VaultError> {
        match value.map(str::trim) {
            None | Some("") | Some("auto") => Ok(Choice::Auto),
            Some("keychain") => Ok(Choice::Keychain),
            Some("file") => Ok(Choice::File),
            Some(other) => Err(VaultError::Choice(other.chars().take(40).collect())),
        }
    }

    pub fn from_env() -> Result<Choice, VaultError> {
        Choice::parse(std::env::var(STORE_ENV).ok().as_deref())
    }
}

/// Where a login was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Keychain,
    File,
}

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("{STORE_ENV}={0:?}: expected auto, keychain or file")]
    Choice(String),
    #[error("the OS keychain did not answer ({STORE_ENV}=file keeps logins in config.json)")]
    Keychain(#[from] keyring::Error),
    #[error("the keychain's login for {api} is not readable: run `atelier login` again")]
    Unreadable {
        api: String,
        #[source]
        source: serde_json::Error,
    },
}

fn entry(api: &str) -> Result<keyring::Entry, VaultError> {
    Ok(keyring::Entry::new(SERVICE, api)?)
}

/// Keeps `login` for `api` in the keychain, replacing any earlier one.
pub fn put(api: &str, login: &Login) -> Result<(), VaultError> {
    let json = serde_json::to_string(login).map_err(|source| VaultError::Unreadable {
        api: api.to_owned(),
        source,
    })?;
    entry(api)?.set_password(&json)?;
    Ok(())
}

/// The keychain's login for `api`, if it holds one.
pub fn get(api: &str) -> Result<Option<Login>, VaultError> {
    match entry(api)?.get_password() {
        Ok(json) => {
            serde_json::from_str(&json)
                .map(Some)
                .map_err(|source| VaultError::Unreadable {
                    api: api.to_owned(),
                    source,
                })
        }
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Removes the keychain's login for `api`; whether there was one.
pub fn delete(api: &str) -> Result<bool, VaultError> {
    match entry(api)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_auto_unless_named_and_a_wrong_name_is_refused() {
        assert_eq!(Choice::parse(None).ok(), Some(Choice::Auto));
        assert_eq!(Choice::parse(Some(" auto ")).ok(), Some(Choice::Auto));
        assert_eq!(Choice::parse(Some("keychain")).ok(), Some(Choice::Keychain));
        assert_eq!(Choice::parse(Some("file")).ok(), Some(Choice::File));
        let refused = Choice::parse(Some("vault")).err().map(|e| e.to_string());
        assert_eq!(
            refused.as_deref(),
            Some("ATELIER_CREDENTIALS=\"vault\": expected auto, keychain or file")
        );
    }
}
