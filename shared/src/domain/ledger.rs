//! The ledger's vocabulary. Rows themselves are `store::schema::LedgerItem` (append-only,
//! keyed by reference); the API shows them through its own view.

use serde::{Deserialize, Serialize};

/// What a ledger row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerKind {
    Grant,
    Debit,
    Refund,
    /// Credits bought with a paid Checkout Session (`purchase:<session id>`).
    Purchase,
    /// A purchase refunded or disputed: its credits taken back, never below a zero balance
    /// (`purchase_reversal:<payment id>`; the row records any shortfall).
    PurchaseReversal,
    /// A dispute the seller won: what its reversal took is given back
    /// (`reversal_restored:<payment id>`).
    ReversalRestored,
}
