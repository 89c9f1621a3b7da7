//! DynamoDB adapters. Policy lives in `services`; the store only gets, puts and runs the
//! conditional transactions that the money rules are made of.

pub mod accounts;
pub mod breaker;
pub mod budget;
pub mod closed_payments;
pub mod cursor;
pub mod devices;
pub mod jobs;
pub mod ledger;
pub mod lineage;
pub mod payments;
pub mod previews;
pub mod privacy;
pub mod provision;
pub mod quotas;
pub mod readiness;
pub mod schema;
pub mod user_share;
pub mod waits;
pub mod webhook_deliveries;
pub mod webhooks;

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};

use crate::config::Resources;
use crate::error::{AwsError, Error};

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

/// The DynamoDB store.
#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) ddb: Client,
    pub(crate) names: Resources,
}

/// Why one item of a canceled transaction failed, with the old item when DynamoDB returned
/// it (`ReturnValuesOnConditionCheckFailure = ALL_OLD`).
#[derive(Debug, Clone)]
pub(crate) struct CancelReason {
    pub code: Option<String>,
    pub item: Option<Item>,
}

impl CancelReason {
    pub fn condition_failed(&self) -> bool {
        self.code.as_deref() == Some("ConditionalCheckFailed")
    }
}

/// How a transaction ended, short of an infrastructure error.
#[derive(Debug)]
pub(crate) enum TxOutcome {
    Committed,
    /// A condition failed; reasons are in the order of the items.
    Canceled(Vec<CancelReason>),
}

/// Attempts at a transaction that DynamoDB cancels for a conflict with another transaction.
/// The local emulator never conflicts; real DynamoDB does under contention on one item.
const TX_ATTEMPTS: u32 = 6;

impl Store {
    pub fn new(ddb: Client, names: Resources) -> Store {
        Store { ddb, names }
    }

    pub fn names(&self) -> &Resources {
        &self.names
    }

    /// Runs a TransactWriteItems, retrying (with jittered backoff) only cancellations caused
    /// by `TransactionConflict` or a transaction in progress. Every transaction of this crate
    /// is guarded by conditions, so a retry after an ambiguous failure cannot apply twice.
    /// Every attempt carries the same `ClientRequestToken`: when an earlier attempt committed
    /// and its reply was lost (the SDK's own retry, same token, then met a conflict), DynamoDB
    /// answers the retry as that commit instead of running it again against its own writes,
    /// so the caller learns it committed (a new job is answered `202` and queued at once, not
    /// mistaken for a replay of itself).
    pub(crate) async fn transact(
        &self,
        op: &'static str,
        items: Vec<TransactWriteItem>,
    ) -> Result<TxOutcome, Error> {
        // At most 36 characters (DynamoDB's limit); valid for ten minutes after a commit.
        let token = uuid::Uuid::new_v4().to_string();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = self
                .ddb
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .client_request_token(&token)
                .send()
                .await;
            let retryable = match result {
                Ok(_) => return Ok(TxOutcome::Committed),
                Err(SdkError::ServiceError(ref e)) => match e.err() {
                    TransactWriteItemsError::TransactionCanceledException(c) => {
                        let reasons: Vec<CancelReason> = c
                            .cancellation_reasons()
                            .iter()
                            .map(|r| CancelReason {
                                code: r.code().map(str::to_owned),
                                item: r.item().cloned(),
                            })
                            .collect();
                        let conflict = reasons
                            .iter()
                            .any(|r| r.code.as_deref() == Some("TransactionConflict"));
                        let condition = reasons.iter().any(CancelReason::condition_failed);
                        if condition || !conflict {
                            return Ok(TxOutcome::Canceled(reasons));
                        }
                        true
                    }
                    TransactWriteItemsError::TransactionInProgressException(_) => true,
                    _ => false,
                },
                Err(_) => false,
            };
            match result {
                Err(e) if !retryable || attempt >= TX_ATTEMPTS => {
                    if retryable {
                        tracing::warn!(op, attempts = attempt, "transaction_contention");
                        return Err(Error::Contention { attempts: attempt });
                    }
                    return Err(AwsError::new(op, e).into());
                }
                _ => {
                    tracing::info!(op, attempt, "transaction_conflict_retry");
                    tokio::time::sleep(backoff(attempt)).await;
                }
            }
        }
    }
}

fn backoff(attempt: u32) -> Duration {
    let base = 15u64.saturating_mul(1 << attempt.min(6));
    Duration::from_millis(base + rand::random::<u64>() % base)
}

/// Whether a single-item write failed its condition (nothing changed).
pub(crate) fn is_condition_failed<E, R>(e: &SdkError<E, R>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    e.as_service_error()
        .and_then(|s| s.code())
        .is_some_and(|c| c == "ConditionalCheckFailedException")
}

/// A conditional `UpdateItem`'s answer as whether it applied: `false` when its condition
/// refused it, an error for anything else.
pub(crate) fn applied<T, R: std::fmt::Debug + Send + Sync + 'static>(
    res: Result<T, SdkError<UpdateItemError, R>>,
    op: &'static str,
) -> Result<bool, Error> {
    match res {
        Ok(_) => Ok(true),
        Err(e)
            if e.as_service_error()
                .is_some_and(UpdateItemError::is_conditional_check_failed_exception) =>
        {
            Ok(false)
        }
        Err(e) => Err(AwsError::new(op, e).into()),
    }
}

