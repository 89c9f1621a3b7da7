//! Job lifecycle. [`JobState`] is the vocabulary; [`Job`] is a job as the use cases see it,
//! each state carrying what it has (a result only once succeeded, a failure only once failed).
//! The transitions themselves are the conditional writes in `store::jobs` (claim, deliver,
//! fail/cancel with refund), written there once; the row's mapping lives in `store::schema`.

use serde::{Deserialize, Serialize};

use super::edit::{AssetKind, EditSpec, InputVersion};
use super::failure::JobFailure;
use super::ids::{Credits, JobId, Operation, UserId};
use super::repair_request;
use super::result::JobResult;
use super::trace::TraceId;

/// A job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Charged, waiting for the consumer.
    Queued,
    /// Claimed by a consumer; never re-enters a paid call.
    Processing,
    Succeeded,
    /// Failed and refunded.
    Failed,
    /// Canceled while queued, and refunded.
    Canceled,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Processing => "processing",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Canceled => "canceled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Failed | JobState::Canceled
        )
    }
}

/// What a job is doing, for a person watching it: queued, then the consumer's steps as it
/// last recorded them (`looking`: loading and the readiness check; `drawing`: the edit call;
/// `checking`: the review, or a repair's comparison).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Queued,
    Looking,
    Drawing,
    Checking,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Queued => "queued",
            Stage::Looking => "looking",
            Stage::Drawing => "drawing",
            Stage::Checking => "checking",
        }
    }
}

/// A job: who asked for what, what it costs, where it is, and its place in a lineage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub job_id: JobId,
    /// The owner.
    pub user_id: UserId,
    pub operation: Operation,
    pub request: EditSpec,
    pub request_hash: String,
    /// The exact bytes of each input at submit (a repair: its root's). The consumer keeps its
    /// copy of an input only from an upload that still has them; empty on jobs submitted
    /// before versions were recorded, whose submit made the copy itself.
    pub inputs: Vec<InputVersion>,
    /// The charge: debited at submit, refunded whole on failure or cancel (rules 1, 6).
    pub credits: Credits,
    pub state: State,
    /// How often the queue was rung for it, and when last.
    pub dispatch: Dispatch,
    /// A repair job: which lineage, what to improve.
    pub repair: Option<RepairOf>,
    /// The root of a lineage: repairs charged and not refunded.
    pub repairs_used: u32,
    /// The root: repair submissions ever accepted, refunded ones included.
    pub repair_attempts: u32,
    /// The root: a repair did not improve on the current version.
    pub repairs_stopped: bool,
    /// The root: the repair in flight (at most one).
    pub repair_active: Option<JobId>,
    /// The root: the version the user holds, once a repair replaced the original result.
    pub current: Option<CurrentVersion>,
    /// The root: every repair job of the lineage, oldest first.
    pub repair_jobs: Vec<JobId>,
    pub created_at: String,
    pub updated_at: String,
    /// When its images were deleted at the owner's request.
    pub images_deleted_at: Option<String>,
    /// The step the consumer last recorded while processing (see [`Job::stage`]).
    pub stage: Option<Stage>,
    /// The job's trace id, in every log line about it (absent on jobs submitted before).
    pub trace: Option<TraceId>,
}

/// Where a job is, with what that state has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Charged, waiting for the consumer; the sweeper re-sends it at `resend_at`.
    Queued { resend_at: String },
    /// Claimed at `started_at`; never re-enters a paid call.
    Processing { started_at: String },
    Succeeded {
        started_at: Option<String>,
        /// Boxed: a result is several times the size of the other states.
        result: Box<JobResult>,
    },
    /// Failed and refunded.
    Failed {
        started_at: Option<String>,
        failure: JobFailure,
    },
    /// Canceled while queued, and refunded.
    Canceled { failure: JobFailure },
}

/// The queue's bookkeeping of a job: rings so far and the last one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    pub count: u32,
    pub at: String,
}

/// What makes a job a repair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairOf {
    pub root_job_id: JobId,
    pub instruction: String,
}

