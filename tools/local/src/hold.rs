//! A test's hold on the local event source mapping: while held, no worker hands a message to
//! the consumer, so a job stays `queued` for as long as a person needs to cancel it (in AWS, a
//! mapping that has not polled yet). A hold ends by itself after at most [`MAX_HOLD`], so a
//! test that fails midway never leaves the stack stuck. Holds nest: browser tests run in
//! parallel, so each `POST` adds a hold and each `DELETE` ends one, and the consumer waits
//! while any is left. Only the local runner serves it.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;

/// The control's path on the local API's origin.
pub const HOLD_PATH: &str = "/_local/consumer/hold";

/// Longest hold one request may ask for.
pub const MAX_HOLD: Duration = Duration::from_secs(30);

/// Until when each hold lasts.
#[derive(Debug, Default)]
pub struct Hold(Mutex<Vec<Instant>>);

impl Hold {
    /// Adds a hold of `for_` (at most [`MAX_HOLD`]) from now.
    pub fn hold(&self, for_: Duration) {
        let mut holds = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        holds.retain(|until| Instant::now() < *until);
        holds.push(Instant::now() + for_.min(MAX_HOLD));
    }

    /// Ends one hold (the one that would end first); the others stay.
    pub fn release(&self) {
        let mut holds = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        holds.retain(|until| Instant::now() < *until);
        if let Some(first) = (0..holds.len()).min_by_key(|&i| holds[i]) {
            holds.swap_remove(first);
        }
    }

    pub fn is_held(&self) -> bool {
        let holds = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        holds.iter().any(|until| Instant::now() < *until)
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HoldRequest {
    secs: u64,
}

/// `POST {HOLD_PATH} {"secs": N}` adds a hold (1 ≤ N ≤ [`MAX_HOLD`]); `DELETE` ends one.
pub fn router(hold: Arc<Hold>) -> Router {
    Router::new()
        .route(HOLD_PATH, post(start).delete(stop))
        .with_state(hold)
}

async fn start(
    State(hold): State<Arc<Hold>>,
    axum::Json(req): axum::Json<HoldRequest>,
) -> Response {
    if !(1..=MAX_HOLD.as_secs()).contains(&req.secs) {
        let limit = format!("secs: 1 to {}", MAX_HOLD.as_secs());
        return (http::StatusCode::UNPROCESSABLE_ENTITY, limit).into_response();
    }
    hold.hold(Duration::from_secs(req.secs));
    tracing::info!(secs = req.secs, "consumer_held");
    http::StatusCode::NO_CONTENT.into_response()
}

async fn stop(State(hold): State<Arc<Hold>>) -> Response {
    hold.release();
    tracing::info!("consumer_released");
    http::StatusCode::NO_CONTENT.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_lasts_until_released_and_never_longer_than_the_limit() {
        let hold = Hold::default();
        assert!(!hold.is_held());
        hold.hold(Duration::from_secs(3600));
        assert!(hold.is_held());
        let longest = hold.0.lock().ok().and_then(|g| g.iter().max().copied());
        assert!(longest.is_some_and(|u| u <= Instant::now() + MAX_HOLD));
        hold.release();
        assert!(!hold.is_held());
        hold.hold(Duration::ZERO);
        assert!(!hold.is_held(), "a hold that has run out holds nothing");
    }

    #[test]
    fn two_holders_each_end_their_own_hold() {
        let hold = Hold::default();
        hold.hold(Duration::from_secs(20));
        hold.hold(Duration::from_secs(30));
        hold.release();
        assert!(hold.is_held(), "the other holder still holds");
        hold.release();
        assert!(!hold.is_held());
        hold.release();
        assert!(!hold.is_held(), "a release with no hold is harmless");
    }
}
