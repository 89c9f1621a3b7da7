//! Submitting paid work: an edit ([`edit`]) or a repair of one ([`repair`]). Either is ONE
//! transaction that puts the job under an id derived from the Idempotency-Key
//! (`attribute_not_exists`), debits the account and writes the ledger row (rules 1, 2, 10, 11).
//! A key already used answers from the old job DynamoDB returns on the failed condition, never
//! from a second read: the same request is a replay (nothing charged), anything else a conflict.

pub mod edit;
pub mod repair;

pub use edit::submit_edit;
pub use repair::submit_repair;

use crate::store::schema::JobItem;

/// A submitted edit or repair.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub job: JobItem,
    /// The same request had been made before with this key: nothing new was charged.
    pub replayed: bool,
}
