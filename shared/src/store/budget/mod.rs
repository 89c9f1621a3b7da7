//! The daily cost breaker's store (rule 8): the day item, the operator's standing item and
//! attempts. A reservation is one transaction (day: `reserved += e, headroom -= e` under
//! `headroom >= e AND NOT halted`; attempt put; the standing item checked `NOT halted`; the
//! user's day item the same way under its own share, rule 12); a settlement is one transaction
//! (attempt: close under `attribute_exists(open_day)`; day and user's day: move the reservation
//! to `used`). Both are conditional, so a retry or a race between consumer and sweeper settles
//! each attempt once, on both items.

mod attempts;
mod counter;
mod day;
mod reserve;
mod settle;

pub(crate) use counter::Counter;
pub use reserve::ReserveOutcome;
pub use settle::SettleOutcome;
