//! THE place for DynamoDB names: tables, keys, indexes, attributes, key builders and the item
//! structs (`*Item` rows) that go in and out through `serde_dynamo`. Values nested in a row
//! (a job's failure or result) are domain types; no type here is part of the API. Provisioning (local stack) and the
//! infrastructure's drift guard both read [`TABLES`].

use serde::{Deserialize, Serialize};

use crate::clock::{self, Instant};
use crate::config::{Resources, env};
use crate::domain::repair_request;
use crate::domain::{
    AddressHash, AssetKind, Credits, EditSpec, InputVersion, JobFailure, JobId, JobResult,
    JobState, LedgerKind, Micros, Operation, UserId,
};

/// Attribute names. Expressions bind these through `#placeholders`.
pub mod attr {
    pub const USER_ID: &str = "user_id";
    pub const CREDITS: &str = "credits";
    pub const IN_FLIGHT: &str = "in_flight";
    /// Bumped by every transaction that moves the balance: lets `audit` read the account and
    /// the ledger without a false alarm from a concurrent write.
    pub const REV: &str = "rev";
    pub const CREATED_AT: &str = "created_at";
    pub const UPDATED_AT: &str = "updated_at";
    /// On an account: why it is on hold (a reversed purchase it could not pay back); present
    /// only while on hold, and every debit requires it absent.
    pub const HOLD: &str = "hold";
    pub const HOLD_RELEASED_BY: &str = "hold_released_by";
    pub const HOLD_RELEASED_AT: &str = "hold_released_at";

    /// payments: the provider's payment id (a Stripe PaymentIntent), the key every refund and
    /// dispute names.
    pub const PAYMENT_ID: &str = "payment_id";

    pub const REF: &str = "ref";
    pub const AMOUNT: &str = "amount";
    pub const AT_REF: &str = "at_ref";

    pub const JOB_ID: &str = "job_id";
    pub const STATUS: &str = "status";
    pub const USER_SORT: &str = "user_sort";
    pub const SWEEP_STATE: &str = "sweep_state";
    pub const SWEEP_AT: &str = "sweep_at";
    pub const DISPATCH_COUNT: &str = "dispatch_count";
    pub const DISPATCHED_AT: &str = "dispatched_at";

    pub const DAY: &str = "day";
    pub const ATTEMPT: &str = "attempt";
    /// Present only while an attempt's budget reservation is open (sparse index).
    pub const OPEN_DAY: &str = "open_day";
    pub const RESERVED_AT: &str = "reserved_at";
    pub const CAP_MICROS: &str = "cap_micros";
    pub const USED_MICROS: &str = "used_micros";
    pub const RESERVED_MICROS: &str = "reserved_micros";
    pub const HEADROOM_MICROS: &str = "headroom_micros";
    pub const HALTED: &str = "halted";
    pub const CALLS: &str = "calls";
    pub const PLANNED: &str = "planned";
    pub const SETTLED_COST_MICROS: &str = "settled_cost_micros";
    pub const SETTLED_AT: &str = "settled_at";
    pub const SETTLED_BY: &str = "settled_by";
    /// On a user's day item (rule 12): the share it may spend that day.
    pub const SHARE_MICROS: &str = "share_micros";
    /// On a user's day item: `used + reserved`, kept as its own attribute because DynamoDB
    /// conditions cannot add, and the sort key of [`super::index::BUDGET_TOP_SPENDERS`].
    pub const SPENT_MICROS: &str = "spent_micros";
    /// On a user's day item: the estimate its share last refused, until a reservation fits
    /// again; a submit needs `headroom >= refused` too, so a user whose next job cannot fit is
    /// refused at the door instead of being charged, queued and refunded in a loop.
    pub const REFUSED_MICROS: &str = "refused_micros";
    /// On a user's day item only: its UTC day (the partition of the top-spenders index).
    pub const SPEND_DAY: &str = "spend_day";
    /// Who made an operator's change (a user's share override).
    pub const OPERATOR: &str = "operator";
    pub const FAILURE: &str = "failure";
    pub const RESULT: &str = "result";
    pub const STARTED_AT: &str = "started_at";
    /// Unix seconds after which DynamoDB's TTL may delete the item: on the budget table only
    /// remembered readiness answers carry it (never a day's budget); on the quotas table, every
    /// day's upload counter; on the webhooks table, every event and attempt (never an
    /// endpoint), `webhooks::RETENTION` after it was written.
    pub const EXPIRES_AT: &str = "expires_at";

