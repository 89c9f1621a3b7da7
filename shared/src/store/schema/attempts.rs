//! The attempts table's rows: a job's budget reservations and the paid calls they cover.

use serde::{Deserialize, Serialize};

use crate::domain::{Credits, JobId, Micros, UserId};

/// One paid call recorded on an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// `ok`, `provider_error`, `timeout`, `malformed`, ...
    pub outcome: String,
    /// The model that served the call and the prices its cost was booked at
    /// (`gpt-image-2.5-sunburst@2026-12-01`); absent on skipped calls and older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider that served (or refused) the call (`openai`, `gemini`), for operators;
    /// absent on skipped calls and older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Cost from the provider's usage and the price table; `None` when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<Micros>,
    /// The provider's usage as reported (for the books), when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<serde_json::Value>,
    pub at: String,
}

/// A reservation against the day's budget, covering one or more paid calls of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptItem {
    pub job_id: JobId,
    /// e.g. `01-check-edit`, `02-review`.
    pub attempt: String,
    pub day: String,
    /// Whose share the reservation also counts against (rule 12). Absent on attempts
    /// reserved before the share existed: those settle against the day's item only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<UserId>,
    pub reserved_micros: Micros,
    /// Calls this reservation covers, in order.
    pub planned: Vec<String>,
    /// Credits sold for this attempt (the job's price on its first attempt).
    pub sale_credits: Credits,
    pub price_table: String,
    #[serde(default)]
    pub calls: std::collections::BTreeMap<String, CallRecord>,
    pub reserved_at: String,
    /// Present while open (sparse index); removed when settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_day: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_cost_micros: Option<Micros>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<String>,
    /// `consumer` or `sweeper`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_by: Option<String>,
    /// A random token of the reservation that wrote this attempt: when the reservation's
    /// answer is lost and the retry meets the write, its holder recognises its own (absent on
    /// attempts reserved before it existed, which then stay refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<String>,
}
