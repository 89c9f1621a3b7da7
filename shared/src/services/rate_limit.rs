//! One caller's flood never denies the others (docs/design.md, "One caller's flood"): each
//! signed-in caller has a budget of requests per fixed window, counted in DynamoDB by one
//! conditional update per request, so every execution environment of the API draws on the
//! same count. The webhooks are not signed-in callers and draw on nothing here.

use crate::clock::Instant;
use crate::domain::UserId;
use crate::store::quotas::RequestCount;

use super::App;

/// Whether a request goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// The caller's window is full: try again after this many seconds (when it ends).
    Refused {
        retry_after_secs: u32,
    },
}

/// The window `now` falls in: its start and its end, in Unix seconds.
pub fn window(now: Instant, secs: u64) -> (i64, i64) {
    let secs = i64::try_from(secs.max(1)).unwrap_or(i64::MAX);
    let t = now.unix_timestamp();
    let start = t - t.rem_euclid(secs);
    (start, start.saturating_add(secs))
}

/// Counts one request of `user` at `now` against its window, or refuses it. A counter that
/// cannot be read admits the request (logged): the limit protects the others from a flood, and
/// a DynamoDB hiccup must not turn into everyone's outage; the stage throttle still holds.
pub async fn admit(app: &App, user: &UserId, now: Instant) -> Admission {
    let limits = &app.config.limits;
    let (start, end) = window(now, limits.request_window_secs);
    // TTL may delete the item a minute after its window: it is never read again.
    let expires_at = end.saturating_add(60);
    match app
        .store
        .count_request(user, start, limits.requests_per_window, expires_at)
        .await
    {
        Ok(RequestCount::Counted(_)) => Admission::Admitted,
        Ok(RequestCount::Refused) => {
            let left = (end - now.unix_timestamp()).max(1);
            tracing::info!(user_id = %user, window_start = start, "request_refused_over_budget");
            Admission::Refused {
                retry_after_secs: u32::try_from(left).unwrap_or(u32::MAX),
            }
        }
        Err(e) => {
            tracing::warn!(user_id = %user, error = %crate::error::chain(&e), "request_budget_unavailable");
            Admission::Admitted
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_starts_on_a_multiple_of_its_length_and_holds_now() {
        let now = Instant::from_unix_timestamp(1_764_000_007).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(window(now, 10), (1_764_000_000, 1_764_000_010));
        assert_eq!(window(now, 1), (1_764_000_007, 1_764_000_008));
        let edge = Instant::from_unix_timestamp(1_764_000_010).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            window(edge, 10),
            (1_764_000_010, 1_764_000_020),
            "a new window at its start"
        );
        assert_eq!(
            window(now, 0),
            window(now, 1),
            "a zero length is one second"
        );
    }
}