/// `"#name" -> name` for expression attribute names.
pub(crate) fn names(list: &[&str]) -> HashMap<String, String> {
    list.iter()
        .map(|n| (format!("#{n}"), (*n).to_owned()))
        .collect()
}

impl Store {
    /// An update of the item of `table` under a partition and a sort key (both strings).
    pub(crate) fn update_at(
        &self,
        table: &str,
        (pk, pk_value): (&str, &str),
        (sk, sk_value): (&str, &str),
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.ddb
            .update_item()
            .table_name(table)
            .key(pk, s(pk_value))
            .key(sk, s(sk_value))
    }
}

pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(crate) fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(crate) fn to_item<T: serde::Serialize>(value: &T) -> Result<Item, Error> {
    serde_dynamo::to_item(value)
        .map_err(|e| Error::corrupt_by(format!("serialize {}", std::any::type_name::<T>()), e))
}

pub(crate) fn from_item<T: serde::de::DeserializeOwned>(item: Item) -> Result<T, Error> {
    serde_dynamo::from_item(item)
        .map_err(|e| Error::corrupt_by(format!("deserialize {}", std::any::type_name::<T>()), e))
}

/// A stored job item as a domain [`Job`](crate::domain::Job); a malformed row is corrupt data.
pub(crate) fn job_from_item(item: Item) -> Result<crate::domain::Job, Error> {
    job_from_row(from_item(item)?)
}

/// A job's row as a domain [`Job`](crate::domain::Job); a malformed row is corrupt data.
pub(crate) fn job_from_row(row: schema::JobItem) -> Result<crate::domain::Job, Error> {
    crate::domain::Job::try_from(row).map_err(|e| Error::corrupt_by("read a job", e))
}

/// Writes that join another transaction of the store (a budget settlement, a repair's update
/// of its lineage): built by one store method, handed by a use case to another, opaque in
/// between, so use cases never hold the SDK's transaction items.
#[derive(Debug, Clone, Default)]
pub struct Joined(Vec<TransactWriteItem>);

impl Joined {
    /// No writes to join.
    pub fn none() -> Joined {
        Joined::default()
    }

    /// These writes, then `more`.
    pub fn and(mut self, more: Joined) -> Joined {
        self.0.extend(more.0);
        self
    }

    pub(crate) fn items(self) -> Vec<TransactWriteItem> {
        self.0
    }
}

impl From<Vec<TransactWriteItem>> for Joined {
    fn from(items: Vec<TransactWriteItem>) -> Joined {
        Joined(items)
    }
}

#[cfg(test)]
mod tests {
    //! The retry policy of [`Store::transact`] against errors the local emulator never returns,
    //! with the SDK's own mocking utilities (the real client, stubbed at the wire).

    use aws_sdk_dynamodb::operation::transact_write_items::{
        TransactWriteItemsError, TransactWriteItemsOutput,
    };
    use aws_sdk_dynamodb::types::CancellationReason;
    use aws_sdk_dynamodb::types::error::TransactionCanceledException;
    use aws_smithy_mocks::{RuleMode, mock, mock_client};

    use super::{Store, TxOutcome};
    use crate::config::Resources;
    use crate::error::Error;

    fn canceled(codes: &[&str]) -> TransactWriteItemsError {
        let reasons = codes
            .iter()
            .map(|c| CancellationReason::builder().code(*c).build())
            .collect();
        TransactWriteItemsError::TransactionCanceledException(
            TransactionCanceledException::builder()
                .set_cancellation_reasons(Some(reasons))
                .build(),
        )
    }

    fn store(client: aws_sdk_dynamodb::Client) -> Store {
        Store::new(client, Resources::local("unit", "http://127.0.0.1:1"))
    }

    #[tokio::test]
    async fn a_transaction_conflict_is_retried_until_it_commits() {
        let rule = mock!(aws_sdk_dynamodb::Client::transact_write_items)
            .sequence()
            .error(|| canceled(&["TransactionConflict", "None"]))
            .times(2)
            .output(|| TransactWriteItemsOutput::builder().build())
            .build();
        let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&rule]);

        let out = store(client).transact("unit", Vec::new()).await;

        assert!(matches!(out, Ok(TxOutcome::Committed)), "{out:?}");
        assert_eq!(rule.num_calls(), 3);
    }

    #[tokio::test]
    async fn a_failed_condition_is_never_retried_even_beside_a_conflict() {
        let rule = mock!(aws_sdk_dynamodb::Client::transact_write_items)
            .sequence()
            .error(|| canceled(&["ConditionalCheckFailed", "TransactionConflict"]))
            .times(1)
            .output(|| TransactWriteItemsOutput::builder().build())
            .build();
        let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&rule]);

        let out = store(client).transact("unit", Vec::new()).await;

        assert!(
            matches!(&out, Ok(TxOutcome::Canceled(r)) if r[0].condition_failed()),
            "{out:?}"
        );
        assert_eq!(rule.num_calls(), 1);
    }

    #[tokio::test]
    async fn endless_conflicts_give_up_with_contention() {
        let rule = mock!(aws_sdk_dynamodb::Client::transact_write_items)
            .sequence()
            .error(|| canceled(&["TransactionConflict"]))
            .times(10)
            .build();
        let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&rule]);

        let out = store(client).transact("unit", Vec::new()).await;

        assert!(
            matches!(out, Err(Error::Contention { attempts: 6 })),
            "{out:?}"
        );
        assert_eq!(rule.num_calls(), 6);
    }
}