    /// On a repair job: the lineage it belongs to and its instruction.
    pub const REPAIR: &str = "repair";
    /// On an original edit (the lineage's root): repairs charged and not refunded.
    pub const REPAIRS_USED: &str = "repairs_used";
    /// On the root: repair submissions ever accepted, refunded ones included.
    pub const REPAIR_ATTEMPTS: &str = "repair_attempts";
    /// On the root: set when a repair did not improve on the current version.
    pub const REPAIRS_STOPPED: &str = "repairs_stopped";
    /// On the root: the repair in flight (at most one, so each starts from a settled version).
    pub const REPAIR_ACTIVE: &str = "repair_active";
    /// On the root: the version the user holds, once a repair replaced the original result.
    pub const CURRENT: &str = "current";
    /// On the root: every repair job of the lineage, oldest first.
    pub const REPAIR_JOBS: &str = "repair_jobs";

    /// On an account created from a token without a verified e-mail: the signup grant is
    /// still owed (given, once, at the first call with a verified e-mail).
    pub const SIGNUP_PENDING: &str = "signup_pending";
    /// On an account whose verified address had its signup grant on another account (a user
    /// deleted and signed up again with the same address): no grant, and no more tries.
    pub const SIGNUP_ADDRESS_USED: &str = "signup_address_used";
    /// signups: the keyed hash of a verified, normalised address (`domain::AddressHash`).
    pub const ADDRESS_HASH: &str = "address_hash";

    /// On a job: when its images (inputs, result, candidates) were deleted at the owner's
    /// request; such a job keeps its money fields and states and can no longer be repaired.
    pub const IMAGES_DELETED_AT: &str = "images_deleted_at";
    /// On an account: when its owner (or an operator) asked to delete it; from then on it
    /// refuses new uploads and submits, and a new token for the same subject finds it closed.
    pub const CLOSED_AT: &str = "closed_at";
    /// On a closed account: who closed it (`user`, or `operator:<name>`).
    pub const CLOSED_BY: &str = "closed_by";
    /// On a closed account: when the deletion finished (every image gone, jobs' text cleared).
    pub const DELETED_AT: &str = "deleted_at";
    /// On a closed account, sparse: [`super::DELETION_PENDING`] from the close until the
    /// deletion finished, so the sweeper finds exactly the deletions left to finish.
    pub const DELETION_STATE: &str = "deletion_state";

    /// quotas: which counter of which UTC day (`uploads#2026-12-01`).
    pub const QUOTA: &str = "quota";
    pub const SLOTS: &str = "slots";
    pub const BYTES: &str = "bytes";
    /// quotas, on a user's [`super::WAITS_QUOTA`] row: slot `i`'s lease end (unix seconds) is
    /// `wait_until_<i>` and its holder `wait_id_<i>` (see `store::waits`).
    pub const WAIT_UNTIL_PREFIX: &str = "wait_until_";
    pub const WAIT_ID_PREFIX: &str = "wait_id_";

    /// webhooks: `endpoints` for the endpoints, else an event's id.
    pub const HOOK_PK: &str = "hook_pk";
    /// webhooks: an endpoint's id; `event` for the event itself; `attempt#…` for its log.
    pub const HOOK_SK: &str = "hook_sk";
    /// webhooks, sparse: `pending` on an event until every endpoint has it (or it gave up).
    pub const DUE_STATE: &str = "due_state";
    /// webhooks: when the event's next delivery round is due.
    pub const DUE_AT: &str = "due_at";
    pub const ROUNDS: &str = "rounds";
    pub const DELIVERED_TO: &str = "delivered_to";
    pub const SECRETS: &str = "secrets";
    pub const DISABLED_AT: &str = "disabled_at";
    pub const FAILED_ROUNDS: &str = "failed_rounds";
    pub const FAILING_SINCE: &str = "failing_since";
    /// webhooks: an endpoint's version, one up at every operator's change of its secrets: the
    /// delivery worker's writes are conditional on the version it read.
    pub const GENERATION: &str = "generation";
}

