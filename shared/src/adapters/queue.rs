//! The SQS doorbell (rule 4): a message carries only `{ "jobId" }`; the job in DynamoDB is
//! the truth, so a lost or duplicated message is harmless.

use aws_sdk_sqs::Client;
use serde::{Deserialize, Serialize};

use crate::domain::JobId;
use crate::error::AwsError;

/// The message body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobMessage {
    #[serde(rename = "jobId")]
    pub job_id: JobId,
}

/// The job queue.
#[derive(Clone, Debug)]
pub struct Queue {
    sqs: Client,
    url: String,
}

impl Queue {
    pub fn new(sqs: Client, url: String) -> Queue {
        Queue { sqs, url }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Rings the doorbell for a job.
    pub async fn send_job(&self, job: &JobId) -> Result<(), AwsError> {
        let body = serde_json::to_string(&JobMessage {
            job_id: job.clone(),
        })
        .map_err(|e| AwsError::new("queue.encode", e))?;
        self.sqs
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .send()
            .await
            .map_err(|e| AwsError::new("queue.send", e))?;
        Ok(())
    }
}
