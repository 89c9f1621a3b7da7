//! Logging setup. The format follows the environment (`AWS_LAMBDA_LOG_FORMAT`, as Lambda's
//! advanced logging controls set it, read by [`crate::config::LogSettings`]), never the build
//! profile.

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

use crate::config::LogSettings;

/// Installs the global subscriber: JSON lines unless `AWS_LAMBDA_LOG_FORMAT=Text`. Safe to
/// call more than once (later calls do nothing).
///
/// The filter is `Targets` (`info`, `atelier_shared=debug,warn`), not `EnvFilter`: the
/// latter's span-field regexes link `regex-automata` and its Unicode tables into every
/// function for a feature Lambda's log level never uses (docs/benchmarks.md, issue 33).
pub fn init() {
    let LogSettings { level, text } = LogSettings::from_env();
    let filter: Targets = level
        .parse()
        .unwrap_or_else(|_| Targets::new().with_default(LevelFilter::INFO));
    let fmt = tracing_subscriber::fmt::layer()
        .with_target(false)
        .without_time();
    let _ = if text {
        tracing_subscriber::registry()
            .with(fmt.with_filter(filter))
            .try_init()
    } else {
        let json = fmt.json().flatten_event(true).with_current_span(true);
        tracing_subscriber::registry()
            .with(json.with_filter(filter))
            .try_init()
    };
}
