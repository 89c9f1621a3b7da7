//! Jobs. Creation is one transaction with the debit (rule 1); the job's conditional put under
//! its derived id is the idempotency check (rule 2).

use aws_sdk_dynamodb::types::{
    ConditionCheck, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::cursor;
use super::schema::{JobItem, LedgerItem, attr, index, reference};
use super::{Joined, Store, TxOutcome, from_item, job_from_item, n, names, s, to_item};
use crate::domain::job::{Stage, State};
use crate::domain::webhooks::NewEvent;
use crate::domain::{
    Credits, FailureCode, Job, JobFailure, JobId, JobResult, JobState, LedgerKind, UserId,
};
use crate::error::{AwsError, Error};

/// What an operator's refund of a delivered job did.
#[derive(Debug)]
pub enum OperatorRefundOutcome {
    Refunded,
    /// The job was refunded before (this row): nothing changed.
    Exists(Box<LedgerItem>),
    /// The job is not (or not this owner's) `succeeded`.
    NotDelivered,
    AccountMissing,
}

/// How an attempt to create a job and debit its price ended. `R` is what the caller's own
/// conditions in the same transaction can refuse (a repair's lineage); an edit has none.
#[derive(Debug)]
pub enum CreateOutcome<R = NoRefusal> {
    Created,
    /// A job with this id exists (returned by the failed put): the caller compares hashes.
    Exists(Box<Job>),
    /// The account refused the debit.
    DebitRefused(DebitRefusal),
    /// The caller's own condition refused.
    Refused(R),
}

/// Why the account refused a debit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebitRefusal {
    AccountMissing,
    InsufficientCredits {
        balance: Credits,
    },
    TooManyInFlight {
        in_flight: i64,
    },
    /// The user's spend of the day reached their share (rule 12).
    DailyLimitReached,
    /// A reversed purchase left the account owing credits: nothing new until released.
    OnHold,
    /// The account was closed (deleted): nothing new, ever.
    Closed,
}

/// A transaction with no conditions besides the job's put and the debit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRefusal {}

impl NoRefusal {
    /// There is no such refusal, so this is never called.
    pub fn never<T>(self) -> T {
        match self {}
    }
}

impl Store {
    /// Puts the job, debits the account (and counts it in flight), and writes the ledger
    /// debit, all or nothing, under the user's share of `share_day` (rule 12). DynamoDB
    /// returns the old job or account on a failed condition, so no read precedes this.
    pub async fn create_job_with_debit(
        &self,
        job: &Job,
        max_in_flight: u32,
        share_day: &str,
    ) -> Result<CreateOutcome, Error> {
        let items = vec![
            self.put_new(
                &self.names.jobs_table,
                to_item(&JobItem::from(job.clone()))?,
                attr::JOB_ID,
            )?,
            self.account_debit(job, max_in_flight)?,
            self.ledger_debit(job)?,
            self.user_share_check(&job.user_id, share_day)?,
        ];
        let reasons = match self.transact("jobs.create", items).await? {
            TxOutcome::Committed => return Ok(CreateOutcome::Created),
            TxOutcome::Canceled(reasons) => reasons,
        };
        if let Some(old) = Self::existing_job(&reasons)? {
            return Ok(CreateOutcome::Exists(Box::new(old)));
        }
        Self::debit_refusal(&reasons, 1, job).map(CreateOutcome::DebitRefused)
    }

    /// The job already under this id when a create transaction (the job's put first) was
    /// canceled on that put: a replay or a conflict, for the caller to tell apart. Checked
    /// before any other reason, so the same key gets the same answer whatever changed since.
    pub(crate) fn existing_job(reasons: &[super::CancelReason]) -> Result<Option<Job>, Error> {
        match reasons.first().filter(|r| r.condition_failed()) {
            None => Ok(None),
            Some(r) => {
                let old = r
                    .item
                    .clone()
                    .ok_or_else(|| Error::corrupt("job condition failed without the old item"))?;
                job_from_item(old).map(Some)
            }
        }
    }

