//! Recording: the process-wide collector, and one function per fact, called where the fact
//! is decided.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_cloudwatch_embedded::Collector;

use super::names::{JobEnd, Metric, NAMESPACE, RefundSource, Verification, dim};
use crate::clock::Instant;
use crate::domain::catalogue::CallKind;
use crate::domain::{Credits, FailureCode, Micros};

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