/// The version of a lineage the user holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrentVersion {
    /// The job whose image it is (the root, or a repair).
    pub job_id: JobId,
    pub asset_key: String,
}

/// What a new job is made of; [`Job::queued`] adds the bookkeeping.
#[derive(Debug, Clone)]
pub struct NewJob {
    /// Derived from the user, the operation and the Idempotency-Key.
    pub job_id: JobId,
    pub user_id: UserId,
    pub operation: Operation,
    pub request: EditSpec,
    pub request_hash: String,
    /// What each input's upload held when the job was priced (see [`Job::inputs`]).
    pub inputs: Vec<InputVersion>,
    pub credits: Credits,
    /// A repair: which lineage, what to improve.
    pub repair: Option<RepairOf>,
    /// The submit's trace id (see [`TraceId`]).
    pub trace: TraceId,
}

impl State {
    pub fn status(&self) -> JobState {
        match self {
            State::Queued { .. } => JobState::Queued,
            State::Processing { .. } => JobState::Processing,
            State::Succeeded { .. } => JobState::Succeeded,
            State::Failed { .. } => JobState::Failed,
            State::Canceled { .. } => JobState::Canceled,
        }
    }
}

impl Job {
    /// The trace id for log lines (empty on a job submitted before jobs carried one).
    pub fn trace_id(&self) -> &str {
        self.trace.as_ref().map_or("", |t| t.as_str())
    }

    /// A new job, queued at `now` and counted as dispatched once (the submit rings the queue
    /// right after the commit; if that fails the sweeper re-sends at `resend_at`).
    pub fn queued(new: NewJob, now: &str, resend_at: &str) -> Job {
        let NewJob {
            job_id,
            user_id,
            operation,
            request,
            request_hash,
            inputs,
            credits,
            repair,
            trace,
        } = new;
        Job {
            job_id,
            user_id,
            operation,
            request,
            request_hash,
            inputs,
            credits,
            state: State::Queued {
                resend_at: resend_at.to_owned(),
            },
            dispatch: Dispatch {
                count: 1,
                at: now.to_owned(),
            },
            repair,
            repairs_used: 0,
            repair_attempts: 0,
            repairs_stopped: false,
            repair_active: None,
            current: None,
            repair_jobs: Vec::new(),
            created_at: now.to_owned(),
            updated_at: now.to_owned(),
            images_deleted_at: None,
            stage: None,
            trace: Some(trace),
        }
    }

    /// What the job is doing while in flight: queued, or the step the consumer recorded; a
    /// claimed job that recorded none yet is at its first step (an edit looks first, a repair
    /// draws at once). `None` once finished.
    pub fn stage(&self) -> Option<Stage> {
        match (&self.state, self.stage) {
            (State::Queued { .. }, _) => Some(Stage::Queued),
            (State::Processing { .. }, Some(stage)) => Some(stage),
            (State::Processing { .. }, None) if self.repair.is_some() => Some(Stage::Drawing),
            (State::Processing { .. }, None) => Some(Stage::Looking),
            _ => None,
        }
    }

    pub fn status(&self) -> JobState {
        self.state.status()
    }

    /// The delivered result, once succeeded.
    pub fn result(&self) -> Option<&JobResult> {
        match &self.state {
            State::Succeeded { result, .. } => Some(result.as_ref()),
            _ => None,
        }
    }

    /// Why it failed (or that it was canceled), once refunded.
    pub fn failure(&self) -> Option<&JobFailure> {
        match &self.state {
            State::Failed { failure, .. } | State::Canceled { failure } => Some(failure),
            _ => None,
        }
    }

    /// When a consumer claimed it, if one did.
    pub fn started_at(&self) -> Option<&str> {
        match &self.state {
            State::Queued { .. } | State::Canceled { .. } => None,
            State::Processing { started_at } => Some(started_at),
            State::Succeeded { started_at, .. } | State::Failed { started_at, .. } => {
                started_at.as_deref()
            }
        }
    }

    /// The credits given back: the whole charge once failed or canceled.
    pub fn refunded(&self) -> Option<Credits> {
        matches!(self.state, State::Failed { .. } | State::Canceled { .. }).then_some(self.credits)
    }