    /// Why a canceled debit transaction refused: the user's share check (its last item) first,
    /// since more credits would not help today; else the account item at `index`.
    pub(crate) fn debit_refusal(
        reasons: &[super::CancelReason],
        index: usize,
        job: &Job,
    ) -> Result<DebitRefusal, Error> {
        if reasons.last().is_some_and(|r| r.condition_failed()) {
            return Ok(DebitRefusal::DailyLimitReached);
        }
        match reasons.get(index).filter(|r| r.condition_failed()) {
            Some(r) => match &r.item {
                None => Ok(DebitRefusal::AccountMissing),
                Some(old) => {
                    let account: super::schema::AccountItem = from_item(old.clone())?;
                    if account.closed_at.is_some() {
                        Ok(DebitRefusal::Closed)
                    } else if account.hold.is_some() {
                        Ok(DebitRefusal::OnHold)
                    } else if account.credits < job.credits {
                        Ok(DebitRefusal::InsufficientCredits {
                            balance: account.credits,
                        })
                    } else {
                        Ok(DebitRefusal::TooManyInFlight {
                            in_flight: account.in_flight,
                        })
                    }
                }
            },
            None => Err(Error::corrupt(format!(
                "job transaction canceled for no known reason: {reasons:?}"
            ))),
        }
    }

    /// The account side of a debit: balance down by the job's price, one more in flight,
    /// under `credits >= price AND in_flight < max` and no hold; the old account comes back on
    /// refusal.
    pub(crate) fn account_debit(
        &self,
        job: &Job,
        max_in_flight: u32,
    ) -> Result<TransactWriteItem, Error> {
        let account = Update::builder()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(job.user_id.as_str()))
            .update_expression(
                "SET #credits = #credits - :price, #in_flight = #in_flight + :one, #rev = #rev + :one",
            )
            .condition_expression(
                "attribute_exists(#user_id) AND #credits >= :price AND #in_flight < :max AND attribute_not_exists(#hold) AND attribute_not_exists(#closed_at)",
            )
            .set_expression_attribute_names(Some(names(&[attr::CREDITS, attr::IN_FLIGHT, attr::REV, attr::USER_ID, attr::HOLD, attr::CLOSED_AT])))
            .expression_attribute_values(":price", n(job.credits.get()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(i64::from(max_in_flight)))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| AwsError::new("jobs.debit.build", e))?;
        Ok(TransactWriteItem::builder().update(account).build())
    }

    /// The ledger row of a job's debit (`debit:job:<id>`, written at most once).
    pub(crate) fn ledger_debit(&self, job: &Job) -> Result<TransactWriteItem, Error> {
        let amount = job
            .credits
            .checked_neg()
            .ok_or_else(|| Error::corrupt(format!("a job priced {}", job.credits)))?;
        let mut debit = LedgerItem::new(
            &job.user_id,
            reference::debit(&job.job_id),
            amount,
            LedgerKind::Debit,
            &job.created_at,
        );
        debit.job_id = Some(job.job_id.clone());
        self.put_new(&self.names.ledger_table, to_item(&debit)?, attr::REF)
    }

    /// A job by id, read consistently.
    pub async fn get_job(&self, id: &JobId) -> Result<Option<Job>, Error> {
        self.read_job(id, true).await
    }

    /// A job by an eventually consistent read (half the read units of [`Store::get_job`]):
    /// only for watching a job a consistent read has already shown, where a stale answer
    /// merely delays noticing a change.
    pub async fn peek_job(&self, id: &JobId) -> Result<Option<Job>, Error> {
        self.read_job(id, false).await
    }

    async fn read_job(&self, id: &JobId, consistent: bool) -> Result<Option<Job>, Error> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(id.as_str()))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(|e| AwsError::new("jobs.get", e))?;
        out.item.map(job_from_item).transpose()
    }

    /// One page of a user's jobs, newest first.
    pub async fn jobs_page(
        &self,
        user: &UserId,
        limit: u16,
        cursor: Option<&str>,
    ) -> Result<(Vec<Job>, Option<String>), Error> {
        let from = cursor::UserIndex {
            table: &self.names.jobs_table,
            index: index::JOBS_BY_USER,
            cursor_keys: &[attr::JOB_ID, attr::USER_ID, attr::USER_SORT],
            op: "jobs.page",
        };
        let (rows, next) = self.user_page::<JobItem>(from, user, limit, cursor).await?;
        let jobs = rows
            .into_iter()
            .map(super::job_from_row)
            .collect::<Result<_, _>>()?;
        Ok((jobs, next))
    }
}

/// How an attempt to finish a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishOutcome {
    Done,
    /// The job was no longer in the expected state: someone else finished it.
    NotInState,
}

