//! The metric catalogue: names, units, dimension keys and the values alarms select on, which
//! the infrastructure reads (`atelier-admin metrics`).

use metrics::Unit;

use crate::domain::FailureCode;

/// Namespace of every Atelier metric (the infrastructure's alarms watch these names).
pub const NAMESPACE: &str = "Atelier";

/// The metric catalogue: names, units and dimension keys the infrastructure relies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A job reached a final state (`Outcome`, `FailureCode` = `NONE` when delivered).
    JobsFinished,
    /// A paid model call returned (`CallKind`, `CallOutcome` = `ok` or the error's code).
    ModelCalls,
    /// How long a model call took (`CallKind`).
    ModelCallLatency,
    /// The cost booked for a model call, in micro-dollars (`CallKind`; unknown costs omitted).
    ModelCallCostMicros,
    /// Submit → claim by a consumer.
    QueueWait,
    /// Submit → delivered.
    DeliveryTime,
    /// A refund of a job's credits (`RefundSource`).
    Refunds,
    /// The credits those refunds returned (`RefundSource`).
    RefundedCredits,
    /// A submit answered from an earlier job under the same key (nothing charged).
    Replays,
    /// A key reused with another request (409).
    IdempotencyConflicts,
    /// A 402 or 429 answer (`Status`, `Code`).
    Refusals,
    /// The UTC day's `used + reserved` as a percent of its cap (what the breaker compares).
    BudgetUsedPercent,
    /// The UTC day's settled spend (`used`) as a percent of its cap.
    BudgetSpentPercent,
    /// The UTC day's open reservations as a percent of its cap.
    BudgetReservedPercent,
    /// Sweeper: what one sweep did (`Action`).
    SweeperActions,
    /// Sweeper: jobs found stuck in `processing` (and failed and refunded) by one sweep.
    JobsStuck,
    /// Sweeper: refunds one sweep owed (dispatch limit, stuck job) and could not make.
    RefundsFailed,
    /// A ledger row was modified or removed outside the append path (`EventName`).
    LedgerRowsChanged,
    /// Scheduled audit: accounts whose balance disagrees with their ledger (one pass).
    AuditOffenders,
    /// Scheduled audit: accounts one pass checked.
    AuditedAccounts,
    /// One webhook POST (`Outcome` = `delivered` or `failed`, `Endpoint` = the endpoint id).
    WebhookAttempts,
    /// One webhook POST's time until its answer or timeout (`Endpoint`).
    WebhookAttemptLatency,
    /// One push to a device (`Outcome` = `delivered`, `failed` or `unregistered`, `Platform` =
    /// `ios` or `android`).
    PushAttempts,
    /// The sweeper's round: age in seconds of the oldest event it found with an endpoint still
    /// to serve (alarmed on: deliveries are stuck).
    WebhookOldestUndeliveredAge,
    /// An endpoint disabled after failing every round of a long run (alarmed on).
    WebhookEndpointsDisabled,
    /// The provider answered "no such model" for a configured model: an outage (alarmed on).
    ModelUnavailable,
    /// Daily: days until the nearest announced shutdown of a configured model (negative once
    /// past; [`NO_SHUTDOWN_DAYS`] when none is announced). Alarmed on at 30 days.
    ModelDaysToShutdown,
    /// A payment provider's webhook delivery was handled (`Outcome`: `granted`, `reversed`,
    /// `reversed_first`, `restored`, `duplicate`, `ignored`, `signature_invalid`, `malformed`,
    /// `not_yet_recorded`, `not_configured`, `failed`); `signature_invalid` is alarmed on.
    PaymentEvents,
    /// A model provider's circuit breaker changed phase (`Provider`, `Transition` = `opened`,
    /// `half_open`, `closed`); `opened` is alarmed on per provider.
    ProviderBreaker,
    /// Credits a purchase granted (`Pack`).
    PurchasedCredits,
    /// What a granted purchase was paid, in the currency's minor unit (`Pack`, `Currency`).
    PurchaseRevenue,
    /// Credits a new edit or repair charged (`Operation`); replays charge nothing and count
    /// nothing. Against `PurchasedCredits` and `RefundedCredits` it shows credits in vs spent.
    ChargedCredits,
    /// Signed data we refused, or our credentials a push service refused (`Source`, one of
    /// [`Verification`]); each source is alarmed on.
    VerificationFailures,
}

