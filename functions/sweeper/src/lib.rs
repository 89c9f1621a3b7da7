//! The sweeper function: one bounded sweep per minute's EventBridge tick (and the webhook
//! safety net's round), one pass of the daily audit (`{"task":"audit"}`), the ledger tamper
//! alarm (DynamoDB stream records from the ledger table), the webhook fan-out (stream records
//! of new event rows from the webhooks table) and webhook delivery (SQS records from the
//! delivery queue). The event is parsed into [`SweeperEvent`] here, by shape; the
//! decisions are in `shared` (`services::sweep`, `services::guard`). The clock is a parameter,
//! so tests move time instead of sleeping.

use atelier_shared::adapters::webhooks::client::WebhookClient;
use atelier_shared::clock::Instant;
use atelier_shared::domain::UserId;
use atelier_shared::domain::webhooks::DeliveryMessage;
use atelier_shared::services::App;
use atelier_shared::services::audit::{AuditPass, PassEnd};
use atelier_shared::services::guard::{self, LedgerChange, StreamEventName};
use atelier_shared::services::sweep::{self, SweepLimits, SweepSummary};
use atelier_shared::services::webhooks;
use aws_lambda_events::dynamodb;
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use serde::Deserialize;
use serde_json::Value;

/// Runs one sweep as of `now`.
pub async fn handle(app: &App, now: Instant) -> SweepSummary {
    sweep::sweep(app, now, SweepLimits::default()).await
}

/// What invoked the sweeper.
#[derive(Debug)]
pub enum SweeperEvent {
    /// The minute's schedule: sweep.
    Tick,
    /// The daily schedule (`{"task":"audit"}`), or the audit continuing after `after`.
    Audit { after: Option<UserId> },
    /// Records from the ledger table's stream.
    LedgerStream(dynamodb::Event),
    /// Records from the webhooks table's stream (new event rows).
    WebhookStream(dynamodb::Event),
    /// Messages from the webhook delivery queue.
    WebhookDeliveries(SqsEvent),
}