impl Store {
    /// Compare-and-set `queued -> processing` (rule 5), returning the claimed job. `None`
    /// when the job is unknown, already claimed or finished: the caller does nothing.
    pub async fn claim(&self, id: &JobId, now: &str) -> Result<Option<Job>, Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(id.as_str()))
            .update_expression(
                "SET #status = :processing, #started_at = :now, #updated_at = :now, #sweep_state = :processing, #sweep_at = :now",
            )
            .condition_expression("#status = :queued")
            .set_expression_attribute_names(Some(names(&[
                attr::STATUS,
                attr::STARTED_AT,
                attr::UPDATED_AT,
                attr::SWEEP_STATE,
                attr::SWEEP_AT,
            ])))
            .expression_attribute_values(":processing", s(JobState::Processing.as_str()))
            .expression_attribute_values(":queued", s(JobState::Queued.as_str()))
            .expression_attribute_values(":now", s(now))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match res {
            Ok(out) => out.attributes.map(job_from_item).transpose(),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(AwsError::new("jobs.claim", e).into()),
        }
    }

    /// Records the step a processing job reached (progress for its owner): one conditional
    /// write, applied only while it is processing. `false` when it is not (finished already).
    pub async fn set_stage(&self, id: &JobId, stage: Stage) -> Result<bool, Error> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(id.as_str()))
            .update_expression("SET #stage = :stage")
            .condition_expression("#status = :processing")
            .set_expression_attribute_names(Some(names(&[attr::STAGE, attr::STATUS])))
            .expression_attribute_values(":stage", s(stage.as_str()))
            .expression_attribute_values(":processing", s(JobState::Processing.as_str()))
            .send()
            .await;
        super::applied(res, "jobs.stage")
    }

    /// The item that releases the job's in-flight slot on its account (and, for a refund,
    /// returns its credits), as a transaction item.
    fn account_release(&self, job: &Job, refund: bool) -> Result<TransactWriteItem, Error> {
        let mut b = Update::builder()
            .table_name(&self.names.accounts_table)
            .key(attr::USER_ID, s(job.user_id.as_str()))
            .condition_expression("attribute_exists(#user_id)")
            .expression_attribute_names("#user_id", attr::USER_ID)
            .expression_attribute_names("#in_flight", attr::IN_FLIGHT)
            .expression_attribute_values(":one", n(1));
        b = if refund {
            b.update_expression(
                "SET #credits = #credits + :c, #in_flight = #in_flight - :one, #rev = #rev + :one",
            )
            .expression_attribute_names("#credits", attr::CREDITS)
            .expression_attribute_names("#rev", attr::REV)
            .expression_attribute_values(":c", n(job.credits.get()))
        } else {
            b.update_expression("SET #in_flight = #in_flight - :one")
        };
        Ok(TransactWriteItem::builder()
            .update(
                b.build()
                    .map_err(|e| AwsError::new("jobs.release.build", e))?,
            )
            .build())
    }

    /// Fails the job from state `from` and refunds it, in one transaction (rule 6): job
    /// `from -> failed` with the user-facing failure, refund row (`refund:job:<id>`, written at
    /// most once), balance and in-flight count. Extra items (a budget settlement) may join.
    pub async fn fail_and_refund(
        &self,
        job: &Job,
        from: JobState,
        failure: &JobFailure,
        now: &str,
        extra: Joined,
    ) -> Result<FinishOutcome, Error> {
        self.end_with_refund(job, from, JobState::Failed, failure, now, extra)
            .await
    }

    /// Cancels a queued job and refunds it, in one transaction; only the owner's queued job.
    pub async fn cancel_and_refund(&self, job: &Job, now: &str) -> Result<FinishOutcome, Error> {
        let reason = JobFailure::new(FailureCode::Canceled);
        self.end_with_refund(
            job,
            JobState::Queued,
            JobState::Canceled,
            &reason,
            now,
            Joined::none(),
        )
        .await
    }

    async fn end_with_refund(
        &self,
        job: &Job,
        from: JobState,
        to: JobState,
        failure: &JobFailure,
        now: &str,
        extra: Joined,
    ) -> Result<FinishOutcome, Error> {
        let failure_value = serde_dynamo::to_attribute_value(failure)
            .map_err(|e| Error::corrupt_by("serialize the job's failure", e))?;
        let update = Update::builder()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(job.job_id.as_str()))
            .update_expression("SET #status = :to, #failure = :f, #updated_at = :now REMOVE #sweep_state, #sweep_at")
            .condition_expression("#status = :from AND #user_id = :user")
            .set_expression_attribute_names(Some(names(&[
                attr::STATUS,
                attr::FAILURE,
                attr::UPDATED_AT,
                attr::SWEEP_STATE,
                attr::SWEEP_AT,
                attr::USER_ID,
            ])))
            .expression_attribute_values(":to", s(to.as_str()))
            .expression_attribute_values(":from", s(from.as_str()))
            .expression_attribute_values(":user", s(job.user_id.as_str()))
            .expression_attribute_values(":f", failure_value)
            .expression_attribute_values(":now", s(now))
            .build()
            .map_err(|e| AwsError::new("jobs.refund.build", e))?;
        let mut refund = LedgerItem::new(
            &job.user_id,
            reference::refund(&job.job_id),
            job.credits,
            LedgerKind::Refund,
            now,
        );
        refund.job_id = Some(job.job_id.clone());
        refund.reason = Some(failure.code.as_str().to_owned());
        let mut items = vec![
            TransactWriteItem::builder().update(update).build(),
            self.account_release(job, true)?,
            self.put_new(&self.names.ledger_table, to_item(&refund)?, attr::REF)?,
        ];
        if let Some(repair) = &job.repair {
            // A refunded repair gives its slot back to the lineage.
            items.push(self.lineage_release(&repair.root_job_id, &job.job_id)?);
        }
        if let Some(event) = NewEvent::for_job(job.event_ref(), to, Some(failure), now)
            .map(|e| e.traced(job.trace.clone()))
        {
            items.push(self.outbox_put(&event, now)?);
        }
        let base_len = items.len();
        let extra = extra.items();
        let with_extra = !extra.is_empty();
        let base = items.clone();
        items.extend(extra);
        match self.transact("jobs.end_with_refund", items).await? {
            TxOutcome::Committed => Ok(FinishOutcome::Done),
            TxOutcome::Canceled(reasons) => {
                if reasons.first().is_some_and(|r| r.condition_failed()) {
                    Ok(FinishOutcome::NotInState)
                } else if with_extra && reasons.iter().skip(base_len).any(|r| r.condition_failed())
                {
                    // The joined settlement lost to another settler (the sweeper): the
                    // refund stands on its own.
                    match self.transact("jobs.end_with_refund", base).await? {
                        TxOutcome::Committed => Ok(FinishOutcome::Done),
                        TxOutcome::Canceled(_) => Ok(FinishOutcome::NotInState),
                    }
                } else {
                    Err(Error::corrupt(format!(
                        "refund transaction canceled: {reasons:?}"
                    )))
                }
            }
        }
    }

    /// An operator's refund of a delivered job, in one transaction: the job must still be
    /// `succeeded` and its owner's (a condition check; it stays `succeeded`), the refund row
    /// (`refund:job:<id>`, the same reference a failure's refund uses, so a job is refunded at
    /// most once whoever refunds it) and the balance.
    pub async fn refund_delivered(
        &self,
        job: &Job,
        row: &LedgerItem,
    ) -> Result<OperatorRefundOutcome, Error> {
        let check = ConditionCheck::builder()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(job.job_id.as_str()))
            .condition_expression("#status = :succeeded AND #user_id = :user")
            .set_expression_attribute_names(Some(names(&[attr::STATUS, attr::USER_ID])))
            .expression_attribute_values(":succeeded", s(JobState::Succeeded.as_str()))
            .expression_attribute_values(":user", s(job.user_id.as_str()))
            .build()
            .map_err(|e| AwsError::new("jobs.refund_delivered.build", e))?;
        let mut items = self.credit_with_row(row)?.to_vec();
        items.push(TransactWriteItem::builder().condition_check(check).build());
        match self.transact("jobs.refund_delivered", items).await? {
            TxOutcome::Committed => Ok(OperatorRefundOutcome::Refunded),
            TxOutcome::Canceled(reasons) => match reasons.get(1).filter(|r| r.condition_failed()) {
                Some(r) => {
                    let old = r.item.clone().ok_or_else(|| {
                        Error::corrupt("refund condition failed without the old row")
                    })?;
                    Ok(OperatorRefundOutcome::Exists(Box::new(from_item(old)?)))
                }
                None if reasons.get(2).is_some_and(|r| r.condition_failed()) => {
                    Ok(OperatorRefundOutcome::NotDelivered)
                }
                None => Ok(OperatorRefundOutcome::AccountMissing),
            },
        }
    }

    /// Delivers: `processing -> succeeded` with the result, releasing the in-flight slot.
    /// Extra items (the review's budget settlement) join the same transaction.
    pub async fn deliver(
        &self,
        job: &Job,
        result: &JobResult,
        now: &str,
        extra: Joined,
    ) -> Result<FinishOutcome, Error> {
        let value = serde_dynamo::to_attribute_value(result)
            .map_err(|e| Error::corrupt_by("serialize the job's result", e))?;
        let update = Update::builder()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(job.job_id.as_str()))
            .update_expression("SET #status = :succeeded, #result = :r, #updated_at = :now REMOVE #sweep_state, #sweep_at")
            .condition_expression("#status = :processing")
            .set_expression_attribute_names(Some(names(&[
                attr::STATUS,
                attr::RESULT,
                attr::UPDATED_AT,
                attr::SWEEP_STATE,
                attr::SWEEP_AT,
            ])))
            .expression_attribute_values(":succeeded", s(JobState::Succeeded.as_str()))
            .expression_attribute_values(":processing", s(JobState::Processing.as_str()))
            .expression_attribute_values(":r", value)
            .expression_attribute_values(":now", s(now))
            .build()
            .map_err(|e| AwsError::new("jobs.deliver.build", e))?;
        let mut items = vec![
            TransactWriteItem::builder().update(update).build(),
            self.account_release(job, false)?,
        ];
        if let Some(event) = NewEvent::for_job(job.event_ref(), JobState::Succeeded, None, now)
            .map(|e| e.traced(job.trace.clone()))
        {
            items.push(self.outbox_put(&event, now)?);
        }
        items.extend(extra.items());
        match self.transact("jobs.deliver", items).await? {
            TxOutcome::Committed => Ok(FinishOutcome::Done),
            TxOutcome::Canceled(reasons) => {
                if reasons.first().is_some_and(|r| r.condition_failed()) {
                    Ok(FinishOutcome::NotInState)
                } else {
                    Err(Error::corrupt(format!("deliver canceled: {reasons:?}")))
                }
            }
        }
    }
}

