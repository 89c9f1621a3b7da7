//! Logging setup. The format follows the environment (`AWS_LAMBDA_LOG_FORMAT`, as Lambda's
//! advanced logging controls set it, read by [`crate::config::LogSettings`]), never the build
//! profile.

use tracing_subscriber::EnvFilter;

use crate::config::LogSettings;

/// Installs the global subscriber: JSON lines unless `AWS_LAMBDA_LOG_FORMAT=Text`. Safe to
/// call more than once (later calls do nothing).
pub fn init() {
    let LogSettings { level, text } = LogSettings::from_env();
    let filter = EnvFilter::try_new(&level).unwrap_or_else(|_| EnvFilter::new("info"));
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
