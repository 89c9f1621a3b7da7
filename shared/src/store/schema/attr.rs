//! Attribute names. Expressions bind these through `#placeholders`.

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
/// On a closed account, sparse: [`super::DELETION_PENDING`](super::accounts::DELETION_PENDING) from the close until the
/// deletion finished, so the sweeper finds exactly the deletions left to finish.
pub const DELETION_STATE: &str = "deletion_state";

/// quotas: which counter of which UTC day (`uploads#2026-12-01`).
pub const QUOTA: &str = "quota";
pub const SLOTS: &str = "slots";
pub const BYTES: &str = "bytes";
/// quotas, on a caller's request window: how many requests it made in that window.
pub const REQUESTS: &str = "requests";
/// quotas, on a user's day of previews: how many previews were submitted that UTC day.
pub const PREVIEWS: &str = "previews";
/// quotas, on a user's [`super::WAITS_QUOTA`](super::quotas::WAITS_QUOTA) row: slot `i`'s lease end (unix seconds) is
/// `wait_until_<i>` and its holder `wait_id_<i>` (see `store::waits`).
pub const WAIT_UNTIL_PREFIX: &str = "wait_until_";
pub const WAIT_ID_PREFIX: &str = "wait_id_";
/// quotas, on a user's [`super::DEVICES_QUOTA`](super::quotas::DEVICES_QUOTA) row: how many devices are registered.
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
