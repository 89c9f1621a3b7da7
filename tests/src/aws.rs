//! The AWS services read and written directly, around the API: kept inputs and objects in
//! S3, bulk jobs in DynamoDB, SQS events and the webhook delivery queue.

use atelier_shared::domain::UserId;
use serde_json::json;

use crate::harness::Harness;

impl Harness {
    /// The bytes of an edit's kept input of `kind` (read through the S3 API), `None` while
    /// there is none.
    pub async fn kept_input(
        &self,
        user: &UserId,
        job: &atelier_shared::domain::JobId,
        kind: atelier_shared::domain::AssetKind,
    ) -> Option<Vec<u8>> {
        let key = atelier_shared::adapters::assets::Assets::kept_input_key(user, job, kind);
        self.app
            .assets
            .get_limited(&key, kind.max_bytes())
            .await
            .unwrap_or_else(|e| panic!("reading {key}: {e:?}"))
    }

    /// Every object key under the user's prefixes, listed through the S3 API.
    pub async fn objects_of(&self, user: &UserId) -> Vec<String> {
        let mut keys = Vec::new();
        for prefix in atelier_shared::adapters::assets::Assets::user_prefixes(user) {
            let out = self
                .clients
                .s3
                .list_objects_v2()
                .bucket(self.app.assets.bucket())
                .prefix(&prefix)
                .send()
                .await
                .unwrap_or_else(|e| panic!("listing {prefix}: {e:?}"));
            keys.extend(
                out.contents
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|o| o.key),
            );
        }
        keys
    }
}

/// Writes jobs straight into the jobs table (BatchWriteItem, 25 at a time, 8 requests in
/// flight): bulk data for scale tests, through the real DynamoDB protocol.
pub async fn put_jobs(h: &Harness, jobs: &[atelier_shared::store::schema::JobItem]) {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    let table = h.app.config.resources.jobs_table.clone();
    let batches: Vec<Vec<WriteRequest>> = jobs
        .chunks(25)
        .map(|chunk| {
            chunk
                .iter()
                .map(|j| {
                    let item = serde_dynamo::to_item(j).unwrap_or_else(|e| panic!("{e}"));
                    let put = PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .unwrap_or_else(|e| panic!("{e}"));
                    WriteRequest::builder().put_request(put).build()
                })
                .collect()
        })
        .collect();
    for group in batches.chunks(8) {
        let sends = group.iter().map(|batch| {
            let (ddb, table) = (h.clients.dynamodb.clone(), table.clone());
            let mut pending = batch.clone();
            async move {
                while !pending.is_empty() {
                    let out = ddb
                        .batch_write_item()
                        .request_items(&table, pending.clone())
                        .send()
                        .await
                        .unwrap_or_else(|e| panic!("{e:?}"));
                    pending = out
                        .unprocessed_items
                        .and_then(|mut m| m.remove(&table))
                        .unwrap_or_default();
                }
            }
        });
        futures::future::join_all(sends).await;
    }
}

/// An SQS event for `job` exactly as the event source mapping delivers it to the consumer.
pub fn sqs_event(job: &str) -> aws_lambda_events::sqs::SqsEvent {
    let mut m = aws_lambda_events::sqs::SqsMessage::default();
    m.message_id = Some(format!("msg-{job}"));
    m.body = Some(json!({ "jobId": job }).to_string());
    let mut e = aws_lambda_events::sqs::SqsEvent::default();
    e.records = vec![m];
    e
}

/// The webhook delivery queue, read by tests that drive delivery by hand.
impl Harness {
    /// Takes (receives and deletes) every message visible on the delivery queue now.
    pub async fn take_hook_messages(
        &self,
    ) -> Vec<atelier_shared::domain::webhooks::DeliveryMessage> {
        let mut out = Vec::new();
        loop {
            let got = self
                .clients
                .sqs
                .receive_message()
                .queue_url(self.app.hooks_queue.url())
                .max_number_of_messages(10)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let messages = got.messages.unwrap_or_default();
            if messages.is_empty() {
                return out;
            }
            for m in messages {
                if let Some(handle) = m.receipt_handle {
                    self.delete_hook_message(handle).await;
                }
                let body = m.body.unwrap_or_default();
                out.push(serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}")));
            }
        }
    }

    /// Deletes one delivery message (a deliverer finished with it); a failure is ignored, as
    /// the queue would redeliver it.
    pub async fn delete_hook_message(&self, handle: String) {
        let _ = self
            .clients
            .sqs
            .delete_message()
            .queue_url(self.app.hooks_queue.url())
            .receipt_handle(handle)
            .send()
            .await;
    }
}
