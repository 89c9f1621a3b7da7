//! The SQS event source mapping, locally: long-poll the queue, hand each message to the
//! consumer's handler as a real `SqsEvent` (batch of 1), and delete it only when the handler
//! did not report it as a batch item failure. `workers` plays the mapping's maximum
//! concurrency.

use std::sync::Arc;
use std::time::Duration;

use atelier_shared::services::process::Processor;
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{Message, MessageSystemAttributeName};

use crate::hold::Hold;

/// Runs `workers` pollers until the task is dropped; none polls while `hold` is held.
pub async fn run(
    processor: Arc<Processor>,
    sqs: Client,
    queue_url: String,
    workers: usize,
    hold: Arc<Hold>,
) {
    let mut tasks = Vec::new();
    for worker in 0..workers.max(1) {
        let (processor, sqs, queue_url) = (processor.clone(), sqs.clone(), queue_url.clone());
        let hold = hold.clone();
        tasks.push(tokio::spawn(async move {
            poll(worker, &processor, &sqs, &queue_url, &hold).await
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// One worker's loop. A message received while a hold began is handed back at once
/// (visibility 0). That still counts as a receive against the queue's redrive limit, but at
/// most once per worker per hold, since no worker polls while held.
pub async fn poll(
    worker: usize,
    processor: &Processor,
    sqs: &Client,
    queue_url: &str,
    hold: &Hold,
) {
    loop {
        if hold.is_held() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let handled = match receive(sqs, queue_url, 2).await {
            Ok(messages) if hold.is_held() => give_back(sqs, queue_url, messages).await,
            Ok(messages) => handle_all(processor, sqs, queue_url, messages).await,
            Err(e) => Err(e),
        };
        if let Err(e) = handled {
            tracing::warn!(worker, error = %atelier_shared::error::chain(&e), "poll_failed");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// Receives at most one message (waiting up to `wait_secs`) and handles it. Returns how many
/// messages were handled.
pub async fn poll_once(
    processor: &Processor,
    sqs: &Client,
    queue_url: &str,
    wait_secs: i32,
) -> Result<usize, aws_sdk_sqs::Error> {
    let messages = receive(sqs, queue_url, wait_secs).await?;
    handle_all(processor, sqs, queue_url, messages).await
}

async fn receive(
    sqs: &Client,
    queue_url: &str,
    wait_secs: i32,
) -> Result<Vec<Message>, aws_sdk_sqs::Error> {
    let out = sqs
        .receive_message()
        .queue_url(queue_url)
        .max_number_of_messages(1)
        .wait_time_seconds(wait_secs)
        .message_system_attribute_names(MessageSystemAttributeName::AwsTraceHeader)
        .send()
        .await?;
    Ok(out.messages.unwrap_or_default())
}

/// Makes `messages` visible again at once; none was handled.
async fn give_back(
    sqs: &Client,
    queue_url: &str,
    messages: Vec<Message>,
) -> Result<usize, aws_sdk_sqs::Error> {
    for handle in messages.into_iter().filter_map(|m| m.receipt_handle) {
        sqs.change_message_visibility()
            .queue_url(queue_url)
            .receipt_handle(handle)
            .visibility_timeout(0)
            .send()
            .await?;
    }
    Ok(0)
}

/// Hands each message to the consumer's handler; deletes the ones it did not report failed.
async fn handle_all(
    processor: &Processor,
    sqs: &Client,
    queue_url: &str,
    messages: Vec<Message>,
) -> Result<usize, aws_sdk_sqs::Error> {
    let count = messages.len();
    for m in messages {
        let mut record = SqsMessage::default();
        record.message_id = m.message_id.clone();
        record.receipt_handle = m.receipt_handle.clone();
        record.body = m.body.clone();
        // As Lambda's event source hands it over: the trace header among the attributes.
        record.attributes = m
            .attributes
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
            .collect();
        let mut event = SqsEvent::default();
        event.records = vec![record];
        let response = atelier_consumer::handle(processor, event).await;
        let failed = response
            .batch_item_failures
            .iter()
            .any(|f| Some(&f.item_identifier) == m.message_id.as_ref());
        if let (false, Some(handle)) = (failed, m.receipt_handle) {
            sqs.delete_message()
                .queue_url(queue_url)
                .receipt_handle(handle)
                .send()
                .await?;
        }
    }
    Ok(count)
}
