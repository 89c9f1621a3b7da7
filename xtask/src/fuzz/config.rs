//! What one fuzz run is: its ports and user, and its arguments.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

/// Ports of this run, apart from the test stack (4599), `dev` (4566/8787/8788) and each other.
pub(super) const AWS_PORT: u16 = 4604;
pub(super) const API_PORT: u16 = 8804;
pub(super) const MODEL_PORT: u16 = 8805;
/// The user the fuzzer acts as.
pub(super) const USER: &str = "fuzz-1";
const DEFAULT_REQUESTS: u64 = 1000;

pub(super) struct Args {
    pub(super) requests: u64,
    pub(super) seed: u64,
}

pub(super) fn parse_args(args: &[String]) -> Result<Args> {
    let mut out = Args {
        requests: DEFAULT_REQUESTS,
        seed: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() % 1_000_000)
            .unwrap_or(1),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| -> Result<u64> {
            let raw = it.next().map(String::as_str).unwrap_or_default();
            raw.parse()
                .with_context(|| format!("{name} needs a number, got {raw:?}"))
        };
        match a.as_str() {
            "--requests" => out.requests = value("--requests")?.max(1),
            "--seed" => out.seed = value("--seed")?,
            other => bail!("usage: cargo xtask fuzz [--requests N] [--seed S] (got {other:?})"),
        }
    }
    Ok(out)
}