    /// The ETag an input of `kind` had at submit, if the job recorded one.
    pub fn input_etag(&self, kind: AssetKind) -> Option<&str> {
        self.inputs
            .iter()
            .find(|i| i.kind == kind)
            .map(|i| i.etag.as_str())
    }

    /// The id of the lineage's root: the job itself, or the edit a repair belongs to.
    pub fn root_id(&self) -> &JobId {
        self.repair
            .as_ref()
            .map_or(&self.job_id, |r| &r.root_job_id)
    }

    /// The image the user holds for this lineage (on a root job): the last accepted repair's,
    /// or the edit's own result.
    pub fn current_asset_key(&self) -> Option<&str> {
        self.current
            .as_ref()
            .map(|c| c.asset_key.as_str())
            .or(self.result().map(|r| r.asset_key.as_str()))
    }

    /// Repairs this lineage's root still accepts (the number the repair submit's condition
    /// is made of, see [`repair_request::repairs_left`]).
    pub fn repairs_left(&self) -> u32 {
        repair_request::repairs_left(
            self.repairs_used,
            self.repair_attempts,
            self.repairs_stopped,
        )
    }

    /// This job as it stays after its owner's account is deleted: money fields, states,
    /// ids and the request's settings kept; every text the user wrote (custom style, target
    /// description, locks, a repair's instruction) and every text a model wrote about the
    /// photo (observation, review and comparison notes, clarifying questions) cleared; the
    /// images marked deleted at `now` (or when they first were).
    pub fn redacted(&self, now: &str) -> Job {
        let mut job = self.clone();
        job.request.custom_style = None;
        job.request.target_description = None;
        job.request.locks.clear();
        if let Some(r) = job.repair.as_mut() {
            r.instruction.clear();
        }
        match &mut job.state {
            State::Failed { failure, .. } | State::Canceled { failure } => {
                failure.questions.clear();
                failure.candidates.clear();
            }
            State::Succeeded { result, .. } => {
                result.observation = None;
                result.review.notes.clear();
                if let Some(c) = result.comparison.as_mut() {
                    c.notes.clear();
                }
            }
            State::Queued { .. } | State::Processing { .. } => {}
        }
        job.images_deleted_at.get_or_insert_with(|| now.to_owned());
        job
    }
}

