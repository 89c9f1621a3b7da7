//! THE place for DynamoDB names: tables, keys, indexes, attributes, key builders and the item
//! structs (`*Item` rows) that go in and out through `serde_dynamo`. Values nested in a row
//! (a job's failure or result) are domain types; no type here is part of the API. Provisioning (local stack) and the
//! infrastructure's drift guard both read [`TABLES`].

use serde::{Deserialize, Serialize};

use crate::config::{Resources, env};
use crate::domain::TraceId;
use crate::domain::job::{CurrentVersion, Dispatch, Job, RepairOf, Stage, State};
use crate::domain::{
    AddressHash, Credits, EditSpec, InputVersion, JobFailure, JobId, JobResult, JobState,
    LedgerKind, Micros, Operation, UserId,
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
    /// A job's trace id (`JobItem::trace_id`).
    pub const TRACE_ID: &str = "trace_id";
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
    /// A processing job's step (`looking`, `drawing`, `checking`), written by the consumer
    /// when it reaches one; shown as progress, decides nothing.
    pub const STAGE: &str = "stage";
    /// On an account: when its owner (or an operator) asked to delete it; from then on it
    /// refuses new uploads and submits, and a new token for the same subject finds it closed.
    pub const CLOSED_AT: &str = "closed_at";
    /// On an account: since when its owner lets the App Store see what they did with a purchase
    /// they ask Apple to refund (absent: not consented).
    pub const CONSUMPTION_CONSENT_AT: &str = "consumption_consent_at";
    /// On an account: the random UUID its app buys with in the stores (`appAccountToken`,
    /// `obfuscatedAccountId`); absent on accounts created before it was stored.
    pub const APP_ACCOUNT_TOKEN: &str = "app_account_token";
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
    /// quotas, on a caller's request window: how many requests it made in that window.
    pub const REQUESTS: &str = "requests";
    /// quotas, on a user's [`super::WAITS_QUOTA`] row: slot `i`'s lease end (unix seconds) is
    /// `wait_until_<i>` and its holder `wait_id_<i>` (see `store::waits`).
    pub const WAIT_UNTIL_PREFIX: &str = "wait_until_";
    pub const WAIT_ID_PREFIX: &str = "wait_id_";
    /// quotas, on a user's [`super::DEVICES_QUOTA`] row: how many devices are registered.
    pub const DEVICE_COUNT: &str = "device_count";
    /// quotas, on a device row: the push service's token (a delete for an invalid token is
    /// conditional on it, so a token registered since is kept).
    pub const TOKEN: &str = "token";
    pub const PLATFORM: &str = "platform";
    /// quotas, on a push token's owner row: the account and the device holding the token.
    pub const OWNER_ID: &str = "owner_id";
    pub const DEVICE_ID: &str = "device_id";

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
    /// webhooks, on an (event, endpoint) delivery row: attempts claimed so far (every run),
    /// the count when the current run began (a replay starts a new run), the claim's lease,
    /// when the next attempt is due, whether a queue message carries it, and the end.
    pub const ATTEMPTS: &str = "attempts";
    pub const RUN_START: &str = "run_start";
    pub const LEASE_UNTIL: &str = "lease_until";
    pub const NEXT_DUE: &str = "next_due";
    pub const QUEUED: &str = "queued";
    pub const DELIVERED_AT: &str = "delivered_at";
    pub const GAVE_UP_AT: &str = "gave_up_at";
    pub const ENDPOINT_ID: &str = "endpoint_id";
    /// webhooks, on an endpoint's slot row: who holds it (a message id).
    pub const HOLDER: &str = "holder";
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

/// The prefix of an (event, endpoint) delivery row's sort key.
pub const WEBHOOK_DELIVERY_PREFIX: &str = "delivery#";
/// The partition of the endpoints' concurrency slots (`<endpoint id>#<slot>`).
pub const WEBHOOK_SLOTS: &str = "slots";

/// An (event, endpoint) delivery row's sort key: `delivery#<endpoint id>`.
pub fn webhook_delivery_key(endpoint: &str) -> String {
    format!("{WEBHOOK_DELIVERY_PREFIX}{endpoint}")
}

/// The state of one event's delivery to one endpoint (absent until its first attempt is
/// claimed). Attempt `n` is claimed once: only when `attempts` is `n - 1` and no live lease
/// holds it, so a duplicate message or a re-drive beside a late message sends nothing twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookDeliveryItem {
    /// The event id.
    pub hook_pk: String,
    /// [`webhook_delivery_key`].
    pub hook_sk: String,
    pub endpoint_id: String,
    pub attempts: u32,
    #[serde(default)]
    pub run_start: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_due: Option<String>,
    #[serde(default)]
    pub queued: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gave_up_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl WebhookDeliveryItem {
    /// Delivered, or the schedule is over: nothing more to send.
    pub fn ended(&self) -> bool {
        self.delivered_at.is_some() || self.gave_up_at.is_some()
    }
}

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
    /// The trace id of the job it reports (absent on other events), for log lines only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
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
    /// [`attr::CONSUMPTION_CONSENT_AT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumption_consent_at: Option<String>,
    /// [`attr::APP_ACCOUNT_TOKEN`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_account_token: Option<String>,
}