/// The metric catalogue for the infrastructure (`atelier-admin metrics`, committed as
/// `infra/metrics.json`): the namespace and every metric's name, keyed by its name in
/// lower camel case, so CDK and Terraform alarm on names the code emits, never on copies.
pub fn export() -> serde_json::Value {
    let names: serde_json::Map<String, serde_json::Value> = Metric::ALL
        .iter()
        .map(|m| {
            let name = m.name();
            let key = name[..1].to_ascii_lowercase() + &name[1..];
            (key, serde_json::Value::from(name))
        })
        .collect();
    let values: serde_json::Map<String, serde_json::Value> = ALARMED_VALUES
        .iter()
        .map(|(key, value)| ((*key).to_owned(), serde_json::Value::from(*value)))
        .collect();
    serde_json::json!({ "namespace": NAMESPACE, "names": names, "values": values })
}

/// Dimension values alarms select on, exported beside the names so an alarm never spells one.
pub mod payment_outcome {
    /// A Stripe delivery failed the signature check (a wrong webhook secret).
    pub const SIGNATURE_INVALID: &str = "signature_invalid";
    /// A purchase was refunded or disputed and its credits taken back.
    pub const REVERSED: &str = "reversed";
    /// A refund or revocation arrived before its purchase: recorded (a tombstone), so the
    /// purchase grants nothing when it lands.
    pub const REVERSED_FIRST: &str = "reversed_first";
    /// A transaction an app posted, or a notification, was not Apple's signed data for this
    /// app (forged, expired, another app or store): counted apart from Stripe's
    /// [`SIGNATURE_INVALID`], and alarmed on as [`Metric::VerificationFailures`].
    pub const APP_STORE_REFUSED: &str = "app_store_refused";
    /// A purchase token an app posted that Google Play does not vouch for (unknown, another
    /// app's, unusable): counted apart and not alarmed, as [`APP_STORE_REFUSED`]. A refused
    /// Pub/Sub push counts as [`SIGNATURE_INVALID`].
    pub const GOOGLE_PLAY_REFUSED: &str = "google_play_refused";
}

/// `values` of the catalogue: key (lower camel case) → dimension value.
const ALARMED_VALUES: [(&str, &str); 6] = [
    (
        "paymentSignatureInvalid",
        payment_outcome::SIGNATURE_INVALID,
    ),
    ("paymentReversed", payment_outcome::REVERSED),
    (
        "verificationAppStoreTransaction",
        Verification::AppStoreTransaction.as_str(),
    ),
    (
        "verificationAppStoreNotification",
        Verification::AppStoreNotification.as_str(),
    ),
    ("verificationApns", Verification::Apns.as_str()),
    ("verificationFcm", Verification::Fcm.as_str()),
];

/// What failed verification: the `Source` of [`Metric::VerificationFailures`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// A signed transaction an app posted was not Apple's signed data for this app (any
    /// caller can post one, but a run of them is a wrong bundle id, root or environment).
    AppStoreTransaction,
    /// An App Store Server Notification was not Apple's signed data for this app.
    AppStoreNotification,
    /// APNs refused our provider token (403: a revoked or wrong key, key id or team).
    Apns,
    /// FCM (401/403) or Google's token endpoint refused our service account.
    Fcm,
}

impl Verification {
    pub const fn as_str(self) -> &'static str {
        match self {
            Verification::AppStoreTransaction => "app_store_transaction",
            Verification::AppStoreNotification => "app_store_notification",
            Verification::Apns => "apns",
            Verification::Fcm => "fcm",
        }
    }
}

/// [`Metric::ModelDaysToShutdown`] when no configured model has an announced shutdown.
pub const NO_SHUTDOWN_DAYS: i64 = 9_999;

