//! The payments table's rows: paid purchases and the tombstones of early reversals.

use serde::{Deserialize, Serialize};

use crate::domain::{Credits, UserId};

/// A paid purchase, by the provider's payment id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentItem {
    pub payment_id: String,
    pub user_id: UserId,
    pub session_id: String,
    pub pack: String,
    pub credits: Credits,
    pub created_at: String,
}

/// A reversal that arrived before its purchase (rule 13): the payments table's item
/// `reversed:<payment id>`, written once. The purchase's own transaction checks it is absent,
/// so a purchase it names is never granted after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TombstoneItem {
    /// `reversed:<payment id>` (see [`tombstone_id`]).
    pub payment_id: String,
    /// The payment the reversal names (`apple:…`, `google:…`, Stripe's).
    pub reverses: String,
    /// The reversal's cause, as a reversal row would record it.
    pub reason: String,
    /// The notification's own verified data (JSON), for an operator.
    pub evidence: String,
    pub created_at: String,
}

/// The tombstone's key of the payment `payment_id`: a prefix no payment id of any store has.
pub fn tombstone_id(payment_id: &str) -> String {
    format!("reversed:{payment_id}")
}