/// The `quota` key of a caller's request counter for the window starting at `start` (Unix
/// seconds).
pub fn request_window_key(start: i64) -> String {
    format!("requests#{start}")
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

/// The `quota` key of a user's device counter (never expired: it has no `expires_at`).
pub const DEVICES_QUOTA: &str = "devices";
/// The prefix of a device row's `quota` key.
pub const DEVICE_PREFIX: &str = "device#";

/// The `quota` key of one device of a user: `device#<id>`.
pub fn device_key(id: &crate::domain::device::DeviceId) -> String {
    format!("{DEVICE_PREFIX}{id}")
}

/// A device registered for push (quotas table, beside the user's counters; no TTL). Written
/// only in a transaction with the user's [`DEVICES_QUOTA`] count, so the count is exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceItem {
    pub user_id: UserId,
    /// [`device_key`].
    pub quota: String,
    pub platform: crate::domain::device::Platform,
    pub token: crate::domain::device::PushToken,
    pub created_at: String,
    pub updated_at: String,
}

/// The partition of a push token's owner row in the quotas table: `push-token#` and the
/// SHA-256 of the token (hex; an APNs token's hex in lower case, its case meaning nothing).
/// A user id never holds `#`, so it is never a user's partition.
pub fn push_token_key(token: &crate::domain::device::PushToken) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(token.as_str().to_ascii_lowercase().as_bytes());
    format!("{PUSH_TOKEN_PREFIX}{}", hex::encode(digest))
}

/// The prefix of a push token's owner row's partition ([`push_token_key`]).
pub const PUSH_TOKEN_PREFIX: &str = "push-token#";
/// The sort key of a push token's owner row.
pub const PUSH_TOKEN_OWNER: &str = "owner";

/// Which device of which account holds a push token (quotas table, [`push_token_key`] /
/// [`PUSH_TOKEN_OWNER`]): the uniqueness guard that gives a token one owner. Written in the
/// registration's transaction, which also removes the device row of the previous owner that
/// still holds the token; a row whose device has since changed its token or gone is stale
/// and harmless (a move removes the previous device only while it still holds the token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushTokenOwnerItem {
    /// [`push_token_key`] (the table's partition key).
    pub user_id: String,
    /// [`PUSH_TOKEN_OWNER`].
    pub quota: String,
    pub owner_id: UserId,
    pub device_id: crate::domain::device::DeviceId,
    pub updated_at: String,
}

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

/// A job's row. Use cases see it as a [`Job`]: read through `TryFrom` (a row whose state
/// lacks what it must carry is refused, never unwrapped), written through `From`.
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
    /// [`attr::STAGE`]: the consumer's step while processing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// The job's trace id; read leniently (a malformed one is dropped, the job still reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A stored job row that does not make a [`Job`]: a state without what it must carry.
#[derive(Debug, thiserror::Error)]
pub enum MalformedJob {
    #[error("job {0} is {1} without `{2}`")]
    Missing(JobId, &'static str, &'static str),
}

impl TryFrom<JobItem> for Job {
    type Error = MalformedJob;

    fn try_from(item: JobItem) -> Result<Job, MalformedJob> {
        let state = job_state(&item)?;
        Ok(Job {
            job_id: item.job_id,
            user_id: item.user_id,
            operation: item.operation,
            request: item.request,
            request_hash: item.request_hash,
            inputs: item.inputs,
            credits: item.credits,
            state,
            dispatch: Dispatch {
                count: item.dispatch_count,
                at: item.dispatched_at,
            },
            repair: item.repair,
            repairs_used: item.repairs_used,
            repair_attempts: item.repair_attempts,
            repairs_stopped: item.repairs_stopped,
            repair_active: item.repair_active,
            current: item.current,
            repair_jobs: item.repair_jobs,
            created_at: item.created_at,
            updated_at: item.updated_at,
            images_deleted_at: item.images_deleted_at,
            stage: item.stage,
            trace: item.trace_id.and_then(|t| TraceId::parse(&t).ok()),
        })
    }
}

/// The state a row's `status` names, with what it must carry (moved out of the row).
fn job_state(item: &JobItem) -> Result<State, MalformedJob> {
    let missing = |what| MalformedJob::Missing(item.job_id.clone(), item.status.as_str(), what);
    let failure = || item.failure.clone().ok_or_else(|| missing(attr::FAILURE));
    Ok(match item.status {
        JobState::Queued => State::Queued {
            resend_at: item
                .sweep_at
                .clone()
                .ok_or_else(|| missing(attr::SWEEP_AT))?,
        },
        JobState::Processing => State::Processing {
            started_at: item
                .started_at
                .clone()
                .ok_or_else(|| missing(attr::STARTED_AT))?,
        },
        JobState::Succeeded => State::Succeeded {
            started_at: item.started_at.clone(),
            result: Box::new(item.result.clone().ok_or_else(|| missing(attr::RESULT))?),
        },
        JobState::Failed => State::Failed {
            started_at: item.started_at.clone(),
            failure: failure()?,
        },
        JobState::Canceled => State::Canceled {
            failure: failure()?,
        },
    })
}

