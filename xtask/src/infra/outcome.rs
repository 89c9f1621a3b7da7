//! A step's outcome, and the summary of every step of `cargo xtask infra-test`.

use std::time::Instant;

use anyhow::{Result, bail};

use crate::skips::{Verdict, count_skip};

/// One step's outcome.
pub(super) enum Outcome {
    Passed,
    /// Could not run: `check` names it for `ATELIER_CI_ALLOWED_SKIPS` (`skips.rs`).
    Skipped {
        check: &'static str,
        why: String,
    },
}

/// A step's name, how long it took, and its outcome.
pub(super) type StepResult = (&'static str, std::time::Duration, Result<Outcome>);

/// Prints one line per step, then fails when any step failed or skipped where a skip is a
/// failure (`skips.rs`); the steps skipped.
pub(super) fn summarise(results: &[StepResult], started: Instant) -> Result<u64> {
    let (mut failed, mut skipped) = (0, 0);
    eprintln!("xtask: infra-test summary ({:.1?}):", started.elapsed());
    for (name, took, r) in results {
        let verdict = match r {
            Ok(Outcome::Passed) => "ok".to_owned(),
            Ok(Outcome::Skipped { check, why }) => match count_skip(check, why) {
                Verdict::Skipped => {
                    skipped += 1;
                    format!("SKIPPED ({check}): {why}")
                }
                Verdict::Failed => {
                    failed += 1;
                    format!("FAILED (skipped under CI, {check}): {why}")
                }
            },
            Err(_) => {
                failed += 1;
                "FAILED".to_owned()
            }
        };
        eprintln!("  {verdict:<8} {name} ({took:.1?})");
    }
    if failed > 0 {
        bail!("infra-test: {failed} step(s) failed");
    }
    Ok(skipped)
}
