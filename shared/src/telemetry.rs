//! Logging setup. The format follows the environment (`AWS_LAMBDA_LOG_FORMAT`, as Lambda's
//! advanced logging controls set it), never the build profile.

use tracing_subscriber::EnvFilter;

use crate::config::env;

/// Installs the global subscriber: JSON lines unless `AWS_LAMBDA_LOG_FORMAT=Text`. Safe to
/// call more than once (later calls do nothing).
pub fn init() {
    let level = std::env::var(env::LOG_LEVEL)
        .unwrap_or_else(|_| "info".to_owned())
        .to_lowercase();
    let filter = EnvFilter::try_new(&level).unwrap_or_else(|_| EnvFilter::new("info"));
    let text = std::env::var(env::LOG_FORMAT)
        .map(|v| v.eq_ignore_ascii_case("text"))
        .unwrap_or(false);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .without_time();
    let _ = if text {
        builder.try_init()
    } else {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init()
    };
}