impl From<Job> for JobItem {
    /// The row of a job: the sweeper's index fields follow from its state (a queued job is
    /// due at its re-send, a processing one from its claim; a final one leaves the index).
    fn from(job: Job) -> JobItem {
        let status = job.status();
        let (sweep_at, started_at, result, failure) = match job.state {
            State::Queued { resend_at } => (Some(resend_at), None, None, None),
            State::Processing { started_at } => {
                (Some(started_at.clone()), Some(started_at), None, None)
            }
            State::Succeeded { started_at, result } => (None, started_at, Some(*result), None),
            State::Failed {
                started_at,
                failure,
            } => (None, started_at, None, Some(failure)),
            State::Canceled { failure } => (None, None, None, Some(failure)),
        };
        JobItem {
            user_sort: format!("{}#{}", job.created_at, job.job_id),
            job_id: job.job_id,
            user_id: job.user_id,
            operation: job.operation,
            status,
            request: job.request,
            request_hash: job.request_hash,
            inputs: job.inputs,
            credits: job.credits,
            created_at: job.created_at,
            updated_at: job.updated_at,
            dispatch_count: job.dispatch.count,
            dispatched_at: job.dispatch.at,
            sweep_state: sweep_at.is_some().then_some(status),
            sweep_at,
            failure,
            started_at,
            result,
            repair: job.repair,
            repairs_used: job.repairs_used,
            repair_attempts: job.repair_attempts,
            repairs_stopped: job.repairs_stopped,
            repair_active: job.repair_active,
            current: job.current,
            repair_jobs: job.repair_jobs,
            images_deleted_at: job.images_deleted_at,
            stage: job.stage,
            trace_id: job.trace.as_ref().map(|t| t.to_string()),
        }
    }
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
    /// The subjects it outlined (absent on items written before candidates).
    #[serde(default)]
    pub candidates: Vec<crate::domain::Candidate>,
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
    /// A random token of the reservation that wrote this attempt: when the reservation's
    /// answer is lost and the retry meets the write, its holder recognises its own (absent on
    /// attempts reserved before it existed, which then stay refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock;
    use crate::domain::NewJob;
    use crate::domain::job::fixtures::new_edit as new_job;

    /// The row of a new job queued at `now`, due for a re-send `wait` later.
    fn queued(new: NewJob, now: clock::Instant, wait: std::time::Duration) -> JobItem {
        JobItem::from(Job::queued(
            new,
            &clock::format(now),
            &clock::format(now + wait),
        ))
    }

    #[test]
    fn a_queued_job_is_dispatched_once_and_waits_in_the_sweepers_index_until_its_resend_is_due() {
        let now = time::macros::datetime!(2026-01-02 03:04:05.006 UTC);
        let job = queued(new_job(None), now, std::time::Duration::from_secs(60));
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
            attr::TRACE_ID,
            "updated_at",
            "user_id",
            "user_sort",
        ];
        let now = clock::now();
        let wait = std::time::Duration::from_secs(60);
        assert_eq!(names(&queued(new_job(None), now, wait)), edit);

        let root = queued(new_job(None), now, wait).job_id;
        let repair = queued(
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

    #[test]
    fn every_stored_state_reads_as_a_job_and_writes_back_as_the_same_row() {
        let now = clock::now();
        let row = queued(new_job(None), now, std::time::Duration::from_secs(60));
        let mut claimed = row.clone();
        claimed.status = JobState::Processing;
        claimed.sweep_state = Some(JobState::Processing);
        claimed.started_at = Some("2026-01-02T03:04:05.006Z".into());
        claimed.sweep_at.clone_from(&claimed.started_at);
        let mut failed = claimed.clone();
        failed.status = JobState::Failed;
        failed.sweep_state = None;
        failed.sweep_at = None;
        failed.failure = Some(JobFailure::new(crate::domain::FailureCode::TimedOut));
        let mut canceled = row.clone();
        canceled.status = JobState::Canceled;
        canceled.sweep_state = None;
        canceled.sweep_at = None;
        canceled.failure = Some(JobFailure::new(crate::domain::FailureCode::Canceled));
        for item in [row, claimed, failed, canceled] {
            let job = Job::try_from(item.clone()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(job.status(), item.status);
            assert_eq!(JobItem::from(job), item);
        }
    }

    #[test]
    fn a_row_whose_state_lacks_what_it_must_carry_is_refused_with_its_id() {
        let mut row = queued(
            new_job(None),
            clock::now(),
            std::time::Duration::from_secs(60),
        );
        row.status = JobState::Succeeded;
        let refused = Job::try_from(row.clone())
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            refused,
            Err(format!("job {} is succeeded without `result`", row.job_id))
        );
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
