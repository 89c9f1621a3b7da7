//! A preview's create: the job, one more of the user's previews of the day, the debit and the
//! ledger row, in one transaction. The count is a condition of the same write that creates
//! the job, so a replay (the job's put fails first) never counts twice and no number of
//! concurrent submits passes the day's limit (docs/design.md, "The area before paying").

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use super::jobs::CreateOutcome;
use super::schema::{JobItem, attr, preview_quota_key};
use super::{Store, TxOutcome, n, names, s, to_item};
use crate::domain::Job;
use crate::error::{AwsError, Error};

/// The day's previews are all used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreviewLimitReached;

/// Where the day's preview is counted: its UTC day, the most it may hold, and when TTL may
/// delete the counter (Unix seconds).
#[derive(Debug, Clone)]
pub struct PreviewDay {
    pub day: String,
    pub max: u32,
    pub expires_at: i64,
}

impl Store {
    /// Creates the preview `job` (see the module's docs), or says why not.
    pub async fn create_preview_with_debit(
        &self,
        job: &Job,
        count: &PreviewDay,
        max_in_flight: u32,
        share_day: &str,
    ) -> Result<CreateOutcome<PreviewLimitReached>, Error> {
        let items = vec![
            self.put_new(
                &self.names.jobs_table,
                to_item(&JobItem::from(job.clone()))?,
                attr::JOB_ID,
            )?,
            self.count_preview(job, count)?,
            self.account_debit(job, max_in_flight)?,
            self.ledger_debit(job)?,
            self.user_share_check(&job.user_id, share_day)?,
        ];
        let reasons = match self.transact("previews.create", items).await? {
            TxOutcome::Committed => return Ok(CreateOutcome::Created),
            TxOutcome::Canceled(reasons) => reasons,
        };
        // A replay first: the same key gives the same job whatever the day's count is now.
        if let Some(old) = Self::existing_job(&reasons)? {
            return Ok(CreateOutcome::Exists(Box::new(old)));
        }
        if reasons.get(1).is_some_and(|r| r.condition_failed()) {
            return Ok(CreateOutcome::Refused(PreviewLimitReached));
        }
        Self::debit_refusal(&reasons, 2, job).map(CreateOutcome::DebitRefused)
    }

    /// One more preview on the owner's counter of the day, only while it holds fewer than
    /// `count.max`.
    fn count_preview(&self, job: &Job, count: &PreviewDay) -> Result<TransactWriteItem, Error> {
        let update = Update::builder()
            .table_name(&self.names.quotas_table)
            .key(attr::USER_ID, s(job.user_id.as_str()))
            .key(attr::QUOTA, s(preview_quota_key(&count.day)))
            .update_expression(
                "SET #previews = if_not_exists(#previews, :zero) + :one, #expires_at = :expires_at",
            )
            .condition_expression("attribute_not_exists(#previews) OR #previews < :max")
            .set_expression_attribute_names(Some(names(&[attr::PREVIEWS, attr::EXPIRES_AT])))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(count.max.into()))
            .expression_attribute_values(":expires_at", n(count.expires_at))
            .build()
            .map_err(|e| AwsError::new("previews.count.build", e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }
}
