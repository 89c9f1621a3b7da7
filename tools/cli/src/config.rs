//! Where the client keeps its state, and which API and token a command uses.
//!
//! `ATELIER_HOME` (default `$XDG_CONFIG_HOME/atelier`, else `~/.config/atelier`) holds
//! `config.json` (mode 0600: the last API, and the logins the OS keychain could not keep, one
//! per API URL, so a local login and a real deployment's do not overwrite each other) and
//! `pending/` (the journal). Logins go to the OS keychain where one answers (`vault`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::journal::write_private;
use crate::login::Login;
use crate::vault::{self, Choice, Place};

/// The API when nothing else says otherwise: `cargo xtask dev`.
pub const DEFAULT_API: &str = "http://127.0.0.1:8787";

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The saved login for `api`, renewed first when it expires within a minute and can be.
pub async fn current_login(
    home: &Path,
    saved: &mut Saved,
    api: &str,
) -> anyhow::Result<Option<Login>> {
    let Some(login) = saved.login(api)? else {
        return Ok(None);
    };
    let due = login.expires_at.is_some_and(|t| t <= now_secs() + 60);
    let Some(refresh) = login.refresh.as_ref().filter(|_| due) else {
        return Ok(Some(login));
    };
    let tokens = crate::oidc::renew(&reqwest::Client::new(), refresh)
        .await
        .context("renewing the login: run `atelier login` again")?;
    let renewed = Login {
        user: token_subject(&tokens.id_token).or(login.user),
        token: tokens.id_token,
        expires_at: Some(now_secs() + tokens.expires_in),
        refresh: login.refresh,
    };
    // The renewed login goes back where the old one was.
    let place = match saved.keychain.contains(api) {
        true => Choice::Keychain,
        false => Choice::File,
    };
    saved.store(home, api, renewed.clone(), place)?;
    Ok(Some(renewed))
}

/// `config.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Saved {
    /// The API used when neither `--api` nor `ATELIER_API` is given (the last one logged in to).
    #[serde(default)]
    pub api: Option<String>,
    /// Logins kept in this file: where no keychain answered, or `ATELIER_CREDENTIALS=file`.
    #[serde(default)]
    pub logins: BTreeMap<String, Login>,
    /// The APIs whose login is in the OS keychain (no secret in this file).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub keychain: BTreeSet<String>,
}

/// The client's folder.
pub fn home() -> anyhow::Result<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(h) = var("ATELIER_HOME") {
        return Ok(PathBuf::from(h));
    }
    if let Some(x) = var("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(x).join("atelier"));
    }
    var("HOME")
        .map(|h| PathBuf::from(h).join(".config").join("atelier"))
        .context("no home folder: set ATELIER_HOME")
}

impl Saved {
    fn path(home: &Path) -> PathBuf {
        home.join("config.json")
    }

    pub fn load(home: &Path) -> anyhow::Result<Saved> {
        let path = Saved::path(home);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not valid; fix or delete it", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Saved::default()),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    pub fn save(&self, home: &Path) -> anyhow::Result<()> {
        let bytes = serde_json::to_vec_pretty(self).context("encoding the configuration")?;
        write_private(&Saved::path(home), &bytes)
    }

    /// The login for `api`, from the keychain or this file.
    pub fn login(&self, api: &str) -> anyhow::Result<Option<Login>> {
        if !self.keychain.contains(api) {
            return Ok(self.logins.get(api).cloned());
        }
        vault::get(api).with_context(|| format!("reading the login for {api}"))
    }

    /// Keeps `login` for `api` where `choice` says (`Auto`: the keychain when it answers, else
    /// this file), forgets it from the other place, and saves the file.
    pub fn store(
        &mut self,
        home: &Path,
        api: &str,
        login: Login,
        choice: Choice,
    ) -> anyhow::Result<Place> {
        let place = match choice {
            Choice::File => Place::File,
            Choice::Keychain => {
                vault::put(api, &login).context("keeping the login in the OS keychain")?;
                Place::Keychain
            }
            Choice::Auto => match vault::put(api, &login) {
                Ok(()) => Place::Keychain,
                Err(e) => {
                    eprintln!("note: {e}; keeping the login in config.json (mode 0600)");
                    Place::File
                }
            },
        };
        match place {
            Place::Keychain => {
                self.logins.remove(api);
                self.keychain.insert(api.to_owned());
            }
            Place::File => {
                self.logins.insert(api.to_owned(), login);
                if self.keychain.remove(api) {
                    // Best effort: the keychain may be the reason the file is used.
                    let _ = vault::delete(api);
                }
            }
        }
        self.save(home)?;
        Ok(place)
    }

    /// Forgets the login for `api` in both places; whether there was one.
    pub fn forget(&mut self, home: &Path, api: &str) -> anyhow::Result<bool> {
        let in_file = self.logins.remove(api).is_some();
        let in_keychain = match self.keychain.remove(api) {
            true => vault::delete(api).context("removing the login from the OS keychain")?,
            false => false,
        };
        self.save(home)?;
        Ok(in_file || in_keychain)
    }
}

/// The API URL: the flag or `ATELIER_API` (both arrive as `flag`), else the saved one, else the
/// default.
pub fn api_url(flag: Option<&str>, saved: &Saved) -> String {
    flag.or(saved.api.as_deref())
        .unwrap_or(DEFAULT_API)
        .trim_end_matches('/')
        .to_owned()
}

/// The `sub` claim of a JWT, read without verifying (only the server can verify; this names the
/// user in messages and in the journal's fingerprint).
pub fn token_subject(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("sub")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_beats_the_saved_api_which_beats_the_default() {
        let mut saved = Saved::default();
        assert_eq!(api_url(None, &saved), DEFAULT_API);
        saved.api = Some("http://saved:1/".into());
        assert_eq!(api_url(None, &saved), "http://saved:1");
        assert_eq!(
            api_url(Some("https://x.example/"), &saved),
            "https://x.example"
        );
    }

    #[test]
    fn the_subject_is_read_from_a_jwt_and_anything_else_has_none() {
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let token = format!(
            "{}.{}.sig",
            b64(r#"{"alg":"RS256"}"#),
            b64(r#"{"sub":"alice","aud":"atelier"}"#)
        );
        assert_eq!(token_subject(&token).as_deref(), Some("alice"));
        assert_eq!(token_subject("opaque-token"), None);
        assert_eq!(token_subject("a.%%%.c"), None);
    }
}
