//! The lineage's conditional writes. A lineage (an original edit and its repairs) lives on its
//! root job. Creating a repair is one transaction — the repair job, the root's repair slot, the
//! debit, the ledger row — so the limit of two, the stop after a repair that did not help, and
//! one repair at a time are conditions of the same write that charges (rules 1, 2 and 7).
//! Finishing a repair updates the root in the same transaction as the repair job; each root
//! update is conditioned on that repair being the one in flight, so it applies once.

use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::jobs::CreateOutcome;
use super::schema::{JobItem, attr};
use super::{Joined, Store, TxOutcome, job_from_item, n, s, to_item};
use crate::domain::repair_request::{MAX_REPAIR_ATTEMPTS, MAX_REPAIRS};
use crate::domain::{CurrentVersion, Job, JobId, JobResult, JobState};
use crate::error::{AwsError, Error};

/// Why the lineage's root refused a repair slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineageRefusal {
    /// The lineage's root is gone or not the caller's.
    RootMissing,
    NotRepairable {
        state: JobState,
    },
    Stopped,
    LimitReached,
    InProgress,
    /// The edit's images were deleted: nothing left to repair.
    ImagesDeleted,
}

impl Store {
    /// Puts the repair job, takes a repair slot on the root (`succeeded`, the caller's, not
    /// stopped, images not deleted, none in flight, fewer than two used), debits the account and writes the ledger
    /// row, all or nothing.
    pub async fn create_repair_with_debit(
        &self,
        repair: &Job,
        root: &JobId,
        max_in_flight: u32,
        share_day: &str,
    ) -> Result<CreateOutcome<LineageRefusal>, Error> {
        let items = vec![
            self.put_new(
                &self.names.jobs_table,
                to_item(&JobItem::from(repair.clone()))?,
                attr::JOB_ID,
            )?,
            self.take_repair_slot(repair, root)?,
            self.account_debit(repair, max_in_flight)?,
            self.ledger_debit(repair)?,
            self.user_share_check(&repair.user_id, share_day)?,
        ];
        let reasons = match self.transact("repairs.create", items).await? {
            TxOutcome::Committed => return Ok(CreateOutcome::Created),
            TxOutcome::Canceled(reasons) => reasons,
        };
        // A replay first: the same key must give the same answer whatever the lineage did since.
        if let Some(old) = Self::existing_job(&reasons)? {
            return Ok(CreateOutcome::Exists(Box::new(old)));
        }
        if let Some(r) = reasons.get(1).filter(|r| r.condition_failed()) {
            let Some(old) = r.item.clone() else {
                return Ok(CreateOutcome::Refused(LineageRefusal::RootMissing));
            };
            let root = job_from_item(old)?;
            return Ok(CreateOutcome::Refused(if root.user_id != repair.user_id {
                LineageRefusal::RootMissing
            } else if root.images_deleted_at.is_some() {
                LineageRefusal::ImagesDeleted
            } else if root.status() != JobState::Succeeded {
                LineageRefusal::NotRepairable {
                    state: root.status(),
                }
            } else if root.repairs_stopped {
                LineageRefusal::Stopped
            } else if root.repairs_left() == 0 {
                LineageRefusal::LimitReached
            } else {
                LineageRefusal::InProgress
            }));
        }
        Self::debit_refusal(&reasons, 2, repair).map(CreateOutcome::DebitRefused)
    }

