//! The scheduled sweeper: one bounded sweep per EventBridge tick. The clock is a parameter,
//! so tests move time instead of sleeping.

use atelier_shared::clock::Instant;
use atelier_shared::services::App;
use atelier_shared::services::sweep::{self, SweepLimits, SweepSummary};

/// Runs one sweep as of `now`.
pub async fn handle(app: &App, now: Instant) -> SweepSummary {
    sweep::sweep(app, now, SweepLimits::default()).await
}
