//! Jobs. Creation is one transaction with the debit (rule 1); the job's conditional put under
//! its derived id is the idempotency check (rule 2).

use aws_sdk_dynamodb::types::{ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update};

use super::cursor;
use super::schema::{JobItem, LedgerItem, LedgerKind, attr, index, reference};
use super::{Store, TxOutcome, from_item, n, names, s, to_item};
use crate::domain::{JobId, UserId};
use crate::error::{AwsError, Error};

/// How an attempt to create a job and debit its price ended.
#[derive(Debug)]
pub enum CreateOutcome {
    Created,
    /// A job with this id exists: the caller compares request hashes.
    Exists(Box<JobItem>),
    AccountMissing,
    InsufficientCredits {
        balance: i64,
    },
    TooManyInFlight {
        in_flight: i64,
    },
}

impl Store {
    /// Puts the job, debits the account (and counts it in flight), and writes the ledger
    /// debit, all or nothing. DynamoDB returns the old job or account on a failed condition,
    /// so no read precedes this.
    pub async fn create_job_with_debit(
        &self,
        job: &JobItem,
        max_in_flight: u32,
    ) -> Result<CreateOutcome, Error> {
        let mut debit = LedgerItem::new(
            &job.user_id,
            reference::debit(&job.job_id),
            -job.credits,
            LedgerKind::Debit,
            &job.created_at,
        );
        debit.job_id = Some(job.job_id.clone());
        let account = Update::builder()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(job.user_id.as_str()))
            .update_expression(
                "SET #credits = #credits - :price, #in_flight = #in_flight + :one, #rev = #rev + :one",
            )
            .condition_expression("attribute_exists(#user_id) AND #credits >= :price AND #in_flight < :max")
            .set_expression_attribute_names(Some(names(&[attr::CREDITS, attr::IN_FLIGHT, attr::REV, attr::USER_ID])))
            .expression_attribute_values(":price", n(job.credits))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(i64::from(max_in_flight)))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| AwsError::new("jobs.create.build", e))?;
        let items = vec![
            self.put_new(&self.names.jobs_table, to_item(job)?, attr::JOB_ID)?,
            TransactWriteItem::builder().update(account).build(),
            self.put_new(&self.names.ledger_table, to_item(&debit)?, attr::REF)?,
        ];
        let reasons = match self.transact("jobs.create", items).await? {
            TxOutcome::Committed => return Ok(CreateOutcome::Created),
            TxOutcome::Canceled(reasons) => reasons,
        };
        if let Some(r) = reasons.first().filter(|r| r.condition_failed()) {
            let old = r.item.clone().ok_or_else(|| {
                Error::Corrupt("job condition failed without the old item".into())
            })?;
            return Ok(CreateOutcome::Exists(Box::new(from_item(old)?)));
        }
        match reasons.get(1).filter(|r| r.condition_failed()) {
            Some(r) => match &r.item {
                None => Ok(CreateOutcome::AccountMissing),
                Some(old) => {
                    let account: super::schema::AccountItem = from_item(old.clone())?;
                    if account.credits < job.credits {
                        Ok(CreateOutcome::InsufficientCredits {
                            balance: account.credits,
                        })
                    } else {
                        Ok(CreateOutcome::TooManyInFlight {
                            in_flight: account.in_flight,
                        })
                    }
                }
            },
            None => Err(Error::Corrupt(format!(
                "job transaction canceled for no known reason: {reasons:?}"
            ))),
        }
    }

    /// A job by id, read consistently.
    pub async fn get_job(&self, id: &JobId) -> Result<Option<JobItem>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(id.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| AwsError::new("jobs.get", e))?;
        out.item.map(from_item).transpose()
    }

    /// One page of a user's jobs, newest first.
    pub async fn jobs_page(
        &self,
        user: &UserId,
        limit: u16,
        cursor: Option<&str>,
    ) -> Result<(Vec<JobItem>, Option<String>), Error> {
        let start = cursor
            .map(|c| {
                cursor::decode(
                    c,
                    &[attr::JOB_ID, attr::USER_ID, attr::USER_SORT],
                    attr::USER_ID,
                    user.as_str(),
                )
            })
            .transpose()?;
        let out = self
            .ddb
            .query()
            .table_name(&self.names.jobs_table)
            .index_name(index::JOBS_BY_USER)
            .key_condition_expression("#user_id = :u")
            .set_expression_attribute_names(Some(names(&[attr::USER_ID])))
            .expression_attribute_values(":u", s(user.as_str()))
            .scan_index_forward(false)
            .limit(i32::from(limit))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| AwsError::new("jobs.page", e))?;
        let jobs = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect::<Result<Vec<_>, _>>()?;
        let next = out
            .last_evaluated_key
            .filter(|k| !k.is_empty())
            .and_then(|k| cursor::encode(&k));
        Ok((jobs, next))
    }
}
