//! Index names.

/// ledger: a user's rows newest first (display only; money is never decided from it).
pub const LEDGER_BY_TIME: &str = "by_time";
/// jobs: a user's jobs newest first.
pub const JOBS_BY_USER: &str = "by_user";
/// jobs, sparse: only jobs in flight carry `sweep_state`, so the sweeper reads exactly
/// the candidates, oldest first.
pub const JOBS_BY_SWEEP: &str = "by_sweep";
/// attempts, sparse: reservations not yet settled, oldest first, per UTC day.
pub const ATTEMPTS_OPEN: &str = "open_reservations";
/// budget, sparse: only users' day items carry `spend_day`, so one Query per day reads
/// the biggest spenders first (`spent_micros` descending), never a scan.
pub const BUDGET_TOP_SPENDERS: &str = "top_spenders";
/// accounts, sparse: closed accounts whose deletion has not finished, oldest close first.
pub const ACCOUNTS_DELETING: &str = "deletions_pending";
/// webhooks, sparse: events with a delivery round due, oldest first.
pub const WEBHOOKS_DUE: &str = "webhooks_due";
