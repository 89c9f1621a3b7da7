//! A job's row and its conversions to and from the domain's [`Job`].

use serde::{Deserialize, Serialize};

use super::attr;
// Only named by the docs' links.
#[cfg(doc)]
use super::index;
use crate::domain::TraceId;
use crate::domain::job::{CurrentVersion, Dispatch, Job, RepairOf, Stage, State};
use crate::domain::{
    Credits, EditSpec, InputVersion, JobFailure, JobId, JobResult, JobState, Operation, UserId,
};

/// A job's row. Use cases see it as a [`Job`]: read through `TryFrom` (a row whose state
/// lacks what it must carry is refused, never unwrapped), written through `From`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobItem {
    pub job_id: JobId,
    pub user_id: UserId,
    pub operation: Operation,
    pub status: JobState,
    pub request: EditSpec,
    pub request_hash: String,
    /// The exact bytes of each input at submit (a repair: its root's). The consumer keeps its
    /// copy of an input only from an upload that still has them; empty on jobs submitted
    /// before versions were recorded, whose submit made the copy itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<InputVersion>,
    pub credits: Credits,
    pub created_at: String,
    pub updated_at: String,
    /// `created_at#job_id`: the sort key of [`index::JOBS_BY_USER`].
    pub user_sort: String,
    pub dispatch_count: u32,
    pub dispatched_at: String,
    /// Present only while the job is in flight (sparse index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_state: Option<JobState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<JobFailure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JobResult>,
    /// A repair job: which lineage, what to improve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairOf>,
    /// The root of a lineage: its repairs (written by the repair transactions only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repairs_used: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repair_attempts: u32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repairs_stopped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair_active: Option<JobId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<CurrentVersion>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repair_jobs: Vec<JobId>,
    /// [`attr::IMAGES_DELETED_AT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images_deleted_at: Option<String>,
    /// [`attr::STAGE`]: the consumer's step while processing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// The job's trace id; read leniently (a malformed one is dropped, the job still reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A stored job row that does not make a [`Job`]: a state without what it must carry.
#[derive(Debug, thiserror::Error)]
pub enum MalformedJob {
    #[error("job {0} is {1} without `{2}`")]
    Missing(JobId, &'static str, &'static str),
}

impl TryFrom<JobItem> for Job {
    type Error = MalformedJob;

    fn try_from(item: JobItem) -> Result<Job, MalformedJob> {
        let state = job_state(&item)?;
        Ok(Job {
            job_id: item.job_id,
            user_id: item.user_id,
            operation: item.operation,
            request: item.request,
            request_hash: item.request_hash,
            inputs: item.inputs,
            credits: item.credits,
            state,
            dispatch: Dispatch {
                count: item.dispatch_count,
                at: item.dispatched_at,
            },
            repair: item.repair,
            repairs_used: item.repairs_used,
            repair_attempts: item.repair_attempts,
            repairs_stopped: item.repairs_stopped,
            repair_active: item.repair_active,
            current: item.current,
            repair_jobs: item.repair_jobs,
            created_at: item.created_at,
            updated_at: item.updated_at,
            images_deleted_at: item.images_deleted_at,
            stage: item.stage,
            trace: item.trace_id.and_then(|t| TraceId::parse(&t).ok()),
        })
    }
}

/// The state a row's `status` names, with what it must carry (moved out of the row).
fn job_state(item: &JobItem) -> Result<State, MalformedJob> {
    let missing = |what| MalformedJob::Missing(item.job_id.clone(), item.status.as_str(), what);
    let failure = || item.failure.clone().ok_or_else(|| missing(attr::FAILURE));
    Ok(match item.status {
        JobState::Queued => State::Queued {
            resend_at: item
                .sweep_at
                .clone()
                .ok_or_else(|| missing(attr::SWEEP_AT))?,
        },
        JobState::Processing => State::Processing {
            started_at: item
                .started_at
                .clone()
                .ok_or_else(|| missing(attr::STARTED_AT))?,
        },
        JobState::Succeeded => State::Succeeded {
            started_at: item.started_at.clone(),
            result: Box::new(item.result.clone().ok_or_else(|| missing(attr::RESULT))?),
        },
        JobState::Failed => State::Failed {
            started_at: item.started_at.clone(),
            failure: failure()?,
        },
        JobState::Canceled => State::Canceled {
            failure: failure()?,
        },
    })
}

