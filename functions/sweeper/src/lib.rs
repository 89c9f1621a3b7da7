//! The scheduled sweeper: one bounded sweep per EventBridge tick. The clock is a parameter,
//! so tests move time instead of sleeping.

use atelier_shared::clock::Instant;
use atelier_shared::services::App;
use atelier_shared::services::sweep::{self, SweepLimits, SweepSummary};
use atelier_shared::services::webhooks;

/// Runs one sweep as of `now`.
pub async fn handle(app: &App, now: Instant) -> SweepSummary {
    sweep::sweep(app, now, SweepLimits::default()).await
}

/// The webhook deliveries due at `now`, after the sweep and within the rest of the
/// function's minute: the outbox's worker (`services::webhooks`). A failure is logged and
/// left to the next tick; it never fails the sweep.
pub async fn deliver_webhooks(app: &App, http: &reqwest::Client, now: Instant) {
    let budget = std::time::Duration::from_secs(30);
    match webhooks::deliver_due(&app.store, http, &app.config.webhooks, now, budget).await {
        Ok(s) if s.events > 0 => tracing::info!(
            events = s.events,
            delivered = s.delivered,
            failed = s.failed,
            endpoints_disabled = s.endpoints_disabled,
            errors = s.errors,
            "webhooks_delivered"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "webhooks_delivery_failed"),
    }
}

/// A sweep that owed refunds and could not make them.
#[derive(Debug, PartialEq, Eq)]
pub struct RefundsFailed(pub u64);

impl std::fmt::Display for RefundsFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} refund(s) could not be made this sweep (sweep_refund_failed lines name the jobs); the next sweep retries",
            self.0
        )
    }
}

impl std::error::Error for RefundsFailed {}

/// What the invocation reports: a failure when a refund could not be made, so the function's
/// own `Errors` metric (and its alarm) sees money owed to users, beside `RefundsFailed`. The
/// schedule does not retry (the next minute's sweep is the retry), so failing costs nothing.
/// Other per-item errors (a requeue, an orphan settlement) stay in the summary only: the next
/// sweep redoes them and no user is owed anything meanwhile.
pub fn verdict(summary: &SweepSummary) -> Result<(), RefundsFailed> {
    match summary.refund_failures {
        0 => Ok(()),
        n => Err(RefundsFailed(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_with_a_failed_refund_fails_the_invocation() {
        assert_eq!(verdict(&SweepSummary::default()), Ok(()));
        let mut s = SweepSummary {
            errors: 3,
            ..SweepSummary::default()
        };
        assert_eq!(
            verdict(&s),
            Ok(()),
            "other errors are retried by the next sweep"
        );
        s.refund_failures = 2;
        assert_eq!(verdict(&s), Err(RefundsFailed(2)));
    }
}
