//! Every metric Atelier emits, in one place: CloudWatch Embedded Metric Format (one JSON
//! document per dimension set on its own stdout line, which CloudWatch Logs turns into
//! metrics: no API call, no IAM permission), written by `metrics_cloudwatch_embedded` behind
//! the `metrics` facade.
//!
//! Each fact has one function here, called where the fact is decided (a job finished, a model
//! call returned, a refusal answered), once. Dimensions are low-cardinality by construction:
//! they come from closed catalogues (outcome, [`FailureCode`], [`CallKind`], problem codes),
//! never a user or job id. Every document also carries `FunctionName` (the collector's default
//! dimension), so alarms name the function.
//!
//! Nothing is emitted until [`install`] has run (each function's `main.rs`, inside Lambda);
//! elsewhere the facade's calls are no-ops. [`flush`] writes what one invocation recorded.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::Unit;
use metrics_cloudwatch_embedded::Collector;

use crate::clock::Instant;
use crate::domain::catalogue::CallKind;
use crate::domain::{Credits, FailureCode, Micros};

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

static COLLECTOR: OnceLock<&'static Collector> = OnceLock::new();

/// Errors installing the recorder.
#[derive(Debug, thiserror::Error)]
#[error("installing the metrics recorder: {0}")]
pub struct InstallError(String);

/// Installs the process-wide recorder, every document dimensioned by `function` (the Lambda
/// function's name). Once per process: a second call is refused.
pub fn install(function: &str) -> Result<(), InstallError> {
    let collector = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(NAMESPACE)
        .with_dimension(dim::FUNCTION_NAME, function.to_owned())
        .init()
        .map_err(|e| InstallError(e.to_string()))?;
    // The collector keeps units by name, whatever the kind of metric.
    for m in Metric::ALL {
        metrics::describe_counter!(m.name(), m.unit(), "");
    }
    COLLECTOR
        .set(collector)
        .map_err(|_| InstallError("already installed".to_owned()))
}

/// Inside Lambda: [`install`] under the function's name. Elsewhere nothing is installed.
pub fn install_in_lambda() -> Result<(), InstallError> {
    match crate::adapters::aws::lambda_function_name() {
        Some(name) => install(name),
        None => Ok(()),
    }
}

/// Whether a recorder is installed (callers skip reads made only for a metric otherwise).
pub fn enabled() -> bool {
    COLLECTOR.get().is_some()
}

/// Writes what was recorded since the last flush to `out` (one line per dimension set).
pub fn flush_to(out: impl std::io::Write) -> std::io::Result<()> {
    match COLLECTOR.get() {
        Some(c) => c.flush(out),
        None => Ok(()),
    }
}

