//! The webhook delivery queue: one message per (event, endpoint, attempt), so an attempt to
//! one endpoint never waits behind another's. A retry is the same message sent again with
//! `DelaySeconds`; the message is a doorbell and the pair's row in DynamoDB is the truth.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;

use crate::domain::webhooks::{DeliveryMessage, MAX_QUEUE_DELAY_SECS};
use crate::error::AwsError;

/// SQS's batch size.
const BATCH: usize = 10;

/// The delivery queue.
#[derive(Clone, Debug)]
pub struct DeliveryQueue {
    sqs: Client,
    url: String,
}

impl DeliveryQueue {
    pub fn new(sqs: Client, url: String) -> DeliveryQueue {
        DeliveryQueue { sqs, url }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends each message after its delay (seconds, at most [`MAX_QUEUE_DELAY_SECS`]), ten
    /// to a request. Fails if any message was not accepted (a retry resends them all: a
    /// duplicate finds its attempt already claimed).
    pub async fn send(&self, messages: &[(DeliveryMessage, u64)]) -> Result<(), AwsError> {
        for chunk in messages.chunks(BATCH) {
            let mut entries = Vec::with_capacity(chunk.len());
            for (i, (m, delay)) in chunk.iter().enumerate() {
                let body =
                    serde_json::to_string(m).map_err(|e| AwsError::new("hooks_queue.encode", e))?;
                let delay = i32::try_from((*delay).min(MAX_QUEUE_DELAY_SECS)).unwrap_or(0);
                let entry = SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(body)
                    .delay_seconds(delay)
                    .build()
                    .map_err(|e| AwsError::new("hooks_queue.entry", e))?;
                entries.push(entry);
            }
            let out = self
                .sqs
                .send_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| AwsError::new("hooks_queue.send", e))?;
            if let Some(f) = out.failed.first() {
                let why = format!("{}: {}", f.code, f.message.clone().unwrap_or_default());
                return Err(AwsError::new("hooks_queue.send", BatchRefused(why)));
            }
        }
        Ok(())
    }
}

/// A batch entry SQS refused.
#[derive(Debug, thiserror::Error)]
#[error("a delivery message was refused: {0}")]
struct BatchRefused(String);
