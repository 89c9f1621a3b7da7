//! The SQS consumer: for each `{ "jobId" }` record, run the job through the shared
//! processor. Batch size is 1, but the handler is written for any batch and reports partial
//! failures: only a transient error *before* the claim is reported for redelivery; after the
//! claim the processor fails and refunds instead, so no paid call is ever retried.

use std::time::{Duration, Instant, SystemTime};

use atelier_shared::adapters::queue::{JobMessage, TRACE_ATTRIBUTE};
use atelier_shared::domain::TraceId;
use atelier_shared::services::process::{ProcessError, Processor};
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use tracing::Instrument;

/// Handles one SQS event within the consumer's configured timeout from now.
pub async fn handle(processor: &Processor, event: SqsEvent) -> SqsBatchResponse {
    let timeout = Duration::from_secs(processor.app.config.limits.consumer_timeout_secs);
    handle_until(processor, event, Instant::now() + timeout).await
}

/// Handles one SQS event, finishing before `deadline` (the invocation's): no paid call
/// starts that could not return in time to deliver its result.
pub async fn handle_until(
    processor: &Processor,
    event: SqsEvent,
    deadline: Instant,
) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for record in event.records {
        let message_id = record.message_id.clone().unwrap_or_default();
        let trace = record
            .attributes
            .get(TRACE_ATTRIBUTE)
            .and_then(|h| TraceId::from_header(h))
            .map(|t| t.to_string())
            .unwrap_or_default();
        let span = tracing::info_span!("sqs_message", message_id = %message_id, trace_id = %trace);
        let failed = async {
            let Some(msg) = record.body.as_deref().and_then(|b| serde_json::from_str::<JobMessage>(b).ok()) else {
                // A message we cannot read will never become readable: acknowledge it.
                tracing::error!("message_malformed");
                return false;
            };
            match processor.process_until(&msg.job_id, deadline).await {
                Ok(outcome) => {
                    tracing::info!(job_id = %msg.job_id, outcome = ?outcome, "message_done");
                    false
                }
                Err(ProcessError::BeforeClaim(e)) => {
                    tracing::warn!(job_id = %msg.job_id, error = %atelier_shared::error::chain(&e), "message_retry");
                    true
                }
                Err(e) => {
                    // After the claim: the job stays `processing` and the sweeper fails and
                    // refunds it; redelivery would only lose the claim, so acknowledge.
                    tracing::error!(job_id = %msg.job_id, error = %atelier_shared::error::chain(&e), "message_failed_after_claim");
                    false
                }
            }
        }
        .instrument(span)
        .await;
        if failed {
            let mut f = BatchItemFailure::default();
            f.item_identifier = message_id;
            response.batch_item_failures.push(f);
        }
    }
    response
}

/// The invocation's deadline (Lambda gives wall-clock milliseconds) on the monotonic clock.
pub fn deadline_of(deadline: SystemTime) -> Instant {
    let left = deadline
        .duration_since(SystemTime::now())
        .unwrap_or(Duration::ZERO);
    Instant::now() + left
}
