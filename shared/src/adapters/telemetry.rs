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

/// The steps of a cold start, timed from `main` and logged once as `init_timed` when the
/// function is ready for its first event: an operator sees where an init's milliseconds go,
/// and the bench reads the line (docs/benchmarks.md, issue 50). What comes before `main`
/// (the process's start, the dynamic loader) is the cold start's time less these.
#[derive(Debug)]
pub struct InitClock {
    started: std::time::Instant,
    last: std::time::Instant,
    steps: Vec<(&'static str, std::time::Duration)>,
}

impl InitClock {
    /// Starts the clock; call it first in `main`.
    pub fn start() -> InitClock {
        let now = std::time::Instant::now();
        InitClock {
            started: now,
            last: now,
            steps: Vec::with_capacity(8),
        }
    }

    /// Records the time since the previous step (or the start) as `name`.
    pub fn step(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.steps.push((name, now - self.last));
        self.last = now;
    }

    /// `name=ms,…` in milliseconds to the microsecond, in the order they ran.
    pub fn steps(&self) -> String {
        let parts: Vec<String> = self
            .steps
            .iter()
            .map(|(name, took)| format!("{name}={:.3}", took.as_secs_f64() * 1e3))
            .collect();
        parts.join(",")
    }

    /// Logs `init_timed` with every step and the total since the start.
    pub fn log(&self) {
        let total_ms = self.started.elapsed().as_secs_f64() * 1e3;
        tracing::info!(steps = %self.steps(), total_ms, "init_timed");
    }
}

#[cfg(test)]
mod tests {
    use super::InitClock;

    #[test]
    fn an_init_clock_names_each_step_in_order_with_its_milliseconds() {
        let mut clock = InitClock::start();
        clock.step("config");
        std::thread::sleep(std::time::Duration::from_millis(2));
        clock.step("clients");
        let steps = clock.steps();
        let parsed: Vec<(&str, f64)> = steps
            .split(',')
            .filter_map(|p| p.split_once('='))
            .map(|(n, ms)| (n, ms.parse().unwrap_or(-1.0)))
            .collect();
        assert_eq!(parsed.len(), 2, "{steps}");
        assert_eq!((parsed[0].0, parsed[1].0), ("config", "clients"));
        assert!(parsed[0].1 >= 0.0 && parsed[0].1 < 2.0, "{steps}");
        assert!(parsed[1].1 >= 2.0, "{steps}");
    }
}