impl Metric {
    pub const ALL: [Metric; 33] = [
        Metric::JobsFinished,
        Metric::ModelCalls,
        Metric::ModelCallLatency,
        Metric::ModelCallCostMicros,
        Metric::QueueWait,
        Metric::DeliveryTime,
        Metric::Refunds,
        Metric::RefundedCredits,
        Metric::Replays,
        Metric::IdempotencyConflicts,
        Metric::Refusals,
        Metric::BudgetUsedPercent,
        Metric::BudgetSpentPercent,
        Metric::BudgetReservedPercent,
        Metric::SweeperActions,
        Metric::JobsStuck,
        Metric::RefundsFailed,
        Metric::LedgerRowsChanged,
        Metric::AuditOffenders,
        Metric::AuditedAccounts,
        Metric::WebhookAttempts,
        Metric::WebhookAttemptLatency,
        Metric::PushAttempts,
        Metric::WebhookOldestUndeliveredAge,
        Metric::WebhookEndpointsDisabled,
        Metric::ModelUnavailable,
        Metric::ModelDaysToShutdown,
        Metric::PaymentEvents,
        Metric::ProviderBreaker,
        Metric::PurchasedCredits,
        Metric::PurchaseRevenue,
        Metric::ChargedCredits,
        Metric::VerificationFailures,
    ];

    /// The CloudWatch metric name.
    pub const fn name(self) -> &'static str {
        match self {
            Metric::JobsFinished => "JobsFinished",
            Metric::ModelCalls => "ModelCalls",
            Metric::ModelCallLatency => "ModelCallLatency",
            Metric::ModelCallCostMicros => "ModelCallCostMicros",
            Metric::QueueWait => "QueueWait",
            Metric::DeliveryTime => "DeliveryTime",
            Metric::Refunds => "Refunds",
            Metric::RefundedCredits => "RefundedCredits",
            Metric::Replays => "Replays",
            Metric::IdempotencyConflicts => "IdempotencyConflicts",
            Metric::Refusals => "Refusals",
            Metric::BudgetUsedPercent => "BudgetUsedPercent",
            Metric::BudgetSpentPercent => "BudgetSpentPercent",
            Metric::BudgetReservedPercent => "BudgetReservedPercent",
            Metric::SweeperActions => "SweeperActions",
            Metric::JobsStuck => "JobsStuck",
            Metric::RefundsFailed => "RefundsFailed",
            Metric::LedgerRowsChanged => "LedgerRowsChanged",
            Metric::AuditOffenders => "AuditOffenders",
            Metric::AuditedAccounts => "AuditedAccounts",
            Metric::WebhookAttempts => "WebhookAttempts",
            Metric::WebhookAttemptLatency => "WebhookAttemptLatency",
            Metric::PushAttempts => "PushAttempts",
            Metric::WebhookOldestUndeliveredAge => "WebhookOldestUndeliveredAge",
            Metric::WebhookEndpointsDisabled => "WebhookEndpointsDisabled",
            Metric::ModelUnavailable => "ModelUnavailable",
            Metric::ModelDaysToShutdown => "ModelDaysToShutdown",
            Metric::PaymentEvents => "PaymentEvents",
            Metric::ProviderBreaker => "ProviderBreaker",
            Metric::PurchasedCredits => "PurchasedCredits",
            Metric::PurchaseRevenue => "PurchaseRevenue",
            Metric::ChargedCredits => "ChargedCredits",
            Metric::VerificationFailures => "VerificationFailures",
        }
    }

    /// The CloudWatch unit.
    pub const fn unit(self) -> Unit {
        match self {
            Metric::ModelCallLatency
            | Metric::QueueWait
            | Metric::DeliveryTime
            | Metric::WebhookAttemptLatency => Unit::Milliseconds,
            Metric::WebhookOldestUndeliveredAge => Unit::Seconds,
            Metric::BudgetUsedPercent
            | Metric::BudgetSpentPercent
            | Metric::BudgetReservedPercent => Unit::Percent,
            _ => Unit::Count,
        }
    }

    /// The dimension keys besides `FunctionName`, in the order alarms name them.
    pub const fn dimensions(self) -> &'static [&'static str] {
        match self {
            Metric::JobsFinished => &[dim::OUTCOME, dim::FAILURE_CODE],
            Metric::ModelCalls => &[dim::CALL_KIND, dim::CALL_OUTCOME],
            Metric::ModelCallLatency | Metric::ModelCallCostMicros => &[dim::CALL_KIND],
            Metric::Refunds | Metric::RefundedCredits => &[dim::REFUND_SOURCE],
            Metric::Refusals => &[dim::STATUS, dim::CODE],
            Metric::SweeperActions => &[dim::ACTION],
            Metric::LedgerRowsChanged => &[dim::EVENT_NAME],
            Metric::WebhookAttempts => &[dim::OUTCOME, dim::ENDPOINT],
            Metric::WebhookAttemptLatency => &[dim::ENDPOINT],
            Metric::PushAttempts => &[dim::OUTCOME, dim::PLATFORM],
            Metric::PaymentEvents => &[dim::OUTCOME],
            Metric::ProviderBreaker => &[dim::PROVIDER, dim::TRANSITION],
            Metric::PurchasedCredits => &[dim::PACK],
            Metric::PurchaseRevenue => &[dim::PACK, dim::CURRENCY],
            Metric::ChargedCredits => &[dim::OPERATION],
            Metric::VerificationFailures => &[dim::SOURCE],
            _ => &[],
        }
    }
}

