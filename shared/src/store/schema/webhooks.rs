//! The webhook outbox's rows: endpoints, events, deliveries and attempts, and their keys.

use serde::{Deserialize, Serialize};

// Only named by the docs' links.
#[cfg(doc)]
use super::attr;

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

    /// Whether no message can claim attempt `n` any more: it was claimed (`attempts` only
    /// grows), or the schedule ended (a replay sends its own next attempt). The lasting half
    /// of the claim's condition (`Store::claim_webhook_attempt`).
    pub fn settled_for(&self, n: u32) -> bool {
        self.attempts >= n || self.ended()
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
