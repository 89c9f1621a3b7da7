//! The webhook delivery queue: one message per (event, endpoint, attempt), so an attempt to
//! one endpoint never waits behind another's. A retry is the same message sent again with
//! `DelaySeconds`; the message is a doorbell and the pair's row in DynamoDB is the truth.

use aws_sdk_sqs::Client;

use crate::domain::webhooks::{DeliveryMessage, MAX_QUEUE_DELAY_SECS};
use crate::error::AwsError;

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

    /// Sends each message after its delay (seconds, at most [`MAX_QUEUE_DELAY_SECS`]), one
    /// `SendMessage` each: the action the deployed role is granted (`sqs:SendMessage`; the
    /// local cloud under IAM refused `SendMessageBatch` to it). Fails at the first message not
    /// accepted (a retry resends them all: a duplicate finds its attempt already claimed).
    pub async fn send(&self, messages: &[(DeliveryMessage, u64)]) -> Result<(), AwsError> {
        for (m, delay) in messages {
            let body =
                serde_json::to_string(m).map_err(|e| AwsError::new("hooks_queue.encode", e))?;
            let delay = i32::try_from((*delay).min(MAX_QUEUE_DELAY_SECS)).unwrap_or(0);
            self.sqs
                .send_message()
                .queue_url(&self.url)
                .message_body(body)
                .delay_seconds(delay)
                .send()
                .await
                .map_err(|e| AwsError::new("hooks_queue.send", e))?;
        }
        Ok(())
    }
}