/// Index names.
pub mod index {
    /// ledger: a user's rows newest first (display only; money is never decided from it).
    pub const LEDGER_BY_TIME: &str = "by_time";
    /// jobs: a user's jobs newest first.
    pub const JOBS_BY_USER: &str = "by_user";
    /// jobs, sparse: only jobs in flight carry `sweep_state`, so the sweeper reads exactly
    /// the candidates, oldest first.
    pub const JOBS_BY_SWEEP: &str = "by_sweep";
    /// attempts, sparse: reservations not yet settled, oldest first, per UTC day.
    pub const ATTEMPTS_OPEN: &str = "open_reservations";
    /// budget, sparse: only users' day items carry `spend_day`, so one Query per day reads
    /// the biggest spenders first (`spent_micros` descending), never a scan.
    pub const BUDGET_TOP_SPENDERS: &str = "top_spenders";
    /// accounts, sparse: closed accounts whose deletion has not finished, oldest close first.
    pub const ACCOUNTS_DELETING: &str = "deletions_pending";
    /// webhooks, sparse: events with a delivery round due, oldest first.
    pub const WEBHOOKS_DUE: &str = "webhooks_due";
}

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

/// Ledger references: the row's key, so each is written at most once.
pub mod reference {
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
}

/// The partition of every webhook endpoint.
pub const WEBHOOK_ENDPOINTS: &str = "endpoints";
/// The sort key of an event's own row.
pub const WEBHOOK_EVENT: &str = "event";
/// The `due_state` of an event with a delivery round to run.
pub const WEBHOOK_PENDING: &str = "pending";

/// A delivery attempt's sort key: `attempt#<round, 4 digits>#<endpoint id>`, in order.
pub fn webhook_attempt_key(round: u32, endpoint: &str) -> String {
    format!("attempt#{round:04}#{endpoint}")
}

/// One webhook event (the outbox row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEventItem {
    /// The event id ([`attr::HOOK_PK`]), the `webhook-id` of every attempt.
    pub hook_pk: String,
    /// Always [`WEBHOOK_EVENT`].
    pub hook_sk: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// The exact bytes every attempt signs and sends.
    pub body: String,
    pub created_at: String,
    /// [`WEBHOOK_PENDING`] while a round is due; absent once delivered or given up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<String>,
    /// Delivery rounds run so far.
    #[serde(default)]
    pub rounds: u32,
    /// Endpoints that answered 2xx: later rounds skip them.
    #[serde(default)]
    pub delivered_to: Vec<String>,
    /// [`attr::EXPIRES_AT`]: when DynamoDB's TTL removes the event (absent on rows written
    /// before events expired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

/// One secret of an endpoint; a rotated-out one signs until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookSecret {
    /// `whsec_…`.
    pub secret: String,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// One receiver of every event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookEndpointItem {
    /// Always [`WEBHOOK_ENDPOINTS`].
    pub hook_pk: String,
    /// The endpoint's id (`ep_…`).
    pub hook_sk: String,
    pub url: String,
    pub secrets: Vec<WebhookSecret>,
    pub created_at: String,
    /// Attempts failed in a row (reset by a success).
    #[serde(default)]
    pub failed_rounds: u32,
    /// The first failure since the last success: disabled once it is older than the policy's
    /// `disable_after_secs` (time, not a count: many events failing at once in a short outage
    /// must not disable an endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<String>,
    /// [`attr::GENERATION`]: 0 when added (and on rows from before it existed), one up at each
    /// rotation.
    #[serde(default)]
    pub generation: u64,
}

/// One POST of one event to one endpoint: the delivery log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookAttemptItem {
    /// The event id.
    pub hook_pk: String,
    /// [`webhook_attempt_key`].
    pub hook_sk: String,
    pub endpoint_id: String,
    pub round: u32,
    pub at: String,
    /// The receiver's status code, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// Why no answer (timeout, connection refused, an address refused), when none came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub millis: u64,
    /// [`attr::EXPIRES_AT`]: when DynamoDB's TTL removes the attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

