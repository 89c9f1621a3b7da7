//! The ledger's immutable rows and their key.

use serde::{Deserialize, Serialize};

use crate::domain::{Credits, JobId, LedgerKind, UserId};

/// A ledger row's key (what a stream record on the ledger table names).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LedgerKey {
    pub user_id: UserId,
    #[serde(rename = "ref")]
    pub reference: String,
}

/// One immutable ledger row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerItem {
    pub user_id: UserId,
    #[serde(rename = "ref")]
    pub reference: String,
    pub amount: Credits,
    pub kind: LedgerKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<JobId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// An operator's grant: who made it (`atelier-admin grant --operator`). Absent on rows
    /// written before it was recorded and on every other kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// A purchase reversal: the credits it could not take back because they were spent
    /// (the balance never goes below zero; the account is put on hold instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<Credits>,
    pub created_at: String,
    pub at_ref: String,
}

impl LedgerItem {
    pub fn new(
        user: &UserId,
        reference: String,
        amount: Credits,
        kind: LedgerKind,
        now: &str,
    ) -> LedgerItem {
        LedgerItem {
            user_id: user.clone(),
            at_ref: format!("{now}#{reference}"),
            reference,
            amount,
            kind,
            job_id: None,
            reason: None,
            operator: None,
            shortfall: None,
            created_at: now.to_owned(),
        }
    }
}
