//! The budget table's keys and rows: the day's cost breaker, the standing setting, users'
//! shares and spend, remembered readiness answers and providers' circuit breakers.

use serde::{Deserialize, Serialize};

// Only named by the docs' links.
#[cfg(doc)]
use super::attr;

use crate::domain::{JobId, Micros, UserId};

/// The daily cost breaker's item for one UTC day. Micro-dollars, integers.
/// Invariant: `headroom == cap - used - reserved`, and a reservation needs `headroom >= estimate`
/// (DynamoDB conditions cannot add numbers, so the sum is kept as its own attribute).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetDayItem {
    pub day: String,
    pub cap_micros: Micros,
    pub used_micros: Micros,
    pub reserved_micros: Micros,
    pub headroom_micros: Micros,
    pub halted: bool,
    pub updated_at: String,
}

/// The `day` key of the budget table's standing item: the operator's setting that outlives
/// a UTC day (never a date, so it cannot collide with a day item).
pub const BUDGET_STANDING: &str = "standing";

/// The operator's standing setting (one item, key [`BUDGET_STANDING`]): a halt that holds
/// until resumed, and the cap every new day starts with. A new day item copies both; every
/// reservation also checks `halted` here, in its own transaction, so a halt holds for a day
/// item that already existed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetStandingItem {
    pub day: String,
    #[serde(default)]
    pub halted: bool,
    /// Absent: new days take the configured default (`ATELIER_DAILY_CAP_MICROS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_micros: Option<Micros>,
    #[serde(default)]
    pub updated_at: String,
}

/// The budget table's key of `user`'s spend on `day` (rule 12). Never a bare date nor
/// [`BUDGET_STANDING`], so it cannot collide with the day's own item.
pub fn user_day_key(day: &str, user: &UserId) -> String {
    format!("user#{day}#{user}")
}

/// The budget table's key of an operator's share override for `user` (it outlives days).
pub fn user_share_key(user: &UserId) -> String {
    format!("share#{user}")
}

/// One user's model spend on one UTC day (rule 12), refunded jobs' calls included. Created by
/// the user's first reservation of the day with the share in force then. Invariants like the
/// day's: `spent == used + reserved`, `headroom == share - spent`; a reservation needs
/// `headroom >= estimate`, and a submit needs `headroom > 0` and `headroom >= refused`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserDayItem {
    /// [`user_day_key`].
    pub day: String,
    pub spend_day: String,
    pub user_id: UserId,
    pub share_micros: Micros,
    pub used_micros: Micros,
    pub reserved_micros: Micros,
    pub spent_micros: Micros,
    pub headroom_micros: Micros,
    /// [`attr::REFUSED_MICROS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_micros: Option<Micros>,
    pub updated_at: String,
}

/// An operator's override of one user's daily share (`atelier-admin budget share`): every
/// day item of that user created while it stands takes this share instead of the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserShareItem {
    /// [`user_share_key`].
    pub day: String,
    pub user_id: UserId,
    pub share_micros: Micros,
    pub operator: String,
    pub updated_at: String,
}

/// The `day` key of a remembered readiness answer: the UTC day first (so it can never equal a
/// day item's `YYYY-MM-DD` or [`BUDGET_STANDING`]), then the digest of everything the check
/// saw (user, model, prompt, images).
pub fn readiness_memory_key(day: &str, digest: &str) -> String {
    format!("{day}#readiness#{digest}")
}

/// A readiness check's "not ready" answer, remembered for the rest of its UTC day so that the
/// same question asked again is answered without a model call (docs/design.md, "Repeated
/// clarifications").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadinessMemoryItem {
    /// [`readiness_memory_key`].
    pub day: String,
    pub user_id: UserId,
    /// The questions the check asked.
    pub questions: Vec<String>,
    /// The subjects it outlined (absent on items written before candidates).
    #[serde(default)]
    pub candidates: Vec<crate::domain::Candidate>,
    /// The job whose paid check gave the answer.
    pub job_id: JobId,
    pub created_at: String,
    /// [`attr::EXPIRES_AT`]: the start of the next UTC day, in Unix seconds.
    pub expires_at: i64,
    /// A preview's "ready" answer, which the edit after it draws from (absent on "not ready"
    /// answers and on items written before previews).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<RememberedReady>,
}

/// What a preview's check saw and outlined, kept so that the edit draws exactly that area.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberedReady {
    pub observation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub area: Option<crate::domain::result::AreaBox>,
}

/// The budget table's key of a model provider's circuit breaker (docs/design.md rule 15):
/// never a date, [`BUDGET_STANDING`] nor a user's key. The consumer already reads and writes
/// this table, so the breaker needs no new permission.
pub fn breaker_key(provider: &str) -> String {
    format!("breaker#{provider}")
}

/// A provider's circuit breaker, shared by every consumer ([`crate::domain::breaker`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerItem {
    /// [`breaker_key`].
    pub day: String,
    #[serde(default)]
    pub failures: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_ms: Option<i64>,
    #[serde(default)]
    pub updated_at: String,
}