impl Store {
    /// Jobs in `state` whose `sweep_at` is at or before `before`, oldest first, from the sparse
    /// index (candidates only: every action on them is a conditional write on the table).
    /// Returns the jobs and how many items DynamoDB read.
    pub async fn jobs_due(
        &self,
        state: JobState,
        before: &str,
        limit: i32,
    ) -> Result<(Vec<Job>, u64), Error> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.jobs_table)
            .index_name(index::JOBS_BY_SWEEP)
            .key_condition_expression("#sweep_state = :s AND #sweep_at <= :before")
            .set_expression_attribute_names(Some(names(&[attr::SWEEP_STATE, attr::SWEEP_AT])))
            .expression_attribute_values(":s", s(state.as_str()))
            .expression_attribute_values(":before", s(before))
            .limit(limit)
            .send()
            .await
            .map_err(|e| AwsError::new("jobs.due", e))?;
        let read = u64::try_from(out.scanned_count).unwrap_or(0);
        let jobs = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(job_from_item)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((jobs, read))
    }

    /// Records one more dispatch of a queued job, due again at `next` (its new `sweep_at`),
    /// unless another sweeper just did or the job left the queue. `true` when this caller
    /// should send the message.
    pub async fn redispatch(&self, job: &Job, now: &str, next: &str) -> Result<bool, Error> {
        let State::Queued { resend_at } = &job.state else {
            return Ok(false);
        };
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(job.job_id.as_str()))
            .update_expression(
                "SET #dispatch_count = #dispatch_count + :one, #dispatched_at = :now, #sweep_at = :next, #updated_at = :now",
            )
            .condition_expression("#status = :queued AND #sweep_at = :old")
            .set_expression_attribute_names(Some(names(&[
                attr::DISPATCH_COUNT,
                attr::DISPATCHED_AT,
                attr::SWEEP_AT,
                attr::UPDATED_AT,
                attr::STATUS,
            ])))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":next", s(next))
            .expression_attribute_values(":queued", s(JobState::Queued.as_str()))
            .expression_attribute_values(":old", s(resend_at))
            .send()
            .await;
        super::applied(res, "jobs.redispatch")
    }
}