/// An event the sweeper does not know, or a known shape with a bad field.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error(
        "unrecognized event: expected a scheduled event, {{\"task\":\"audit\"}} or DynamoDB stream records"
    )]
    Unknown,
    #[error("malformed {shape} event")]
    Malformed {
        shape: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("the audit's `after` is not a user id")]
    BadCursor,
    #[error("a stream record has an unknown eventName {0:?}")]
    UnknownStreamEvent(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditTask {
    task: TaskName,
    #[serde(default)]
    after: Option<String>,
}

#[derive(Deserialize)]
enum TaskName {
    #[serde(rename = "audit")]
    Audit,
}

impl SweeperEvent {
    /// Reads the event by its shape: `Records` (a stream batch), `task` (the audit), or an
    /// EventBridge `Scheduled Event` (the minute's tick).
    pub fn parse(event: Value) -> Result<SweeperEvent, EventError> {
        let malformed = |shape| move |source| EventError::Malformed { shape, source };
        if let Some(records) = event.get("Records") {
            let source = records
                .get(0)
                .and_then(|r| r.get("eventSource"))
                .and_then(Value::as_str);
            if source == Some("aws:sqs") {
                let batch = serde_json::from_value(event).map_err(malformed("sqs"))?;
                return Ok(SweeperEvent::WebhookDeliveries(batch));
            }
            let batch: dynamodb::Event =
                serde_json::from_value(event).map_err(malformed("stream"))?;
            let hooks = batch
                .records
                .first()
                .is_some_and(|r| webhooks::is_webhooks_key(&r.change.keys));
            return Ok(if hooks {
                SweeperEvent::WebhookStream(batch)
            } else {
                SweeperEvent::LedgerStream(batch)
            });
        }
        if event.get("task").is_some() {
            let task: AuditTask = serde_json::from_value(event).map_err(malformed("task"))?;
            let TaskName::Audit = task.task;
            let after = match task.after {
                Some(raw) => Some(UserId::parse(&raw).ok_or(EventError::BadCursor)?),
                None => None,
            };
            return Ok(SweeperEvent::Audit { after });
        }
        match event.get("detail-type").and_then(Value::as_str) {
            Some("Scheduled Event") => Ok(SweeperEvent::Tick),
            _ => Err(EventError::Unknown),
        }
    }
}

/// The tamper alarm over one stream batch: every `MODIFY`/`REMOVE` reported, `INSERT`s
/// ignored; returns how many changes were reported. Every record is read before any is
/// reported, so an unknown event name fails the batch without a partial report.
pub fn ledger_stream(batch: dynamodb::Event) -> Result<usize, EventError> {
    let mut changes = Vec::new();
    for record in batch.records {
        let event = StreamEventName::parse(&record.event_name)
            .ok_or(EventError::UnknownStreamEvent(record.event_name))?;
        changes.extend(LedgerChange::from_record(event, record.change.keys));
    }
    changes.iter().for_each(guard::ledger_row_changed);
    Ok(changes.len())
}

/// The payload that continues an unfinished audit in a new invocation (`None` once every
/// account was checked).
pub fn audit_continuation(pass: &AuditPass) -> Option<Value> {
    match &pass.end {
        PassEnd::Finished => None,
        PassEnd::Stopped { resume_after } => {
            Some(serde_json::json!({ "task": "audit", "after": resume_after.as_str() }))
        }
    }
}

/// The webhook safety net at `now`, after the sweep and within the rest of the function's
/// minute: re-drives (enqueues, never POSTs) any attempt due and unclaimed. A failure is
/// logged and left to the next tick; it never fails the sweep.
pub async fn redrive_webhooks(app: &App, http: &WebhookClient, now: Instant) {
    let budget = std::time::Duration::from_secs(30);
    match webhooks::redrive_due(hooks(app, http), now, budget).await {
        Ok(s) if s.events > 0 => tracing::info!(
            events = s.events,
            enqueued = s.enqueued,
            closed = s.closed,
            oldest_pending_secs = s.oldest_pending_secs,
            "webhooks_redriven"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "webhooks_redrive_failed"),
    }
}

/// The delivery context of this process.
pub fn hooks<'a>(app: &'a App, http: &'a WebhookClient) -> webhooks::Hooks<'a> {
    webhooks::Hooks {
        store: &app.store,
        http,
        settings: &app.config.webhooks,
        queue: &app.hooks_queue,
        pusher: app.pusher.as_deref(),
    }
}

/// The event ids of the new event rows in a webhooks-table stream batch (other rows and
/// other event names are skipped: the mapping's filter normally keeps them out).
pub fn webhook_stream_events(batch: dynamodb::Event) -> Vec<String> {
    batch
        .records
        .into_iter()
        .filter(|r| r.event_name == "INSERT")
        .filter_map(|r| webhooks::stream_event_id(r.change.keys))
        .collect()
}

/// One delivery batch: every message at once (one endpoint's slow answer never holds up
/// another's), each ONE POST. A message whose records could not be written is reported as a
/// batch item failure (the queue redelivers it); an unreadable one too (to the DLQ after five).
pub async fn deliver_webhooks(
    app: &App,
    http: &WebhookClient,
    batch: SqsEvent,
) -> SqsBatchResponse {
    let work = batch.records.into_iter().map(|record| async move {
        let id = record.message_id.clone().unwrap_or_default();
        let msg: DeliveryMessage = match record.body.as_deref().map(serde_json::from_str) {
            Some(Ok(m)) => m,
            _ => {
                tracing::error!(message_id = %id, "webhook_message_unreadable");
                return Some(id);
            }
        };
        let now = atelier_shared::clock::now();
        match webhooks::deliver(hooks(app, http), &msg, now).await {
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, event_id = %msg.event_id, endpoint = %msg.endpoint_id, "webhook_delivery_failed");
                Some(id)
            }
        }
    });
    let failed = futures::future::join_all(work).await;
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failed
        .into_iter()
        .flatten()
        .map(|item_identifier| {
            let mut f = BatchItemFailure::default();
            f.item_identifier = item_identifier;
            f
        })
        .collect();
    response
}