/// The account: balance and the in-flight count of rule 11.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountItem {
    pub user_id: UserId,
    pub credits: Credits,
    pub in_flight: i64,
    pub rev: i64,
    pub created_at: String,
    /// Created from a token without a verified e-mail: the signup grant is owed, not given.
    /// Absent on every account created with its grant (all accounts before this existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub signup_pending: bool,
    /// [`attr::SIGNUP_ADDRESS_USED`]: the verified address already had its grant.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub signup_address_used: bool,
    /// Present while the account is on hold: new submits are refused until an operator
    /// releases it (`atelier-admin account release`) or the dispute behind it is won.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<String>,
    /// [`attr::CLOSED_AT`]: the account is being deleted or was; nothing new is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
    /// [`attr::CLOSED_BY`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_by: Option<String>,
    /// [`attr::DELETED_AT`]: the deletion finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<String>,
}

/// The `quota` key of a user's upload counter for one UTC day (`YYYY-MM-DD`).
pub fn upload_quota_key(day: &str) -> String {
    format!("uploads#{day}")
}

/// The [`attr::DELETION_STATE`] of a closed account whose deletion is not finished.
pub const DELETION_PENDING: &str = "pending";

/// The `quota` key of a user's long-poll slots (one row a user, expired by TTL a day after
/// its last wait).
pub const WAITS_QUOTA: &str = "waits";

/// A user's upload counter for one UTC day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadDayItem {
    pub user_id: UserId,
    pub quota: String,
    pub slots: u32,
    pub bytes: u64,
    pub expires_at: i64,
}

/// The signup grant of one verified address: which account got it and when. The address
/// itself is never stored, only its keyed hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignupItem {
    pub address_hash: AddressHash,
    pub user_id: UserId,
    pub granted_at: String,
}

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

/// A job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobItem {
    pub job_id: JobId,
    pub user_id: UserId,
    pub operation: Operation,
    pub status: JobState,
    pub request: EditSpec,
    pub request_hash: String,
    /// The exact bytes of each input at submit (a repair: its root's). The consumer keeps its
    /// copy of an input only from an upload that still has them; empty on jobs submitted
    /// before versions were recorded, whose submit made the copy itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<InputVersion>,
    pub credits: Credits,
    pub created_at: String,
    pub updated_at: String,
    /// `created_at#job_id`: the sort key of [`index::JOBS_BY_USER`].
    pub user_sort: String,
    pub dispatch_count: u32,
    pub dispatched_at: String,
    /// Present only while the job is in flight (sparse index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_state: Option<JobState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<JobFailure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JobResult>,
    /// A repair job: which lineage, what to improve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairOf>,
    /// The root of a lineage: its repairs (written by the repair transactions only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repairs_used: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repair_attempts: u32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repairs_stopped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair_active: Option<JobId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<CurrentVersion>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repair_jobs: Vec<JobId>,
    /// [`attr::IMAGES_DELETED_AT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images_deleted_at: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What a new job is made of; [`JobItem::queued`] adds the bookkeeping.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// Derived from the user, the operation and the Idempotency-Key.
    pub job_id: JobId,
    pub user_id: UserId,
    pub operation: Operation,
    pub request: EditSpec,
    pub request_hash: String,
    /// What each input's upload held when the job was priced (see [`JobItem::inputs`]).
    pub inputs: Vec<InputVersion>,
    pub credits: Credits,
    /// A repair: which lineage, what to improve.
    pub repair: Option<RepairOf>,
}

