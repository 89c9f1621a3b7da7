//! The SQS doorbell (rule 4): a message carries only `{ "jobId" }`; the job in DynamoDB is
//! the truth, so a lost or duplicated message is harmless.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{MessageSystemAttributeNameForSends, MessageSystemAttributeValue};
use serde::{Deserialize, Serialize};

use crate::domain::{JobId, TraceId};
use crate::error::AwsError;

/// The system attribute a message's trace header arrives in (the SQS event's `attributes`).
pub const TRACE_ATTRIBUTE: &str = "AWSTraceHeader";

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

    /// Rings the doorbell for a job, its trace id as the `AWSTraceHeader` system attribute
    /// (how SQS hands a trace to the consumer's invocation).
    pub async fn send_job(&self, job: &JobId, trace: Option<&TraceId>) -> Result<(), AwsError> {
        let body = serde_json::to_string(&JobMessage {
            job_id: job.clone(),
        })
        .map_err(|e| AwsError::new("queue.encode", e))?;
        let trace = trace
            .map(|t| {
                MessageSystemAttributeValue::builder()
                    .data_type("String")
                    .string_value(t.header())
                    .build()
            })
            .transpose()
            .map_err(|e| AwsError::new("queue.trace", e))?;
        self.sqs
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .set_message_system_attributes(
                trace.map(|t| [(MessageSystemAttributeNameForSends::AwsTraceHeader, t)].into()),
            )
            .send()
            .await
            .map_err(|e| AwsError::new("queue.send", e))?;
        Ok(())
    }
}
