//! Submitting a paid repair of a succeeded edit (rule 7): the same price function, the same
//! one-transaction debit and the same replay rules as an edit. The lineage's limits (two
//! repairs, at most one in flight, none after a repair that did not help) are conditions of
//! that same transaction (see `store::lineage`), so nothing is charged for a refused repair.
//! A repair writes nothing to the bucket: it edits from its root's kept inputs, and records
//! the root's input versions so a consumer can still make that copy from those exact bytes.

use super::charge::{self, Submitted};
use crate::clock;
use crate::domain::TraceId;
use crate::domain::pricing;
use crate::domain::{IdempotencyKey, JobId, JobState, Operation, RepairSpec, UserId};
use crate::domain::{Job, NewJob, RepairOf};
use crate::error::Error;
use crate::services::App;
use crate::services::budget::day_of;
use crate::store::lineage::LineageRefusal;

/// Submits a repair of `target` (the original edit or any succeeded repair of it) on behalf
/// of `user`. The repair edits the version the user holds when it runs.
pub async fn submit_repair(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    target: &JobId,
    spec: RepairSpec,
    trace: Option<TraceId>,
) -> Result<Submitted, Error> {
    let job_id = JobId::derive(user, Operation::Repair, key);
    let target = crate::services::jobs::get_job(app, user, target).await?;
    let root = match &target.repair {
        None => target.clone(),
        Some(r) => crate::services::jobs::get_job(app, user, &r.root_job_id).await?,
    };
    let request_hash = spec.request_hash(&root.job_id);
    // Finished jobs never change state, so this read cannot turn a replay into a refusal; a
    // replay is otherwise answered by the transaction (the job's put fails first).
    if target.status() != JobState::Succeeded {
        return Err(Error::NotRepairable {
            state: target.status(),
        });
    }
    let price = pricing::price(Operation::Repair, &root.request).credits;
    let now = clock::now();
    let trace = trace.unwrap_or_else(|| TraceId::for_job(job_id.as_str(), now.unix_timestamp()));
    let job = Job::queued(
        NewJob {
            job_id,
            user_id: user.clone(),
            operation: Operation::Repair,
            request: root.request.clone(),
            request_hash,
            inputs: root.inputs.clone(),
            credits: price,
            repair: Some(RepairOf {
                root_job_id: root.job_id.clone(),
                instruction: spec.instruction,
            }),
            trace,
        },
        &clock::format(now),
        &clock::format(now + app.config.limits.first_resend_after()),
    );
    let max_in_flight = app.config.limits.max_in_flight;
    let share_day = day_of(now);
    charge::create_charged(
        app,
        &job,
        || {
            app.store
                .create_repair_with_debit(&job, &root.job_id, max_in_flight, &share_day)
        },
        lineage_refused,
    )
    .await
}

/// The error for a lineage that refused a repair slot.
fn lineage_refused(refusal: LineageRefusal) -> Error {
    match refusal {
        LineageRefusal::RootMissing => Error::NotFound { what: "edit" },
        LineageRefusal::NotRepairable { state } => Error::NotRepairable { state },
        LineageRefusal::Stopped => Error::RepairsStopped,
        LineageRefusal::LimitReached => Error::RepairLimitReached,
        LineageRefusal::InProgress => Error::RepairInProgress,
        LineageRefusal::ImagesDeleted => Error::ImagesDeleted,
    }
}