impl From<Job> for JobItem {
    /// The row of a job: the sweeper's index fields follow from its state (a queued job is
    /// due at its re-send, a processing one from its claim; a final one leaves the index).
    fn from(job: Job) -> JobItem {
        let status = job.status();
        let (sweep_at, started_at, result, failure) = match job.state {
            State::Queued { resend_at } => (Some(resend_at), None, None, None),
            State::Processing { started_at } => {
                (Some(started_at.clone()), Some(started_at), None, None)
            }
            State::Succeeded { started_at, result } => (None, started_at, Some(*result), None),
            State::Failed {
                started_at,
                failure,
            } => (None, started_at, None, Some(failure)),
            State::Canceled { failure } => (None, None, None, Some(failure)),
        };
        JobItem {
            user_sort: format!("{}#{}", job.created_at, job.job_id),
            job_id: job.job_id,
            user_id: job.user_id,
            operation: job.operation,
            status,
            request: job.request,
            request_hash: job.request_hash,
            inputs: job.inputs,
            credits: job.credits,
            created_at: job.created_at,
            updated_at: job.updated_at,
            dispatch_count: job.dispatch.count,
            dispatched_at: job.dispatch.at,
            sweep_state: sweep_at.is_some().then_some(status),
            sweep_at,
            failure,
            started_at,
            result,
            repair: job.repair,
            repairs_used: job.repairs_used,
            repair_attempts: job.repair_attempts,
            repairs_stopped: job.repairs_stopped,
            repair_active: job.repair_active,
            current: job.current,
            repair_jobs: job.repair_jobs,
            images_deleted_at: job.images_deleted_at,
            stage: job.stage,
            trace_id: job.trace.as_ref().map(|t| t.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock;
    use crate::domain::NewJob;
    use crate::domain::job::fixtures::new_edit as new_job;

    /// The row of a new job queued at `now`, due for a re-send `wait` later.
    fn queued(new: NewJob, now: clock::Instant, wait: std::time::Duration) -> JobItem {
        JobItem::from(Job::queued(
            new,
            &clock::format(now),
            &clock::format(now + wait),
        ))
    }

    #[test]
    fn a_queued_job_is_dispatched_once_and_waits_in_the_sweepers_index_until_its_resend_is_due() {
        let now = time::macros::datetime!(2026-01-02 03:04:05.006 UTC);
        let job = queued(new_job(None), now, std::time::Duration::from_secs(60));
        let at = "2026-01-02T03:04:05.006Z";
        assert_eq!(job.status, JobState::Queued);
        assert_eq!(job.credits, Credits::new(4));
        assert_eq!(job.dispatch_count, 1);
        assert_eq!(job.sweep_state, Some(JobState::Queued));
        for t in [&job.created_at, &job.updated_at, &job.dispatched_at] {
            assert_eq!(t, at);
        }
        assert_eq!(job.sweep_at.as_deref(), Some("2026-01-02T03:05:05.006Z"));
        assert_eq!(job.user_sort, format!("{at}#{}", job.job_id));
    }

    #[test]
    fn a_queued_job_is_stored_under_the_attribute_names_the_table_already_holds() {
        let names = |job: &JobItem| {
            let mut keys: Vec<String> = crate::store::to_item(job)
                .unwrap_or_else(|e| panic!("{e}"))
                .into_keys()
                .collect();
            keys.sort();
            keys
        };
        let edit = [
            "created_at",
            "credits",
            "dispatch_count",
            "dispatched_at",
            "job_id",
            "operation",
            "request",
            "request_hash",
            "status",
            "sweep_at",
            "sweep_state",
            attr::TRACE_ID,
            "updated_at",
            "user_id",
            "user_sort",
        ];
        let now = clock::now();
        let wait = std::time::Duration::from_secs(60);
        assert_eq!(names(&queued(new_job(None), now, wait)), edit);

        let root = queued(new_job(None), now, wait).job_id;
        let repair = queued(
            new_job(Some(RepairOf {
                root_job_id: root,
                instruction: "finer".into(),
            })),
            now,
            wait,
        );
        let mut with_repair = edit.to_vec();
        with_repair.push(attr::REPAIR);
        with_repair.sort_unstable();
        assert_eq!(names(&repair), with_repair);
    }

    #[test]
    fn every_stored_state_reads_as_a_job_and_writes_back_as_the_same_row() {
        let now = clock::now();
        let row = queued(new_job(None), now, std::time::Duration::from_secs(60));
        let mut claimed = row.clone();
        claimed.status = JobState::Processing;
        claimed.sweep_state = Some(JobState::Processing);
        claimed.started_at = Some("2026-01-02T03:04:05.006Z".into());
        claimed.sweep_at.clone_from(&claimed.started_at);
        let mut failed = claimed.clone();
        failed.status = JobState::Failed;
        failed.sweep_state = None;
        failed.sweep_at = None;
        failed.failure = Some(JobFailure::new(crate::domain::FailureCode::TimedOut));
        let mut canceled = row.clone();
        canceled.status = JobState::Canceled;
        canceled.sweep_state = None;
        canceled.sweep_at = None;
        canceled.failure = Some(JobFailure::new(crate::domain::FailureCode::Canceled));
        for item in [row, claimed, failed, canceled] {
            let job = Job::try_from(item.clone()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(job.status(), item.status);
            assert_eq!(JobItem::from(job), item);
        }
    }

    #[test]
    fn a_row_whose_state_lacks_what_it_must_carry_is_refused_with_its_id() {
        let mut row = queued(
            new_job(None),
            clock::now(),
            std::time::Duration::from_secs(60),
        );
        row.status = JobState::Succeeded;
        let refused = Job::try_from(row.clone())
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            refused,
            Err(format!("job {} is succeeded without `result`", row.job_id))
        );
    }
}
