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
}
