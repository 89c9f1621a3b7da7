//! Submitting a paid repair of a succeeded edit (rule 7): the same price function, the same
//! one-transaction debit and the same replay rules as an edit; the lineage's limits are
//! conditions of that transaction (see `store::repairs`).

use super::App;
use super::submit::{Submitted, queued_job};
use crate::domain::{IdempotencyKey, JobId, JobState, Operation, RepairSpec, UserId};
use crate::error::Error;
use crate::pricing;
use crate::store::jobs::CreateOutcome;
use crate::store::repairs::RepairCreateOutcome;
use crate::store::schema::{JobItem, RepairOf};

/// Submits a repair of `target` (the original edit or any succeeded repair of it) on behalf
/// of `user`. The repair edits the version the user holds when it runs.
pub async fn submit_repair(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    target: &JobId,
    spec: RepairSpec,
) -> Result<Submitted, Error> {
    let job_id = JobId::derive(user, Operation::Repair, key);
    let target = super::jobs::get_job(app, user, target).await?;
    let root = match &target.repair {
        None => target.clone(),
        Some(r) => super::jobs::get_job(app, user, &r.root_job_id).await?,
    };
    let request_hash = spec.request_hash(&root.job_id);
    // Finished jobs never change state, so this read cannot turn a replay into a refusal; a
    // replay is otherwise answered by the transaction (the job's put fails first).
    if target.status != JobState::Succeeded {
        return Err(Error::NotRepairable {
            state: target.status,
        });
    }
    let price = pricing::price(Operation::Repair, &root.request).credits;
    let job = queued_job(
        job_id,
        user,
        Operation::Repair,
        root.request.clone(),
        request_hash,
        price.as_i64(),
        Some(RepairOf {
            root_job_id: root.job_id.clone(),
            instruction: spec.instruction,
        }),
    );
    for _ in 0..2 {
        let outcome = app
            .store
            .create_repair_with_debit(&job, &root.job_id, app.config.limits.max_in_flight)
            .await?;
        match outcome {
            RepairCreateOutcome::Created => {
                tracing::info!(user_id = %user, job_id = %job.job_id, root_job_id = %root.job_id, credits = job.credits, "repair_created");
                if let Err(e) = app.queue.send_job(&job.job_id).await {
                    tracing::warn!(job_id = %job.job_id, error = %crate::error::chain(&e), "queue_dispatch_deferred");
                }
                return Ok(Submitted {
                    job,
                    replayed: false,
                });
            }
            RepairCreateOutcome::Exists(old) => {
                return replay_or_conflict(*old, user, &job.request_hash);
            }
            RepairCreateOutcome::RootMissing => return Err(Error::NotFound { what: "edit" }),
            RepairCreateOutcome::NotRepairable { state } => {
                return Err(Error::NotRepairable { state });
            }
            RepairCreateOutcome::Stopped => return Err(Error::RepairsStopped),
            RepairCreateOutcome::LimitReached => return Err(Error::RepairLimitReached),
            RepairCreateOutcome::InProgress => return Err(Error::RepairInProgress),
            RepairCreateOutcome::Debit(CreateOutcome::AccountMissing) => {
                super::accounts::ensure_account(app, user).await?;
            }
            RepairCreateOutcome::Debit(CreateOutcome::InsufficientCredits { balance }) => {
                return Err(Error::InsufficientCredits {
                    balance,
                    price: price.get(),
                });
            }
            RepairCreateOutcome::Debit(CreateOutcome::TooManyInFlight { in_flight }) => {
                return Err(Error::TooManyInFlight {
                    in_flight,
                    limit: app.config.limits.max_in_flight,
                });
            }
            RepairCreateOutcome::Debit(other) => {
                return Err(Error::corrupt(format!(
                    "repair debit refused for no known reason: {other:?}"
                )));
            }
        }
    }
    Err(Error::NotFound { what: "account" })
}

/// Same key: the same repair request is a replay (nothing charged); another body a conflict.
fn replay_or_conflict(old: JobItem, user: &UserId, hash: &str) -> Result<Submitted, Error> {
    if old.request_hash == hash && old.user_id == *user && old.operation == Operation::Repair {
        tracing::info!(job_id = %old.job_id, "job_replayed");
        Ok(Submitted {
            job: old,
            replayed: true,
        })
    } else {
        tracing::info!(job_id = %old.job_id, "idempotency_conflict");
        Err(Error::IdempotencyConflict)
    }
}

/// A lineage as its owner sees it: the root edit, its repairs oldest first.
#[derive(Debug, Clone)]
pub struct Lineage {
    pub root: JobItem,
    pub repairs: Vec<JobItem>,
}

/// The lineage a job belongs to (the root and every repair), or `None` for an edit that was
/// never repaired.
pub async fn lineage_of(app: &App, job: &JobItem) -> Result<Option<Lineage>, Error> {
    let root = match &job.repair {
        None if job.repair_jobs.is_empty() => return Ok(None),
        None => job.clone(),
        Some(r) => match app.store.get_job(&r.root_job_id).await? {
            Some(root) if root.user_id == job.user_id => root,
            _ => return Ok(None),
        },
    };
    let repairs = app.store.get_jobs(&root.repair_jobs).await?;
    Ok(Some(Lineage { root, repairs }))
}
