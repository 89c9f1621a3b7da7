//! Webhook delivery, locally: the delivery queue's event source mapping (pollers that hand
//! each received batch to the sweeper's delivery handler as a real `SqsEvent` and delete the
//! messages it did not report as failures) and a stand-in for the webhooks table's stream.
//!
//! The stream: ministack 1.5.33 delivers stream records to a deployed Lambda (the local
//! cloud), but this in-process runner has no Lambda to receive them, so [`outbox_once`]
//! polls the outbox's due index once a second and hands each event it has not seen to the
//! same [`fan_out`](atelier_shared::services::webhooks::fan_out) the stream's batch reaches.

use std::collections::HashSet;
use std::time::Duration;

use atelier_shared::adapters::webhooks::client::WebhookClient;
use atelier_shared::domain::webhooks::REDRIVE_GRACE;
use atelier_shared::services::App;
use atelier_shared::services::webhooks;
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use aws_sdk_sqs::Client;

/// Milliseconds spent in the sweeper's delivery handler, summed over batches: what Lambda
/// would bill for them (the cost line of the webhook tests).
pub static HANDLER_MILLIS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Runs the outbox poller and the delivery queue's mapping, with at most `concurrency`
/// batches being handled at once (the mapping's concurrency: a batch held by a slow
/// receiver does not stop the next batch from being received), until the task is dropped.
pub async fn run(app: App, http: WebhookClient, sqs: Client, concurrency: usize) {
    let mut tasks = Vec::new();
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    {
        let (app, http, sqs) = (app.clone(), http.clone(), sqs.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let batch = match receive(&app, &sqs, 2).await {
                    Ok(batch) => batch,
                    Err(e) => {
                        tracing::warn!(error = %atelier_shared::error::chain(&e), "hooks_poll_failed");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                let (app, http, sqs) = (app.clone(), http.clone(), sqs.clone());
                tokio::spawn(async move {
                    if let Err(e) = handle(&app, &http, &sqs, batch).await {
                        tracing::warn!(error = %atelier_shared::error::chain(&e), "hooks_delete_failed");
                    }
                    drop(permit);
                });
            }
        }));
    }
    tasks.push(tokio::spawn(async move {
        let mut seen = HashSet::new();
        loop {
            if let Err(e) = outbox_once(&app, &http, &mut seen).await {
                tracing::warn!(error = %e, "hooks_outbox_poll_failed");
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }));
    for t in tasks {
        let _ = t.await;
    }
}

/// The stream's stand-in: fans out every pending event not yet `seen` whose first look by the
/// sweeper is still ahead (so, new). Returns how many events it fanned out.
pub async fn outbox_once(
    app: &App,
    http: &WebhookClient,
    seen: &mut HashSet<String>,
) -> Result<usize, atelier_shared::error::Error> {
    let now = atelier_shared::clock::now();
    let horizon = atelier_shared::clock::format(now + REDRIVE_GRACE + Duration::from_secs(1));
    let due = app.store.webhook_events_due(&horizon, 1000).await?;
    let new: Vec<String> = due
        .into_iter()
        .filter(|e| {
            atelier_shared::clock::parse(&e.created_at).is_some_and(|t| t + REDRIVE_GRACE > now)
        })
        .map(|e| e.hook_pk)
        .filter(|id| seen.insert(id.clone()))
        .collect();
    webhooks::fan_out(atelier_sweeper::hooks(app, http), &new).await?;
    Ok(new.len())
}

/// Receives up to ten delivery messages (waiting up to `wait_secs`) and hands them to the
/// sweeper's handler as one batch. Returns how many were received.
pub async fn deliveries_once(
    app: &App,
    http: &WebhookClient,
    sqs: &Client,
    wait_secs: i32,
) -> Result<usize, aws_sdk_sqs::Error> {
    let messages = receive(app, sqs, wait_secs).await?;
    let count = messages.len();
    handle(app, http, sqs, messages).await?;
    Ok(count)
}

/// Up to ten messages of the delivery queue.
async fn receive(
    app: &App,
    sqs: &Client,
    wait_secs: i32,
) -> Result<Vec<aws_sdk_sqs::types::Message>, aws_sdk_sqs::Error> {
    let out = sqs
        .receive_message()
        .queue_url(app.hooks_queue.url())
        .max_number_of_messages(10)
        .wait_time_seconds(wait_secs)
        .send()
        .await?;
    Ok(out.messages.unwrap_or_default())
}

/// One batch through the sweeper's handler; deletes what it did not report as failed.
async fn handle(
    app: &App,
    http: &WebhookClient,
    sqs: &Client,
    messages: Vec<aws_sdk_sqs::types::Message>,
) -> Result<(), aws_sdk_sqs::Error> {
    if messages.is_empty() {
        return Ok(());
    }
    let url = app.hooks_queue.url();
    let mut event = SqsEvent::default();
    for m in &messages {
        let mut record = SqsMessage::default();
        record.message_id = m.message_id.clone();
        record.receipt_handle = m.receipt_handle.clone();
        record.body = m.body.clone();
        record.event_source = Some("aws:sqs".to_owned());
        event.records.push(record);
    }
    let started = std::time::Instant::now();
    let response = atelier_sweeper::deliver_webhooks(app, http, event).await;
    let spent = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    HANDLER_MILLIS.fetch_add(spent, std::sync::atomic::Ordering::Relaxed);
    for m in messages {
        let failed = response
            .batch_item_failures
            .iter()
            .any(|f| Some(&f.item_identifier) == m.message_id.as_ref());
        if let (false, Some(handle)) = (failed, m.receipt_handle) {
            sqs.delete_message()
                .queue_url(url)
                .receipt_handle(handle)
                .send()
                .await?;
        }
    }
    Ok(())
}
