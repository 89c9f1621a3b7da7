//! The circuit breaker per model provider (docs/design.md rule 15): before a paid call, whether
//! its provider may be asked ([`admit`]); after it, what its outcome does to the breaker
//! ([`record`]). The state is one item per provider in DynamoDB, so every consumer shares it;
//! the rules are [`crate::domain::breaker`]'s, each applied as one conditional write.
//!
//! The breaker only ever saves calls: a breaker that cannot be read lets the call go as if it
//! were closed (logged), and a failed write of an outcome is logged and forgotten. It never
//! makes a job wait nor retries a call.

use crate::adapters::metrics;
use crate::adapters::model::catalogue::Provider;
use crate::clock::Instant;
use crate::domain::breaker::{Admit, BreakerState, CallOutcome, Transition};
use crate::error::Error;

use super::App;

/// What a call to a provider may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Closed: call. `failures`: consecutive definite failures counted so far (a success
    /// starts the count over).
    Call { failures: u32 },
    /// This call is the half-open breaker's one probe, claimed at this Unix millisecond.
    Probe(i64),
    /// Open (or its probe taken): no call, no reservation; the next provider instead.
    Skip,
}

/// Unix milliseconds of `t`.
pub fn unix_ms(t: Instant) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// The breaker of `provider` as stored.
pub async fn state(app: &App, provider: Provider) -> Result<BreakerState, Error> {
    app.store.get_breaker(provider.as_str()).await
}

/// Whether `provider`'s breaker would pass a call over at `now` (open, or its probe taken),
/// read without claiming anything; `false` when it cannot be read.
pub async fn passes_over(app: &App, provider: Provider, now: Instant) -> bool {
    let s = app.config.limits.breaker;
    state(app, provider)
        .await
        .is_ok_and(|state| state.admit(unix_ms(now), &s) == Admit::Skip)
}

/// Whether a call to `provider` may be made at `now`; claims the probe when the breaker is
/// half-open and the probe free (one consumer wins it; the others skip).
pub async fn admit(app: &App, provider: Provider, now: Instant) -> Gate {
    let s = app.config.limits.breaker;
    let now_ms = unix_ms(now);
    let state = match state(app, provider).await {
        Ok(state) => state,
        Err(e) => {
            tracing::warn!(provider = provider.as_str(), error = %crate::error::chain(&e), "provider_breaker_unreadable");
            return Gate::Call { failures: 0 };
        }
    };
    match state.admit(now_ms, &s) {
        Admit::Call => Gate::Call {
            failures: state.failures,
        },
        Admit::Skip => Gate::Skip,
        Admit::Probe => match app
            .store
            .claim_breaker_probe(provider.as_str(), now_ms, s.cooldown_ms)
            .await
        {
            Ok(true) => {
                changed(provider, Transition::HalfOpen);
                Gate::Probe(now_ms)
            }
            Ok(false) => Gate::Skip,
            Err(e) => {
                // The claim may have been written: not calling is the safe side.
                tracing::warn!(provider = provider.as_str(), error = %crate::error::chain(&e), "provider_breaker_unwritable");
                Gate::Skip
            }
        },
    }
}

/// What a call admitted by `gate` and ended with `outcome` at `now` does to the breaker.
pub async fn record(app: &App, provider: Provider, gate: Gate, outcome: CallOutcome, now: Instant) {
    let p = provider.as_str();
    let now_ms = unix_ms(now);
    let store = &app.store;
    let done = match (gate, outcome) {
        (Gate::Probe(at), CallOutcome::Success) => store
            .end_breaker_probe(p, at, true, now_ms)
            .await
            .map(|won| won.then_some(Transition::Closed)),
        (Gate::Probe(at), CallOutcome::Definite) => store
            .end_breaker_probe(p, at, false, now_ms)
            .await
            .map(|won| won.then_some(Transition::Opened)),
        (Gate::Call { failures }, CallOutcome::Success) if failures > 0 => {
            store.reset_breaker_failures(p).await.map(|()| None)
        }
        (Gate::Call { .. }, CallOutcome::Definite) => count_failure(app, provider, now_ms).await,
        _ => Ok(None),
    };
    match done {
        Ok(Some(t)) => changed(provider, t),
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(provider = p, error = %crate::error::chain(&e), "provider_breaker_unwritable");
        }
    }
}

/// One more definite failure of the closed breaker; opens it at the configured count.
async fn count_failure(
    app: &App,
    provider: Provider,
    now_ms: i64,
) -> Result<Option<Transition>, Error> {
    let p = provider.as_str();
    let Some(count) = app.store.count_breaker_failure(p).await? else {
        return Ok(None);
    };
    if count < app.config.limits.breaker.failures {
        return Ok(None);
    }
    let won = app.store.open_breaker(p, now_ms).await?;
    Ok(won.then_some(Transition::Opened))
}

/// Logs and counts a change of phase (by the one consumer whose write made it).
fn changed(provider: Provider, t: Transition) {
    let p = provider.as_str();
    match t {
        Transition::Opened => tracing::warn!(provider = p, "provider_breaker_opened"),
        Transition::HalfOpen => tracing::info!(provider = p, "provider_breaker_half_open"),
        Transition::Closed => tracing::info!(provider = p, "provider_breaker_closed"),
    }
    metrics::provider_breaker(p, t.as_str());
}