/// Dimension keys.
pub mod dim {
    pub const FUNCTION_NAME: &str = "FunctionName";
    pub const OUTCOME: &str = "Outcome";
    pub const FAILURE_CODE: &str = "FailureCode";
    pub const CALL_KIND: &str = "CallKind";
    pub const CALL_OUTCOME: &str = "CallOutcome";
    pub const REFUND_SOURCE: &str = "RefundSource";
    pub const STATUS: &str = "Status";
    pub const CODE: &str = "Code";
    pub const ACTION: &str = "Action";
    /// A DynamoDB stream record's `eventName` (`MODIFY`, `REMOVE`).
    pub const EVENT_NAME: &str = "EventName";
    /// A credit pack's id (a handful, set by the operator).
    pub const PACK: &str = "Pack";
    /// ISO 4217, lower case.
    pub const CURRENCY: &str = "Currency";
    /// A webhook endpoint's id (a handful, added by the operator).
    pub const ENDPOINT: &str = "Endpoint";
    /// A push's platform (`ios`, `android`).
    pub const PLATFORM: &str = "Platform";
    /// A model provider of the catalogue (`openai`, `gemini`).
    pub const PROVIDER: &str = "Provider";
    /// A circuit breaker's change of phase (`opened`, `half_open`, `closed`).
    pub const TRANSITION: &str = "Transition";
    /// `edit` or `repair`.
    pub const OPERATION: &str = "Operation";
    /// What failed verification ([`super::Verification`]).
    pub const SOURCE: &str = "Source";
}

/// How a job ended, as the `Outcome` dimension says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEnd {
    Delivered,
    /// Failed (or canceled) and refunded with this code.
    Failed(FailureCode),
}

impl JobEnd {
    /// The `Outcome` and `FailureCode` dimension values.
    pub fn dimensions(self) -> (&'static str, &'static str) {
        match self {
            JobEnd::Delivered => ("delivered", "NONE"),
            JobEnd::Failed(FailureCode::Canceled) => ("canceled", FailureCode::Canceled.as_str()),
            JobEnd::Failed(code) => ("failed", code.as_str()),
        }
    }
}

/// Who refunded a job (the `RefundSource` dimension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundSource {
    /// The consumer failed the job it was processing.
    Consumer,
    /// The sweeper failed a job past a deadline.
    Sweeper,
    /// The owner canceled it while queued.
    Cancel,
    /// An operator refunded it (`atelier-admin job refund`).
    Operator,
}

impl RefundSource {
    pub const fn as_str(self) -> &'static str {
        match self {
            RefundSource::Consumer => "consumer",
            RefundSource::Sweeper => "sweeper",
            RefundSource::Cancel => "cancel",
            RefundSource::Operator => "operator",
        }
    }
}