impl JobItem {
    /// What a webhook event about this job reports.
    pub fn event_ref(&self) -> crate::domain::webhooks::JobRef<'_> {
        crate::domain::webhooks::JobRef {
            job_id: &self.job_id,
            user_id: &self.user_id,
            operation: self.operation,
            root_job_id: self.repair.as_ref().map(|r| &r.root_job_id),
        }
    }

    /// A new job, queued at `now` and counted as dispatched once (the submit rings the queue
    /// right after the commit; if that fails the sweeper re-sends), in the sweeper's index
    /// under `sweep_at`: for a queued job, when its next re-send is due (`resend_after` from
    /// now).
    pub fn queued(new: NewJob, now: Instant, resend_after: std::time::Duration) -> JobItem {
        let NewJob {
            job_id,
            user_id,
            operation,
            request,
            request_hash,
            inputs,
            credits,
            repair,
        } = new;
        let resend_at = clock::format(now + resend_after);
        let now = clock::format(now);
        JobItem {
            user_sort: format!("{now}#{job_id}"),
            job_id,
            user_id,
            operation,
            status: JobState::Queued,
            request,
            request_hash,
            inputs,
            credits,
            dispatch_count: 1,
            dispatched_at: now.clone(),
            sweep_state: Some(JobState::Queued),
            sweep_at: Some(resend_at),
            failure: None,
            started_at: None,
            result: None,
            repair,
            repairs_used: 0,
            repair_attempts: 0,
            repairs_stopped: false,
            repair_active: None,
            current: None,
            repair_jobs: Vec::new(),
            images_deleted_at: None,
            created_at: now.clone(),
            updated_at: now,
        }
    }

    /// The ETag an input of `kind` had at submit, if the job recorded one.
    pub fn input_etag(&self, kind: AssetKind) -> Option<&str> {
        self.inputs
            .iter()
            .find(|i| i.kind == kind)
            .map(|i| i.etag.as_str())
    }

    /// The id of the lineage's root: the job itself, or the edit a repair belongs to.
    pub fn root_id(&self) -> &JobId {
        self.repair
            .as_ref()
            .map_or(&self.job_id, |r| &r.root_job_id)
    }

    /// The image the user holds for this lineage (on a root job): the last accepted repair's,
    /// or the edit's own result.
    pub fn current_asset_key(&self) -> Option<&str> {
        self.current
            .as_ref()
            .map(|c| c.asset_key.as_str())
            .or(self.result.as_ref().map(|r| r.asset_key.as_str()))
    }

    /// Repairs this lineage's root still accepts (the number the repair submit's condition
    /// is made of, see [`repair_request::repairs_left`]).
    pub fn repairs_left(&self) -> u32 {
        repair_request::repairs_left(
            self.repairs_used,
            self.repair_attempts,
            self.repairs_stopped,
        )
    }
}

impl JobItem {
    /// This job as it stays after its owner's account is deleted: money fields, states,
    /// ids and the request's settings kept; every text the user wrote (custom style, target
    /// description, locks, a repair's instruction) and every text a model wrote about the
    /// photo (observation, review and comparison notes, clarifying questions) cleared; the
    /// images marked deleted at `now` (or when they first were).
    pub fn redacted(&self, now: &str) -> JobItem {
        let mut job = self.clone();
        job.request.custom_style = None;
        job.request.target_description = None;
        job.request.locks.clear();
        if let Some(r) = job.repair.as_mut() {
            r.instruction.clear();
        }
        if let Some(f) = job.failure.as_mut() {
            f.questions.clear();
        }
        if let Some(r) = job.result.as_mut() {
            r.observation = None;
            r.review.notes.clear();
            if let Some(c) = r.comparison.as_mut() {
                c.notes.clear();
            }
        }
        job.images_deleted_at.get_or_insert_with(|| now.to_owned());
        job
    }
}

/// What makes a job a repair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairOf {
    pub root_job_id: JobId,
    pub instruction: String,
}

