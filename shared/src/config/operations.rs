//! How the logs are written, and the operator commands' own settings.

use super::env;

/// How the logs are written, as Lambda's advanced logging controls set it (read by
/// [`crate::adapters::telemetry::init`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// The filter directive, lower-cased (`AWS_LAMBDA_LOG_LEVEL`; default `info`).
    pub level: String,
    /// Plain text lines instead of JSON (`AWS_LAMBDA_LOG_FORMAT=Text`).
    pub text: bool,
}

impl LogSettings {
    /// Reads the process environment. Never fails: logging must start whatever is set.
    pub fn from_env() -> LogSettings {
        LogSettings::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads from any lookup (tests use a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> LogSettings {
        LogSettings {
            level: get(env::LOG_LEVEL)
                .unwrap_or_else(|| "info".to_owned())
                .to_lowercase(),
            text: get(env::LOG_FORMAT).is_some_and(|v| v.eq_ignore_ascii_case("text")),
        }
    }
}

/// The operator commands' own settings (`atelier-admin`; no function reads them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AdminSettings {
    /// Who runs the commands (`ATELIER_OPERATOR`), recorded on a grant's ledger row.
    pub operator: Option<String>,
}

impl AdminSettings {
    pub fn from_env() -> AdminSettings {
        AdminSettings::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads from any lookup (tests use a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> AdminSettings {
        AdminSettings {
            operator: get(env::OPERATOR)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()),
        }
    }
}