    /// The root's repair slot, taken in the repair's own transaction; its condition carries
    /// the lineage rules (root succeeded and the caller's, not stopped, none in flight, fewer
    /// than the limits), and `ALL_OLD` tells a refusal which rule refused.
    fn take_repair_slot(&self, repair: &Job, root: &JobId) -> Result<TransactWriteItem, Error> {
        let slot = Update::builder()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(root.as_str()))
            .update_expression(
                "SET #used = if_not_exists(#used, :zero) + :one, \
                 #attempts = if_not_exists(#attempts, :zero) + :one, \
                 #active = :rid, \
                 #jobs = list_append(if_not_exists(#jobs, :empty), :rids)",
            )
            .condition_expression(
                "#status = :succeeded AND #user_id = :user AND attribute_not_exists(#active) \
                 AND (attribute_not_exists(#used) OR #used < :max) \
                 AND (attribute_not_exists(#attempts) OR #attempts < :max_attempts) \
                 AND (attribute_not_exists(#stopped) OR #stopped = :false) \
                 AND attribute_not_exists(#images_deleted)",
            )
            .expression_attribute_names("#images_deleted", attr::IMAGES_DELETED_AT)
            .expression_attribute_names("#used", attr::REPAIRS_USED)
            .expression_attribute_names("#attempts", attr::REPAIR_ATTEMPTS)
            .expression_attribute_names("#active", attr::REPAIR_ACTIVE)
            .expression_attribute_names("#jobs", attr::REPAIR_JOBS)
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#user_id", attr::USER_ID)
            .expression_attribute_names("#stopped", attr::REPAIRS_STOPPED)
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":rid", s(repair.job_id.as_str()))
            .expression_attribute_values(":empty", AttributeValue::L(Vec::new()))
            .expression_attribute_values(
                ":rids",
                AttributeValue::L(vec![s(repair.job_id.as_str())]),
            )
            .expression_attribute_values(":succeeded", s(JobState::Succeeded.as_str()))
            .expression_attribute_values(":user", s(repair.user_id.as_str()))
            .expression_attribute_values(":max", n(i64::from(MAX_REPAIRS)))
            .expression_attribute_values(":max_attempts", n(i64::from(MAX_REPAIR_ATTEMPTS)))
            .expression_attribute_values(":false", AttributeValue::Bool(false))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| AwsError::new("repairs.slot.build", e))?;
        Ok(TransactWriteItem::builder().update(slot).build())
    }

    /// The root's side of a refunded repair: the slot comes back, the repair is no longer in
    /// flight. Conditioned on this repair being the one in flight (set in the same transaction
    /// that charged it), so it applies once.
    pub(crate) fn lineage_release(
        &self,
        root: &JobId,
        repair: &JobId,
    ) -> Result<TransactWriteItem, Error> {
        let update = Update::builder()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(root.as_str()))
            .update_expression("SET #used = #used - :one REMOVE #active")
            .condition_expression("#active = :rid")
            .expression_attribute_names("#used", attr::REPAIRS_USED)
            .expression_attribute_names("#active", attr::REPAIR_ACTIVE)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":rid", s(repair.as_str()))
            .build()
            .map_err(|e| AwsError::new("repairs.release.build", e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// The root's side of a delivered repair: the version the user now holds (when the
    /// candidate replaced it) and whether repairs stop; the repair is no longer in flight.
    pub fn lineage_after_repair(
        &self,
        root: &JobId,
        repair: &JobId,
        current: Option<&CurrentVersion>,
        stop: bool,
    ) -> Result<Joined, Error> {
        let mut b = Update::builder()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(root.as_str()))
            .condition_expression("#active = :rid")
            .expression_attribute_names("#active", attr::REPAIR_ACTIVE)
            .expression_attribute_names("#stopped", attr::REPAIRS_STOPPED)
            .expression_attribute_values(":rid", s(repair.as_str()))
            .expression_attribute_values(":stop", AttributeValue::Bool(stop));
        b = match current {
            Some(c) => {
                let value = serde_dynamo::to_attribute_value(c)
                    .map_err(|e| Error::corrupt_by("serialize the current version", e))?;
                b.update_expression("SET #stopped = :stop, #current = :current REMOVE #active")
                    .expression_attribute_names("#current", attr::CURRENT)
                    .expression_attribute_values(":current", value)
            }
            None => b.update_expression("SET #stopped = :stop REMOVE #active"),
        };
        let update = b
            .build()
            .map_err(|e| AwsError::new("repairs.after.build", e))?;
        Ok(Joined::from(vec![
            TransactWriteItem::builder().update(update).build(),
        ]))
    }

    /// The owner chose a repair's rejected candidate: the repair now delivers `adopted` and
    /// the root's current version is the candidate, in one transaction. The repair's side is
    /// conditioned on its candidate still being the rejected one (so a second choice changes
    /// nothing), the root's on it still holding the version the candidate was compared with
    /// and no repair in flight. `false`: a condition refused it (the caller reads back why).
    pub async fn adopt_candidate(
        &self,
        repair: &Job,
        adopted: &JobResult,
        compared_with: &JobId,
        at: &str,
    ) -> Result<bool, Error> {
        let root = repair.root_id();
        let result = serde_dynamo::to_attribute_value(adopted)
            .map_err(|e| Error::corrupt_by("serialize the adopted result", e))?;
        let candidate = adopted.asset_key.as_str();
        let on_repair = Update::builder()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(repair.job_id.as_str()))
            .update_expression("SET #result = :result, #updated = :at")
            .condition_expression(
                "#user_id = :user AND #status = :succeeded AND #result.#cand = :cand \
                 AND #result.#retained = :true AND attribute_not_exists(#deleted)",
            )
            .expression_attribute_names("#result", attr::RESULT)
            .expression_attribute_names("#cand", "candidate_asset_key")
            .expression_attribute_names("#retained", "retained_previous")
            .expression_attribute_values(":result", result)
            .expression_attribute_values(":cand", s(candidate))
            .expression_attribute_values(":true", AttributeValue::Bool(true));
        let current = CurrentVersion {
            job_id: repair.job_id.clone(),
            asset_key: candidate.to_owned(),
        };
        let current = serde_dynamo::to_attribute_value(&current)
            .map_err(|e| Error::corrupt_by("serialize the current version", e))?;
        // The root holds the version compared with: its own (no `current` yet) or a repair's.
        let holds = if compared_with == root {
            "(attribute_not_exists(#current) OR #current.#cjob = :cw)"
        } else {
            "#current.#cjob = :cw"
        };
        let on_root = Update::builder()
            .table_name(&self.names.jobs_table)
            .key(attr::JOB_ID, s(root.as_str()))
            .update_expression("SET #current = :current, #updated = :at")
            .condition_expression(format!(
                "#user_id = :user AND #status = :succeeded AND attribute_not_exists(#active) \
                 AND attribute_not_exists(#deleted) AND {holds}"
            ))
            .expression_attribute_names("#current", attr::CURRENT)
            .expression_attribute_names("#cjob", attr::JOB_ID)
            .expression_attribute_names("#active", attr::REPAIR_ACTIVE)
            .expression_attribute_values(":current", current)
            .expression_attribute_values(":cw", s(compared_with.as_str()));
        let items = [on_repair, on_root]
            .into_iter()
            .map(|b| {
                b.expression_attribute_names("#user_id", attr::USER_ID)
                    .expression_attribute_names("#status", attr::STATUS)
                    .expression_attribute_names("#updated", attr::UPDATED_AT)
                    .expression_attribute_names("#deleted", attr::IMAGES_DELETED_AT)
                    .expression_attribute_values(":user", s(repair.user_id.as_str()))
                    .expression_attribute_values(":at", s(at))
                    .expression_attribute_values(":succeeded", s(JobState::Succeeded.as_str()))
                    .build()
                    .map(|u| TransactWriteItem::builder().update(u).build())
                    .map_err(|e| AwsError::new("repairs.adopt.build", e).into())
            })
            .collect::<Result<Vec<_>, Error>>()?;
        match self.transact("repairs.adopt", items).await? {
            TxOutcome::Committed => Ok(true),
            TxOutcome::Canceled(_) => Ok(false),
        }
    }

    /// Jobs by id, read consistently, in the order asked (missing ones left out).
    pub async fn get_jobs(&self, ids: &[JobId]) -> Result<Vec<Job>, Error> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(job) = self.get_job(id).await? {
                out.push(job);
            }
        }
        Ok(out)
    }
}
