//! How the readers look a variable up: only names [`super::env`] declares, a required one
//! non-blank, a number within its bounds; and the error naming the variable.

use super::env;

/// A variable that is missing or malformed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("environment variable {0} is required but not set")]
    Missing(&'static str),
    #[error("environment variable {name} is invalid: {reason}")]
    Invalid { name: &'static str, reason: String },
    /// A reader asked for a name [`env::ALL`] does not declare (a bug: declare it there).
    #[error("environment variable {0} is read but not declared in config::env")]
    Undeclared(&'static str),
}

/// The one way the fallible readers look a variable up: only names the table declares.
pub(super) fn declared(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<String>, ConfigError> {
    match env::find(name) {
        Some(var) => Ok(get(var.name)),
        None => Err(ConfigError::Undeclared(name)),
    }
}

/// How the readers below look a declared variable up.
pub(super) type Get<'a> = dyn Fn(&'static str) -> Result<Option<String>, ConfigError> + 'a;

/// A variable that must be set and non-blank.
pub(super) fn required(get: &Get<'_>, name: &'static str) -> Result<String, ConfigError> {
    match get(name)? {
        Some(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        _ => Err(ConfigError::Missing(name)),
    }
}

/// An integer in `min..=max`, or `default` when unset.
pub(super) fn number(
    get: &Get<'_>,
    name: &'static str,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, ConfigError> {
    match get(name)? {
        None => Ok(default),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(ConfigError::Invalid {
                name,
                reason: format!("expected an integer in {min}..={max}, got {v:?}"),
            }),
        },
    }
}

/// An http(s) base URL, without a trailing slash.
pub(super) fn http_url(name: &'static str, url: String) -> Result<String, ConfigError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ConfigError::Invalid {
            name,
            reason: format!("not an http(s) URL: {url:?}"),
        });
    }
    Ok(url.trim_end_matches('/').to_owned())
}