/// Jobs for the crate's tests.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use crate::domain::{EditRequest, IdempotencyKey};

    /// Alice's new embroidery of a pet at 4 credits, under the key `k-1`.
    pub(crate) fn new_edit(repair: Option<RepairOf>) -> NewJob {
        let (Some(user), Some(key)) = (UserId::parse("alice"), IdempotencyKey::parse("k-1")) else {
            panic!("test ids must parse");
        };
        let request = EditRequest {
            style: Some("embroidery".into()),
            target: Some("pet".into()),
            original_asset_id: Some(crate::domain::AssetId::generate().as_str().to_owned()),
            ..Default::default()
        }
        .validate()
        .unwrap_or_else(|e| panic!("{e}"));
        NewJob {
            job_id: JobId::derive(&user, Operation::Edit, &key),
            user_id: user,
            operation: Operation::Edit,
            request_hash: request.request_hash(),
            request,
            inputs: Vec::new(),
            credits: Credits::new(4),
            repair,
            trace: crate::domain::TraceId::for_job("job_test", 0),
        }
    }

    /// A delivered 4×3 result, not verified.
    pub(crate) fn result() -> crate::domain::JobResult {
        crate::domain::JobResult {
            asset_key: "results/alice/j/v1.png".into(),
            jpeg_key: None,
            width: 4,
            height: 3,
            thumbnail: false,
            review: crate::domain::ReviewRecord::not_verified("test"),
            leakage: None,
            area: None,
            observation: None,
            comparison: None,
            retained_previous: false,
            candidate_asset_key: None,
            adopted_at: None,
            credentials: None,
            candidate_credentials: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::new_edit as new_job;
    use super::*;
    use crate::domain::IdempotencyKey;

    #[test]
    fn a_job_shows_its_stage_only_while_in_flight() {
        let mut job = Job::queued(
            new_job(None),
            "2026-01-02T03:04:05.006Z",
            "2026-01-02T03:05:05.006Z",
        );
        assert_eq!(job.stage(), Some(Stage::Queued));
        job.state = State::Processing {
            started_at: job.created_at.clone(),
        };
        assert_eq!(job.stage(), Some(Stage::Looking), "an edit looks first");
        job.stage = Some(Stage::Checking);
        assert_eq!(job.stage(), Some(Stage::Checking));
        job.state = State::Succeeded {
            started_at: None,
            result: Box::new(fixtures::result()),
        };
        assert_eq!(
            job.stage(),
            None,
            "a finished job has no stage, whatever was recorded"
        );
    }

    #[test]
    fn a_queued_job_has_no_result_no_failure_no_claim_and_nothing_refunded() {
        let job = Job::queued(
            new_job(None),
            "2026-01-02T03:04:05.006Z",
            "2026-01-02T03:05:05.006Z",
        );
        assert_eq!(job.status(), JobState::Queued);
        assert_eq!(job.dispatch.count, 1);
        assert_eq!(
            (job.result(), job.failure(), job.started_at()),
            (None, None, None)
        );
        assert_eq!(job.refunded(), None);
        assert_eq!(job.root_id(), &job.job_id);
    }

    #[test]
    fn a_redacted_clarification_loses_its_questions_and_outlines_and_keeps_its_code() {
        let mut job = Job::queued(
            new_job(None),
            "2026-11-30T00:00:00.000Z",
            "2026-11-30T00:01:00.000Z",
        );
        let candidate = crate::domain::Candidate {
            label: "the grey cat on the left".into(),
            area: crate::domain::AreaBox {
                x0: 1,
                y0: 2,
                x1: 3,
                y1: 4,
            },
        };
        job.state = State::Failed {
            started_at: None,
            failure: JobFailure::needs_clarification(vec!["Which cat?".into()], vec![candidate]),
        };

        let redacted = job.redacted("2026-12-01T00:00:00.000Z");

        let failure = redacted.failure().cloned();
        assert_eq!(
            failure.map(|f| (f.code, f.questions.len(), f.candidates.len())),
            Some((crate::domain::FailureCode::NeedsClarification, 0, 0))
        );
    }

    #[test]
    fn a_redacted_job_keeps_its_money_and_settings_and_loses_every_text_about_the_photo() {
        let mut new = new_job(Some(RepairOf {
            root_job_id: JobId::derive(
                &UserId::parse("alice").unwrap_or_else(|| panic!("id")),
                Operation::Edit,
                &IdempotencyKey::parse("root").unwrap_or_else(|| panic!("key")),
            ),
            instruction: "make the grey cat's ears finer".into(),
        }));
        new.request.custom_style = Some("in pastel wool".into());
        new.request.target_description = Some("the grey cat on the left".into());
        new.request.locks = vec!["the red collar".into()];
        let job = Job::queued(new, "2026-11-30T00:00:00.000Z", "2026-11-30T00:01:00.000Z");

        let redacted = job.redacted("2026-12-01T00:00:00.000Z");

        assert_eq!(redacted.credits, job.credits);
        assert_eq!(redacted.state, job.state);
        assert_eq!(redacted.request_hash, job.request_hash);
        assert_eq!(redacted.request.style, job.request.style);
        assert_eq!(redacted.request.custom_style, None);
        assert_eq!(redacted.request.target_description, None);
        assert!(redacted.request.locks.is_empty());
        assert_eq!(redacted.repair.map(|r| r.instruction), Some(String::new()));
        assert_eq!(
            redacted.images_deleted_at.as_deref(),
            Some("2026-12-01T00:00:00.000Z")
        );
        let again = job
            .redacted("2026-12-01T00:00:00.000Z")
            .redacted("2027-01-01T00:00:00.000Z");
        assert_eq!(
            again.images_deleted_at.as_deref(),
            Some("2026-12-01T00:00:00.000Z"),
            "the first deletion's time is kept"
        );
    }
}
