//! Ledger references: the row's key, so each is written at most once.

use crate::domain::JobId;

pub const SIGNUP: &str = "grant:signup";

/// Where the references of job debits begin: one row per job ever created, written in
/// the job's own transaction, so the user's rows under it name every job of theirs.
pub const DEBIT_JOB_PREFIX: &str = "debit:job:";

pub fn debit(job: &JobId) -> String {
    format!("{DEBIT_JOB_PREFIX}{job}")
}

pub fn refund(job: &JobId) -> String {
    format!("refund:job:{job}")
}

/// An admin grant, idempotent per reason.
pub fn grant(reason: &str) -> String {
    format!("grant:admin:{reason}")
}

/// Credits bought with a Checkout Session: once per session.
pub fn purchase(session_id: &str) -> String {
    format!("purchase:{session_id}")
}

/// A purchase taken back (refund or dispute): once per payment, whichever comes first,
/// so a refund and a dispute of the same payment never take its credits twice.
pub fn purchase_reversal(payment_id: &str) -> String {
    format!("{PURCHASE_REVERSAL_PREFIX}{payment_id}")
}

/// A reversal given back (the dispute that caused it was won): once per payment.
pub fn reversal_restored(payment_id: &str) -> String {
    format!("{REVERSAL_RESTORED_PREFIX}{payment_id}")
}

/// Where the references of purchase reversals begin.
pub const PURCHASE_REVERSAL_PREFIX: &str = "purchase_reversal:";
/// Where the references of restored reversals begin.
pub const REVERSAL_RESTORED_PREFIX: &str = "reversal_restored:";
