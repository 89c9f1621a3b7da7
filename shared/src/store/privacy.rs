//! The conditional writes of deletion: marking a job's images deleted, putting back a job
//! with its personal text cleared, closing an account and recording that its deletion
//! finished. None touches money: balances, ledger rows and a job's money fields stay as they are.

use super::schema::{AccountItem, DELETION_PENDING, JobItem, attr, index, reference};
use super::{Item, Store, from_item, is_condition_failed, job_from_item, names, s, to_item};
use crate::domain::{Job, JobId, JobState, UserId};
use crate::error::{AwsError, Error};

impl Store {
    /// Marks `job` as having had its images deleted (the first time only), under the
    /// condition that it is the caller's, finished and no repair of it is in flight. `false`
    /// when the condition refused: the caller reads the job again to say why.
    pub async fn mark_images_deleted(&self, job: &Job, now: &str) -> Result<bool, Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(job.job_id.as_str()))
            .update_expression("SET #deleted = if_not_exists(#deleted, :now)")
            .condition_expression(
                "#user_id = :user AND #status IN (:succeeded, :failed, :canceled) \
                 AND attribute_not_exists(#active)",
            )
            .set_expression_attribute_names(Some(names(&[attr::USER_ID, attr::STATUS])))
            .expression_attribute_names("#deleted", attr::IMAGES_DELETED_AT)
            .expression_attribute_names("#active", attr::REPAIR_ACTIVE)
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":user", s(job.user_id.as_str()))
            .expression_attribute_values(":succeeded", s(JobState::Succeeded.as_str()))
            .expression_attribute_values(":failed", s(JobState::Failed.as_str()))
            .expression_attribute_values(":canceled", s(JobState::Canceled.as_str()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(AwsError::new("privacy.mark_images_deleted", e).into()),
        }
    }

    /// Puts back a finished job as `redacted` (see [`Job::redacted`]), only while it is
    /// still in the state it was read in with no repair in flight, so no concurrent change is
    /// overwritten. `false` when the condition refused.
    pub async fn put_redacted(&self, redacted: &Job) -> Result<bool, Error> {
        let res = self
            .ddb
            .put_item()
            .table_name(&self.names.jobs_table)
            .set_item(Some(to_item(&JobItem::from(redacted.clone()))?))
            .condition_expression(
                "#user_id = :user AND #status = :status AND attribute_not_exists(#active)",
            )
            .set_expression_attribute_names(Some(names(&[attr::USER_ID, attr::STATUS])))
            .expression_attribute_names("#active", attr::REPAIR_ACTIVE)
            .expression_attribute_values(":user", s(redacted.user_id.as_str()))
            .expression_attribute_values(":status", s(redacted.status().as_str()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(AwsError::new("privacy.put_redacted", e).into()),
        }
    }

    /// Closes the account (the first close's time and author are kept) and marks its
    /// deletion pending until [`Store::mark_account_deleted`]. The account must
    /// exist; the service creates a missing one first so that the closed item is the record.
    pub async fn close_account(
        &self,
        user: &UserId,
        by: &str,
        now: &str,
    ) -> Result<AccountItem, Error> {
        let out = self
            .ddb
            .update_item()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(user.as_str()))
            .update_expression(
                "SET #closed_at = if_not_exists(#closed_at, :now), #closed_by = if_not_exists(#closed_by, :by), \
                 #deletion_state = :pending",
            )
            .condition_expression("attribute_exists(#user_id)")
            .set_expression_attribute_names(Some(names(&[
                attr::CLOSED_AT,
                attr::CLOSED_BY,
                attr::USER_ID,
                attr::DELETION_STATE,
            ])))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":by", s(by))
            .expression_attribute_values(":pending", s(DELETION_PENDING))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await
            .map_err(|e| AwsError::new("privacy.close_account", e))?;
        from_item(out.attributes.unwrap_or_default())
    }

    /// Records that the account's deletion finished (the first time only); it is no longer
    /// pending.
    pub async fn mark_account_deleted(&self, user: &UserId, now: &str) -> Result<(), Error> {
        self.ddb
            .update_item()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(user.as_str()))
            .update_expression(
                "SET #deleted_at = if_not_exists(#deleted_at, :now) REMOVE #deletion_state",
            )
            .condition_expression("attribute_exists(#closed_at)")
            .set_expression_attribute_names(Some(names(&[
                attr::DELETED_AT,
                attr::CLOSED_AT,
                attr::DELETION_STATE,
            ])))
            .expression_attribute_values(":now", s(now))
            .send()
            .await
            .map_err(|e| AwsError::new("privacy.mark_account_deleted", e))?;
        Ok(())
    }

    /// The user's jobs still queued or processing (every page of the user's index, filtered):
    /// at most the in-flight limit match, but every job of the user is read.
    pub async fn unfinished_jobs(&self, user: &UserId) -> Result<Vec<Job>, Error> {
        let mut found = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .ddb
                .query()
                .table_name(&self.names.jobs_table)
                .index_name(index::JOBS_BY_USER)
                .key_condition_expression("#user_id = :u")
                .filter_expression("#status IN (:queued, :processing)")
                .set_expression_attribute_names(Some(names(&[attr::USER_ID, attr::STATUS])))
                .expression_attribute_values(":u", s(user.as_str()))
                .expression_attribute_values(":queued", s(JobState::Queued.as_str()))
                .expression_attribute_values(":processing", s(JobState::Processing.as_str()))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| AwsError::new("privacy.unfinished_jobs", e))?;
            for item in out.items.unwrap_or_default() {
                found.push(job_from_item(item)?);
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(found),
            }
        }
    }

    /// Up to `limit` closed accounts whose deletion has not finished, oldest close first (the
    /// sparse index: a work list; each account is read again before anything is done).
    pub async fn accounts_deleting(&self, limit: i32) -> Result<Vec<UserId>, Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.accounts_table)
            .index_name(index::ACCOUNTS_DELETING)
            .key_condition_expression("#state = :pending")
            .expression_attribute_names("#state", attr::DELETION_STATE)
            .expression_attribute_values(":pending", s(DELETION_PENDING))
            .limit(limit)
            .send()
            .await
            .map_err(|e| AwsError::new("privacy.accounts_deleting", e))?;
        out.items
            .unwrap_or_default()
            .into_iter()
            .map(|item| from_item::<AccountItem>(item).map(|a| a.user_id))
            .collect()
    }

    /// Every job the user ever had, by the ledger's debit rows read consistently from the
    /// table itself (never an index): each job is created in one transaction with its debit
    /// row, so a job whose creation committed before this read is named, however recently.
    pub async fn debited_job_ids(&self, user: &UserId) -> Result<Vec<JobId>, Error> {
        let mut ids = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .ddb
                .query()
                .table_name(&self.names.ledger_table)
                .consistent_read(true)
                .key_condition_expression("#user_id = :u AND begins_with(#ref, :debit)")
                .projection_expression("#ref")
                .set_expression_attribute_names(Some(names(&[attr::USER_ID, attr::REF])))
                .expression_attribute_values(":u", s(user.as_str()))
                .expression_attribute_values(":debit", s(reference::DEBIT_JOB_PREFIX))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| AwsError::new("privacy.debited_job_ids", e))?;
            for item in out.items.unwrap_or_default() {
                let id = item
                    .get(attr::REF)
                    .and_then(|v| v.as_s().ok())
                    .and_then(|r| r.strip_prefix(reference::DEBIT_JOB_PREFIX))
                    .and_then(JobId::parse)
                    .ok_or_else(|| {
                        Error::corrupt(format!("a debit row without a job: {item:?}"))
                    })?;
                ids.push(id);
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(ids),
            }
        }
    }
}