/// The version of a lineage the user holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentVersion {
    /// The job whose image it is (the root, or a repair).
    pub job_id: JobId,
    pub asset_key: String,
}

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
    /// The job whose paid check gave the answer.
    pub job_id: JobId,
    pub created_at: String,
    /// [`attr::EXPIRES_AT`]: the start of the next UTC day, in Unix seconds.
    pub expires_at: i64,
}

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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EditRequest, IdempotencyKey};

    fn new_job(repair: Option<RepairOf>) -> NewJob {
        let (Some(user), Some(key)) = (UserId::parse("alice"), IdempotencyKey::parse("k-1")) else {
            panic!("test ids must parse");
        };
        let request = EditRequest {
            style: Some("embroidery".into()),
            target: Some("pet".into()),
            original_asset_id: Some(crate::domain::AssetId::generate().as_str().to_owned()),
            ..Default::default()
        }
        .validate()
        .unwrap_or_else(|e| panic!("{e}"));
        NewJob {
            job_id: JobId::derive(&user, Operation::Edit, &key),
            user_id: user,
            operation: Operation::Edit,
            request_hash: request.request_hash(),
            request,
            inputs: Vec::new(),
            credits: Credits::new(4),
            repair,
        }
    }

    #[test]
    fn a_queued_job_is_dispatched_once_and_waits_in_the_sweepers_index_until_its_resend_is_due() {
        let now = time::macros::datetime!(2026-01-02 03:04:05.006 UTC);
        let job = JobItem::queued(new_job(None), now, std::time::Duration::from_secs(60));
        let at = "2026-01-02T03:04:05.006Z";
        assert_eq!(job.status, JobState::Queued);
        assert_eq!(job.credits, Credits::new(4));
        assert_eq!(job.dispatch_count, 1);
        assert_eq!(job.sweep_state, Some(JobState::Queued));
        for t in [&job.created_at, &job.updated_at, &job.dispatched_at] {
            assert_eq!(t, at);
        }
        assert_eq!(job.sweep_at.as_deref(), Some("2026-01-02T03:05:05.006Z"));
        assert_eq!(job.user_sort, format!("{at}#{}", job.job_id));
    }

    #[test]
    fn a_redacted_job_keeps_its_money_and_settings_and_loses_every_text_about_the_photo() {
        let mut new = new_job(Some(RepairOf {
            root_job_id: JobId::derive(
                &UserId::parse("alice").unwrap_or_else(|| panic!("id")),
                Operation::Edit,
                &IdempotencyKey::parse("root").unwrap_or_else(|| panic!("key")),
            ),
            instruction: "make the grey cat's ears finer".into(),
        }));
        new.request.custom_style = Some("in pastel wool".into());
        new.request.target_description = Some("the grey cat on the left".into());
        new.request.locks = vec!["the red collar".into()];
        let job = JobItem::queued(new, clock::now(), std::time::Duration::from_secs(60));

        let redacted = job.redacted("2026-12-01T00:00:00.000Z");

        assert_eq!(redacted.credits, job.credits);
        assert_eq!(redacted.status, job.status);
        assert_eq!(redacted.request_hash, job.request_hash);
        assert_eq!(redacted.request.style, job.request.style);
        assert_eq!(redacted.request.custom_style, None);
        assert_eq!(redacted.request.target_description, None);
        assert!(redacted.request.locks.is_empty());
        assert_eq!(redacted.repair.map(|r| r.instruction), Some(String::new()));
        assert_eq!(
            redacted.images_deleted_at.as_deref(),
            Some("2026-12-01T00:00:00.000Z")
        );
        let again = job
            .redacted("2026-12-01T00:00:00.000Z")
            .redacted("2027-01-01T00:00:00.000Z");
        assert_eq!(
            again.images_deleted_at.as_deref(),
            Some("2026-12-01T00:00:00.000Z"),
            "the first deletion's time is kept"
        );
    }

    #[test]
    fn a_queued_job_is_stored_under_the_attribute_names_the_table_already_holds() {
        let names = |job: &JobItem| {
            let mut keys: Vec<String> = crate::store::to_item(job)
                .unwrap_or_else(|e| panic!("{e}"))
                .into_keys()
                .collect();
            keys.sort();
            keys
        };
        let edit = [
            "created_at",
            "credits",
            "dispatch_count",
            "dispatched_at",
            "job_id",
            "operation",
            "request",
            "request_hash",
            "status",
            "sweep_at",
            "sweep_state",
            "updated_at",
            "user_id",
            "user_sort",
        ];
        let now = clock::now();
        let wait = std::time::Duration::from_secs(60);
        assert_eq!(names(&JobItem::queued(new_job(None), now, wait)), edit);

        let root = JobItem::queued(new_job(None), now, wait).job_id;
        let repair = JobItem::queued(
            new_job(Some(RepairOf {
                root_job_id: root,
                instruction: "finer".into(),
            })),
            now,
            wait,
        );
        let mut with_repair = edit.to_vec();
        with_repair.push(attr::REPAIR);
        with_repair.sort_unstable();
        assert_eq!(names(&repair), with_repair);
    }
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