/// Writes what one invocation recorded to stdout (where CloudWatch Logs reads EMF); a failed
/// write is logged, never fails the invocation.
pub fn flush() {
    if let Err(e) = flush_to(std::io::stdout().lock()) {
        tracing::warn!(error = %e, "metrics_flush_failed");
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Milliseconds from a stored time to `now` (`None` when the stamp does not parse: a timing
/// is never worth failing a job for).
fn millis_since(stamp: &str, now: Instant) -> Option<f64> {
    let then = crate::clock::parse(stamp)?;
    Some(((now - then).as_seconds_f64() * 1000.0).max(0.0))
}

/// A job reached its final state.
pub fn job_finished(end: JobEnd) {
    let (outcome, code) = end.dimensions();
    metrics::counter!(Metric::JobsFinished.name(), dim::OUTCOME => outcome, dim::FAILURE_CODE => code)
        .increment(1);
}

/// One webhook POST to `endpoint` ended after `millis`: answered 2xx or not.
pub fn webhook_attempt(endpoint: &str, delivered: bool, millis: u64) {
    let outcome = if delivered { "delivered" } else { "failed" };
    let ep = endpoint.to_owned();
    metrics::counter!(Metric::WebhookAttempts.name(), dim::OUTCOME => outcome, dim::ENDPOINT => ep.clone())
        .increment(1);
    metrics::histogram!(Metric::WebhookAttemptLatency.name(), dim::ENDPOINT => ep)
        .record(millis as f64);
}

/// Signed data was refused, or a push service refused our credentials.
pub fn verification_failed(what: Verification) {
    metrics::counter!(Metric::VerificationFailures.name(), dim::SOURCE => what.as_str())
        .increment(1);
}

/// One push to a device of `platform` ended with `outcome` (`delivered`, `failed`,
/// `unregistered`).
pub fn push_attempt(platform: &'static str, outcome: &'static str) {
    metrics::counter!(Metric::PushAttempts.name(), dim::OUTCOME => outcome, dim::PLATFORM => platform)
        .increment(1);
}

/// The sweeper's round found its oldest event still to deliver `secs` old (0: none).
pub fn webhook_oldest_pending(secs: u64) {
    metrics::gauge!(Metric::WebhookOldestUndeliveredAge.name()).set(secs as f64);
}

/// A payment provider's webhook delivery was handled with `outcome` (see
/// [`Metric::PaymentEvents`]).
pub fn payment_event(outcome: &'static str) {
    metrics::counter!(Metric::PaymentEvents.name(), dim::OUTCOME => outcome).increment(1);
}

/// A purchase granted `credits` of `pack`, paid `amount` minor units of `currency`.
pub fn purchased(pack: &str, credits: Credits, amount: i64, currency: &str) {
    let (pack, currency) = (pack.to_owned(), currency.to_owned());
    metrics::counter!(Metric::PurchasedCredits.name(), dim::PACK => pack.clone())
        .increment(u64::try_from(credits.get()).unwrap_or(0));
    metrics::counter!(Metric::PurchaseRevenue.name(), dim::PACK => pack, dim::CURRENCY => currency)
        .increment(u64::try_from(amount).unwrap_or(0));
}

/// A webhook endpoint was disabled after a long run of failures.
pub fn webhook_endpoint_disabled() {
    metrics::counter!(Metric::WebhookEndpointsDisabled.name()).increment(1);
}

/// A job's credits went back to its owner.
pub fn refunded(source: RefundSource, credits: Credits) {
    let s = source.as_str();
    metrics::counter!(Metric::Refunds.name(), dim::REFUND_SOURCE => s).increment(1);
    metrics::counter!(Metric::RefundedCredits.name(), dim::REFUND_SOURCE => s)
        .increment(u64::try_from(credits.get()).unwrap_or(0));
}

/// A job failed and was refunded in one transaction: both facts.
pub fn failed_and_refunded(code: FailureCode, source: RefundSource, credits: Credits) {
    job_finished(JobEnd::Failed(code));
    refunded(source, credits);
}

/// A paid model call returned: `outcome` is `ok` or the error's stable code.
pub fn model_call(kind: CallKind, outcome: &'static str, latency: Duration, cost: Option<Micros>) {
    let k = kind.as_str();
    metrics::counter!(Metric::ModelCalls.name(), dim::CALL_KIND => k, dim::CALL_OUTCOME => outcome)
        .increment(1);
    metrics::histogram!(Metric::ModelCallLatency.name(), dim::CALL_KIND => k)
        .record(millis(latency));
    if let Some(cost) = cost {
        metrics::counter!(Metric::ModelCallCostMicros.name(), dim::CALL_KIND => k)
            .increment(u64::try_from(cost.get()).unwrap_or(0));
    }
}

/// The provider answered "no such model" (the model and call are in the `model_unavailable`
/// log line, not dimensions: one alarm covers every model).
pub fn model_unavailable() {
    metrics::counter!(Metric::ModelUnavailable.name()).increment(1);
}

/// A provider's circuit breaker changed phase (`opened`, `half_open`, `closed`).
pub fn provider_breaker(provider: &'static str, transition: &'static str) {
    metrics::counter!(Metric::ProviderBreaker.name(), dim::PROVIDER => provider, dim::TRANSITION => transition)
        .increment(1);
}

/// The daily lifecycle check: days until the nearest announced shutdown of a configured model.
pub fn model_days_to_shutdown(days: i64) {
    metrics::gauge!(Metric::ModelDaysToShutdown.name()).set(days as f64);
}

/// A consumer claimed, at `now`, a job submitted at `created_at`.
pub fn claimed(created_at: &str, now: Instant) {
    if let Some(ms) = millis_since(created_at, now) {
        metrics::histogram!(Metric::QueueWait.name()).record(ms);
    }
}

/// A job submitted at `created_at` was delivered at `now`.
pub fn delivered(created_at: &str, now: Instant) {
    job_finished(JobEnd::Delivered);
    if let Some(ms) = millis_since(created_at, now) {
        metrics::histogram!(Metric::DeliveryTime.name()).record(ms);
    }
}

/// A new job charged its owner `credits` (`operation`: `edit` or `repair`).
pub fn charged(operation: &'static str, credits: Credits) {
    metrics::counter!(Metric::ChargedCredits.name(), dim::OPERATION => operation)
        .increment(u64::try_from(credits.get()).unwrap_or(0));
}

/// A submit was answered from the job already under its key.
pub fn replayed() {
    metrics::counter!(Metric::Replays.name()).increment(1);
}

/// A key was reused with another request.
pub fn idempotency_conflict() {
    metrics::counter!(Metric::IdempotencyConflicts.name()).increment(1);
}

/// A request was refused with 402 or 429 (`code`: the problem code, a closed catalogue).
/// Other statuses are not refusals and record nothing.
pub fn refused(status: u16, code: &'static str) {
    let status = match status {
        402 => "402",
        429 => "429",
        _ => return,
    };
    metrics::counter!(Metric::Refusals.name(), dim::STATUS => status, dim::CODE => code)
        .increment(1);
}

/// The day's budget item as shares of its cap.
pub fn budget(used: Micros, reserved: Micros, cap: Micros) {
    let pct = |v: i64| percent_of(v, cap.get());
    let (used, reserved) = (used.get(), reserved.get());
    metrics::histogram!(Metric::BudgetUsedPercent.name())
        .record(pct(used.saturating_add(reserved)));
    metrics::histogram!(Metric::BudgetSpentPercent.name()).record(pct(used));
    metrics::histogram!(Metric::BudgetReservedPercent.name()).record(pct(reserved));
}

/// `part` as a percent of `cap` (100 when the cap is zero or less: nothing may be spent).
pub fn percent_of(part: i64, cap: i64) -> f64 {
    if cap <= 0 {
        100.0
    } else {
        part as f64 * 100.0 / cap as f64
    }
}

/// One sweep's counts, each a `SweeperActions` value by `Action`, plus the two alarmed ones.
pub fn sweep(actions: &[(&'static str, u64)], stuck: u64, refund_failures: u64) {
    for (action, n) in actions {
        metrics::counter!(Metric::SweeperActions.name(), dim::ACTION => *action).increment(*n);
    }
    // Emitted every sweep, zero included, so the alarms see a value each minute.
    let gauge = |m: Metric, v: u64| metrics::gauge!(m.name()).set(v as f64);
    gauge(Metric::JobsStuck, stuck);
    gauge(Metric::RefundsFailed, refund_failures);
}

/// A ledger row changed outside the append path (`event`: the stream's `MODIFY`/`REMOVE`).
pub fn ledger_row_changed(event: &'static str) {
    metrics::counter!(Metric::LedgerRowsChanged.name(), dim::EVENT_NAME => event).increment(1);
}

/// One scheduled audit pass: accounts checked and offenders found (zero included, so the
/// alarm sees a value each day).
pub fn audited(accounts: u64, offenders: u64) {
    metrics::counter!(Metric::AuditedAccounts.name()).increment(accounts);
    metrics::counter!(Metric::AuditOffenders.name()).increment(offenders);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_are_unique_and_every_dimension_key_is_a_catalogued_one() {
        let names: std::collections::HashSet<_> = Metric::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), Metric::ALL.len());
        let keys = [
            dim::OUTCOME,
            dim::FAILURE_CODE,
            dim::CALL_KIND,
            dim::CALL_OUTCOME,
            dim::REFUND_SOURCE,
            dim::STATUS,
            dim::CODE,
            dim::ACTION,
            dim::EVENT_NAME,
            dim::PACK,
            dim::CURRENCY,
            dim::ENDPOINT,
            dim::PLATFORM,
            dim::PROVIDER,
            dim::TRANSITION,
            dim::OPERATION,
            dim::SOURCE,
        ];
        for m in Metric::ALL {
            for d in m.dimensions() {
                assert!(
                    keys.contains(d),
                    "{} has an unknown dimension {d}",
                    m.name()
                );
                assert_ne!(
                    *d,
                    dim::FUNCTION_NAME,
                    "FunctionName is the default dimension"
                );
            }
        }
    }

    #[test]
    fn no_metric_is_dimensioned_by_a_user_or_job() {
        for m in Metric::ALL {
            for d in m.dimensions() {
                let d = d.to_ascii_lowercase();
                assert!(
                    !d.contains("user") && !d.contains("job"),
                    "{}: {d}",
                    m.name()
                );
            }
        }
    }

    #[test]
    fn a_job_end_names_its_outcome_and_code() {
        let cases = [
            (JobEnd::Delivered, ("delivered", "NONE")),
            (
                JobEnd::Failed(FailureCode::EditFailed),
                ("failed", "EDIT_FAILED"),
            ),
            (
                JobEnd::Failed(FailureCode::CheckFailed),
                ("failed", "CHECK_FAILED"),
            ),
            (
                JobEnd::Failed(FailureCode::Canceled),
                ("canceled", "CANCELED"),
            ),
        ];
        for (end, want) in cases {
            assert_eq!(end.dimensions(), want, "{end:?}");
        }
    }

    #[test]
    fn timings_are_milliseconds_budget_shares_percent_the_rest_counts() {
        assert_eq!(Metric::QueueWait.unit(), Unit::Milliseconds);
        assert_eq!(Metric::ModelCallLatency.unit(), Unit::Milliseconds);
        assert_eq!(Metric::BudgetReservedPercent.unit(), Unit::Percent);
        assert_eq!(Metric::JobsFinished.unit(), Unit::Count);
    }

    #[test]
    fn the_share_of_a_zero_cap_is_full() {
        assert_eq!(percent_of(50, 200), 25.0);
        assert_eq!(percent_of(0, 0), 100.0);
        assert_eq!(percent_of(300, 200), 150.0);
    }
}