/// A sweep that owed refunds and could not make them.
#[derive(Debug, PartialEq, Eq)]
pub struct RefundsFailed(pub u64);

impl std::fmt::Display for RefundsFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} refund(s) could not be made this sweep (sweep_refund_failed lines name the jobs); the next sweep retries",
            self.0
        )
    }
}

impl std::error::Error for RefundsFailed {}

/// What the invocation reports: a failure when a refund could not be made, so the function's
/// own `Errors` metric (and its alarm) sees money owed to users, beside `RefundsFailed`. The
/// schedule does not retry (the next minute's sweep is the retry), so failing costs nothing.
/// Other per-item errors (a requeue, an orphan settlement) stay in the summary only: the next
/// sweep redoes them and no user is owed anything meanwhile.
pub fn verdict(summary: &SweepSummary) -> Result<(), RefundsFailed> {
    match summary.refund_failures {
        0 => Ok(()),
        n => Err(RefundsFailed(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atelier_shared::adapters::metrics::{self, Metric, dim};
    use serde_json::json;

    const RECORDED: &str = include_str!("fixtures/ledger-stream.json");

    fn parse(v: Value) -> Result<SweeperEvent, EventError> {
        SweeperEvent::parse(v)
    }

    #[test]
    fn the_minute_tick_the_daily_audit_and_a_stream_batch_are_told_apart_by_shape() {
        let tick = json!({ "version": "0", "id": "x", "detail-type": "Scheduled Event",
            "source": "aws.events", "time": "2026-12-01T03:00:00Z", "detail": {} });
        assert!(matches!(parse(tick), Ok(SweeperEvent::Tick)));
        assert!(matches!(
            parse(json!({ "task": "audit" })),
            Ok(SweeperEvent::Audit { after: None })
        ));
        let resumed = parse(json!({ "task": "audit", "after": "user-1" }));
        assert!(
            matches!(&resumed, Ok(SweeperEvent::Audit { after: Some(u) }) if u.as_str() == "user-1")
        );
        let stream = serde_json::from_str(RECORDED).unwrap_or(Value::Null);
        assert!(matches!(parse(stream), Ok(SweeperEvent::LedgerStream(b)) if b.records.len() == 3));
    }

    #[test]
    fn webhook_stream_records_and_delivery_messages_are_told_apart_from_the_ledger_stream() {
        let raw = include_str!("fixtures/webhooks-stream.json");
        let stream = serde_json::from_str(raw).unwrap_or(Value::Null);
        let Ok(SweeperEvent::WebhookStream(batch)) = parse(stream) else {
            panic!("a webhooks-table batch is the webhook stream");
        };
        assert_eq!(
            webhook_stream_events(batch),
            ["evt_job-1_succeeded", "evt_purchase_cs_1"],
            "only new event rows: not an attempt row, not a modified event"
        );
        let sqs = json!({ "Records": [{
            "messageId": "m-1", "receiptHandle": "r", "eventSource": "aws:sqs",
            "body": "{\"eventId\":\"evt_a\",\"endpointId\":\"ep_1\",\"attempt\":1}",
            "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:atelier-webhooks"
        }] });
        assert!(
            matches!(parse(sqs), Ok(SweeperEvent::WebhookDeliveries(b)) if b.records.len() == 1)
        );
        let ledger = serde_json::from_str(RECORDED).unwrap_or(Value::Null);
        assert!(matches!(parse(ledger), Ok(SweeperEvent::LedgerStream(_))));
    }

    #[test]
    fn unknown_or_malformed_events_are_clear_errors() {
        let cases = [
            (json!({}), "no known field"),
            (json!([1, 2]), "not an object"),
            (
                json!({ "detail-type": "Object Created" }),
                "another EventBridge event",
            ),
            (json!({ "task": "vacuum" }), "an unknown task"),
            (json!({ "task": "audit", "extra": 1 }), "an unknown field"),
            (json!({ "task": "audit", "after": "" }), "an empty cursor"),
            (
                json!({ "Records": [{ "eventName": "MODIFY" }] }),
                "a record without keys",
            ),
        ];
        for (event, why) in cases {
            let err = parse(event).err();
            assert!(err.is_some(), "{why}");
        }
        let unknown = parse(json!({}))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(unknown.contains("task"), "{unknown}");
    }

    #[test]
    fn a_recorded_stream_batch_alarms_on_modify_and_remove_never_on_insert() {
        let Ok(SweeperEvent::LedgerStream(batch)) =
            parse(serde_json::from_str(RECORDED).unwrap_or(Value::Null))
        else {
            panic!("the recorded batch parses");
        };
        metrics::install("atelier-test-sweeper").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ledger_stream(batch).ok(), Some(2));
        let mut out = Vec::new();
        metrics::flush_to(&mut out).unwrap_or_else(|e| panic!("{e}"));
        let docs: Vec<Value> = String::from_utf8_lossy(&out)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let changed = |name: &str| {
            docs.iter()
                .find(|d| d[dim::EVENT_NAME] == name)
                .map(|d| d[Metric::LedgerRowsChanged.name()].clone())
        };
        assert_eq!(changed("MODIFY"), Some(json!(1)), "{docs:#?}");
        assert_eq!(changed("REMOVE"), Some(json!(1)));
        assert_eq!(changed("INSERT"), None, "an append is not a change");
        let text = String::from_utf8_lossy(&out);
        assert!(
            !text.contains("user-ledger"),
            "a user id in a metric: {text}"
        );
    }

    #[test]
    fn an_unfinished_audit_continues_after_its_last_user_and_a_finished_one_stops() {
        use atelier_shared::services::audit::AuditReport;
        let pass = |end| AuditPass {
            report: AuditReport::default(),
            end,
        };
        assert_eq!(audit_continuation(&pass(PassEnd::Finished)), None);
        let last = UserId::parse("user-9").unwrap_or_else(|| panic!("a user id"));
        let next = audit_continuation(&pass(PassEnd::Stopped { resume_after: last }));
        assert_eq!(next, Some(json!({ "task": "audit", "after": "user-9" })));
        let Some(next) = next else { return };
        assert!(
            matches!(parse(next), Ok(SweeperEvent::Audit { after: Some(u) }) if u.as_str() == "user-9"),
            "the continuation is read back as the audit resuming"
        );
    }

    #[test]
    fn a_stream_record_with_an_unknown_event_name_fails_the_batch() {
        let mut v: Value = serde_json::from_str(RECORDED).unwrap_or(Value::Null);
        v["Records"][1]["eventName"] = json!("TRUNCATE");
        let Ok(SweeperEvent::LedgerStream(batch)) = parse(v) else {
            panic!("the batch parses");
        };
        assert!(matches!(
            ledger_stream(batch),
            Err(EventError::UnknownStreamEvent(n)) if n == "TRUNCATE"
        ));
    }

    #[test]
    fn a_sweep_with_a_failed_refund_fails_the_invocation() {
        assert_eq!(verdict(&SweepSummary::default()), Ok(()));
        let mut s = SweepSummary {
            errors: 3,
            ..SweepSummary::default()
        };
        assert_eq!(
            verdict(&s),
            Ok(()),
            "other errors are retried by the next sweep"
        );
        s.refund_failures = 2;
        assert_eq!(verdict(&s), Err(RefundsFailed(2)));
    }
}
