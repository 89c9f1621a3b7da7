//! The tables as deployed: keys, indexes and TTL of each, which provisioning and the
//! infrastructure's drift guard read.

use serde::Serialize;

use super::{attr, index};
// Only named by the docs' links.
#[cfg(doc)]
use super::{
    accounts::SignupItem,
    budget::{
        BUDGET_STANDING, ReadinessMemoryItem, readiness_memory_key, user_day_key, user_share_key,
    },
    quotas::WAITS_QUOTA,
    webhooks::{WEBHOOK_ENDPOINTS, WEBHOOK_EVENT},
};
use crate::config::{Resources, env};

/// A key attribute and its DynamoDB type (`S` or `N`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KeyDef {
    pub name: &'static str,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

const fn s(name: &'static str) -> KeyDef {
    KeyDef { name, kind: "S" }
}

const fn n(name: &'static str) -> KeyDef {
    KeyDef { name, kind: "N" }
}

/// A global secondary index (projection ALL).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct IndexDef {
    pub name: &'static str,
    pub partition_key: KeyDef,
    pub sort_key: Option<KeyDef>,
}

/// One table as deployed.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TableDef {
    /// Logical id (also the suffix of local names).
    pub logical: &'static str,
    /// The environment variable that carries its physical name.
    pub env: &'static str,
    pub partition_key: KeyDef,
    pub sort_key: Option<KeyDef>,
    pub indexes: &'static [IndexDef],
    pub ttl_attribute: Option<&'static str>,
}

pub const ACCOUNTS: TableDef = TableDef {
    logical: "accounts",
    env: env::ACCOUNTS_TABLE,
    partition_key: s(attr::USER_ID),
    sort_key: None,
    indexes: &[IndexDef {
        name: index::ACCOUNTS_DELETING,
        partition_key: s(attr::DELETION_STATE),
        sort_key: Some(s(attr::CLOSED_AT)),
    }],
    ttl_attribute: None,
};

pub const LEDGER: TableDef = TableDef {
    logical: "ledger",
    env: env::LEDGER_TABLE,
    partition_key: s(attr::USER_ID),
    sort_key: Some(s(attr::REF)),
    indexes: &[IndexDef {
        name: index::LEDGER_BY_TIME,
        partition_key: s(attr::USER_ID),
        sort_key: Some(s(attr::AT_REF)),
    }],
    ttl_attribute: None,
};

pub const JOBS: TableDef = TableDef {
    logical: "jobs",
    env: env::JOBS_TABLE,
    partition_key: s(attr::JOB_ID),
    sort_key: None,
    indexes: &[
        IndexDef {
            name: index::JOBS_BY_USER,
            partition_key: s(attr::USER_ID),
            sort_key: Some(s(attr::USER_SORT)),
        },
        IndexDef {
            name: index::JOBS_BY_SWEEP,
            partition_key: s(attr::SWEEP_STATE),
            sort_key: Some(s(attr::SWEEP_AT)),
        },
    ],
    ttl_attribute: None,
};

/// The daily cost breaker: one item per UTC day (cap, used, reserved, headroom, halted), the
/// operator's standing setting under the key [`BUDGET_STANDING`], rule 12's per-user items
/// (each user's spend of a day, [`user_day_key`], and an operator's share override,
/// [`user_share_key`]) and the day's remembered readiness answers ([`ReadinessMemoryItem`],
/// keyed by [`readiness_memory_key`], expiring through the TTL attribute).
pub const BUDGET: TableDef = TableDef {
    logical: "budget",
    env: env::BUDGET_TABLE,
    partition_key: s(attr::DAY),
    sort_key: None,
    indexes: &[IndexDef {
        name: index::BUDGET_TOP_SPENDERS,
        partition_key: s(attr::SPEND_DAY),
        sort_key: Some(n(attr::SPENT_MICROS)),
    }],
    ttl_attribute: Some(attr::EXPIRES_AT),
};

/// Paid-call attempts of a job: reservation, saved usage, settled cost and sale value.
pub const ATTEMPTS: TableDef = TableDef {
    logical: "attempts",
    env: env::ATTEMPTS_TABLE,
    partition_key: s(attr::JOB_ID),
    sort_key: Some(s(attr::ATTEMPT)),
    indexes: &[IndexDef {
        name: index::ATTEMPTS_OPEN,
        partition_key: s(attr::OPEN_DAY),
        sort_key: Some(s(attr::RESERVED_AT)),
    }],
    ttl_attribute: None,
};

/// Per-user counters against a limit, each changed by one conditional update: upload slots
/// and bytes (one item per user and UTC day) and the long-polls a user holds open (one item
/// per user, [`WAITS_QUOTA`]); TTL removes old items.
pub const QUOTAS: TableDef = TableDef {
    logical: "quotas",
    env: env::QUOTAS_TABLE,
    partition_key: s(attr::USER_ID),
    sort_key: Some(s(attr::QUOTA)),
    indexes: &[],
    ttl_attribute: Some(attr::EXPIRES_AT),
};

/// Paid purchases by the provider's payment id: who paid, for which session and how many
/// credits. Written in the purchase's own transaction, so a refund or dispute (which names
/// only the payment) finds the user and the credits to take back.
pub const PAYMENTS: TableDef = TableDef {
    logical: "payments",
    env: env::PAYMENTS_TABLE,
    partition_key: s(attr::PAYMENT_ID),
    sort_key: None,
    indexes: &[],
    ttl_attribute: None,
};

/// Signup grants by the keyed hash of the verified address ([`SignupItem`]), written in the
/// grant's own transaction with `attribute_not_exists`: one grant per address, whichever
/// account asks. Never deleted (an account's deletion keeps it: it holds no address).
pub const SIGNUPS: TableDef = TableDef {
    logical: "signups",
    env: env::SIGNUPS_TABLE,
    partition_key: s(attr::ADDRESS_HASH),
    sort_key: None,
    indexes: &[],
    ttl_attribute: None,
};

/// The webhook outbox: endpoints (partition [`WEBHOOK_ENDPOINTS`]), events (written in the
/// transaction of the state change they report, sort key [`WEBHOOK_EVENT`]) and each event's
/// delivery log (sort keys `attempt#…`). Pending events carry `due_state`, so the delivery
/// worker reads exactly the due ones from the sparse index.
pub const WEBHOOKS: TableDef = TableDef {
    logical: "webhooks",
    env: env::WEBHOOKS_TABLE,
    partition_key: s(attr::HOOK_PK),
    sort_key: Some(s(attr::HOOK_SK)),
    indexes: &[IndexDef {
        name: index::WEBHOOKS_DUE,
        partition_key: s(attr::DUE_STATE),
        sort_key: Some(s(attr::DUE_AT)),
    }],
    ttl_attribute: Some(attr::EXPIRES_AT),
};

/// Every table.
pub const TABLES: [TableDef; 9] = [
    ACCOUNTS, LEDGER, JOBS, BUDGET, ATTEMPTS, QUOTAS, PAYMENTS, SIGNUPS, WEBHOOKS,
];

/// Physical table name of a definition.
pub fn table_name<'a>(def: &TableDef, r: &'a Resources) -> &'a str {
    match def.logical {
        "accounts" => &r.accounts_table,
        "ledger" => &r.ledger_table,
        "budget" => &r.budget_table,
        "attempts" => &r.attempts_table,
        "quotas" => &r.quotas_table,
        "payments" => &r.payments_table,
        "signups" => &r.signups_table,
        "webhooks" => &r.webhooks_table,
        _ => &r.jobs_table,
    }
}
