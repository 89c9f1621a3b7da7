//! Submitting paid work: an edit ([`edit`]) or a repair of one ([`repair`]). Either is ONE
//! transaction that puts the job under an id derived from the Idempotency-Key
//! (`attribute_not_exists`), debits the account and writes the ledger row (rules 1, 2, 10, 11).
//! A key already used answers from the old job DynamoDB returns on the failed condition, never
//! from a second read: the same request is a replay (nothing charged), anything else a
//! conflict. The queue is rung after the commit; a failed ring is left to the sweeper (rule 4).
//!
//! Each path builds its job and hands [`charge::create_charged`] its transaction; `charge` owns
//! what they share: the replay-or-conflict rule, creating a missing account then trying once
//! more, the debit refusals, and the deferred send.

mod charge;
pub mod edit;
pub mod repair;

pub use charge::Submitted;
pub use edit::submit_edit;
pub use repair::submit_repair;
