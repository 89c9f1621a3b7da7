//! Webhook events: what a receiver is told (the catalogue, the payload, the event id), how long
//! events are kept, how often delivery is retried, and how a body is signed ([`sign`]).
//!
//! The database is the outbox: an event row is written in the SAME transaction as the state
//! change it reports (a job delivered, failed or canceled; credits bought), so an event is
//! never lost and never sent for something that did not happen. Delivery is at-least-once:
//! every retry of an event carries the same `webhook-id`, and receivers dedupe by it.
//!
//! Payloads are thin: ids, states and failure codes, never image bytes or URLs. Event rows
//! and their delivery log are kept [`RETENTION`] (DynamoDB's TTL removes them).

pub mod sign;

use serde::{Deserialize, Serialize};

use crate::domain::failure::JobFailure;
use crate::domain::ids::{JobId, Operation, UserId};
use crate::domain::job::{Job, JobState};
use crate::domain::trace::TraceId;

/// The parts of a job an event reports.
#[derive(Debug, Clone, Copy)]
pub struct JobRef<'a> {
    pub job_id: &'a JobId,
    pub user_id: &'a UserId,
    pub operation: Operation,
    /// A repair's lineage root.
    pub root_job_id: Option<&'a JobId>,
}

impl Job {
    /// What a webhook event about this job reports (here, beside [`JobRef`], so the job's
    /// module does not import the events').
    pub fn event_ref(&self) -> JobRef<'_> {
        JobRef {
            job_id: &self.job_id,
            user_id: &self.user_id,
            operation: self.operation,
            root_job_id: self.repair.as_ref().map(|r| &r.root_job_id),
        }
    }
}

/// Every event type a receiver may get: the catalogue (receivers and tests match on these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = WebhookEventType)]
pub enum EventType {
    #[serde(rename = "edit.succeeded")]
    EditSucceeded,
    #[serde(rename = "edit.failed")]
    EditFailed,
    #[serde(rename = "edit.canceled")]
    EditCanceled,
    #[serde(rename = "repair.succeeded")]
    RepairSucceeded,
    #[serde(rename = "repair.failed")]
    RepairFailed,
    #[serde(rename = "repair.canceled")]
    RepairCanceled,
    #[serde(rename = "credits.purchased")]
    CreditsPurchased,
}

impl EventType {
    /// Every event type, in the catalogue's order.
    pub const ALL: [EventType; 7] = [
        EventType::EditSucceeded,
        EventType::EditFailed,
        EventType::EditCanceled,
        EventType::RepairSucceeded,
        EventType::RepairFailed,
        EventType::RepairCanceled,
        EventType::CreditsPurchased,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::EditSucceeded => "edit.succeeded",
            EventType::EditFailed => "edit.failed",
            EventType::EditCanceled => "edit.canceled",
            EventType::RepairSucceeded => "repair.succeeded",
            EventType::RepairFailed => "repair.failed",
            EventType::RepairCanceled => "repair.canceled",
            EventType::CreditsPurchased => "credits.purchased",
        }
    }

    /// The event a job's move into `to` reports; `None` for states that are not an end.
    pub fn for_job(op: Operation, to: JobState) -> Option<EventType> {
        use EventType::*;
        Some(match (op, to) {
            (Operation::Edit, JobState::Succeeded) => EditSucceeded,
            (Operation::Edit, JobState::Failed) => EditFailed,
            (Operation::Edit, JobState::Canceled) => EditCanceled,
            (Operation::Repair, JobState::Succeeded) => RepairSucceeded,
            (Operation::Repair, JobState::Failed) => RepairFailed,
            (Operation::Repair, JobState::Canceled) => RepairCanceled,
            _ => return None,
        })
    }
}

/// The body a receiver gets (the specification's `{type, timestamp, data}` envelope).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = WebhookEvent)]
pub struct Payload {
    #[serde(rename = "type")]
    pub kind: EventType,
    /// When the state change happened (RFC 3339), not when this attempt was sent.
    #[schema(format = DateTime)]
    pub timestamp: String,
    pub data: EventData,
}

/// What an event is about: ids, states and codes only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = WebhookEventData)]
pub struct EventData {
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<JobState>,
    /// A failed or canceled job's failure code (the API's `failure.code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::domain::failure::FailureCode>)]
    pub failure_code: Option<String>,
    /// A repair's lineage root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_job_id: Option<String>,
    /// A purchase's credits and pack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credits: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack: Option<String>,
}

/// One event ready for the outbox: its id (the `webhook-id` of every attempt) and its body,
/// serialized once so every attempt signs the same bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    pub id: String,
    pub kind: EventType,
    pub body: String,
    /// The trace id of the job it reports, for the deliverer's log lines.
    pub trace: Option<TraceId>,
}

impl NewEvent {
    /// The event, carrying `trace` to the deliverer's log lines.
    pub fn traced(self, trace: Option<TraceId>) -> NewEvent {
        NewEvent { trace, ..self }
    }

    fn new(id: String, payload: &Payload) -> NewEvent {
        NewEvent {
            id,
            kind: payload.kind,
            // A struct of strings and integers always serializes.
            body: serde_json::to_string(payload).unwrap_or_default(),
            trace: None,
        }
    }

    /// The event of `job` moving to `to` at `now`; `None` when `to` is not an end state. Its
    /// id is derived from the job and the state (`evt_<job id>_<state>`), so it is unique.
    pub fn for_job(
        job: JobRef<'_>,
        to: JobState,
        failure: Option<&JobFailure>,
        now: &str,
    ) -> Option<NewEvent> {
        let kind = EventType::for_job(job.operation, to)?;
        let payload = Payload {
            kind,
            timestamp: now.to_owned(),
            data: EventData {
                user_id: job.user_id.clone(),
                job_id: Some(job.job_id.as_str().to_owned()),
                state: Some(to),
                failure_code: failure.map(|f| f.code.as_str().to_owned()),
                root_job_id: job.root_job_id.map(|r| r.as_str().to_owned()),
                credits: None,
                pack: None,
            },
        };
        Some(NewEvent::new(
            format!("evt_{}_{}", job.job_id, to.as_str()),
            &payload,
        ))
    }

    /// The event of a purchase (`evt_purchase_<payment id>`; Stripe ids have no dots).
    pub fn purchase(
        user: &UserId,
        payment_id: &str,
        pack: &str,
        credits: i64,
        now: &str,
    ) -> NewEvent {
        let payload = Payload {
            kind: EventType::CreditsPurchased,
            timestamp: now.to_owned(),
            data: EventData {
                user_id: user.clone(),
                job_id: None,
                state: None,
                failure_code: None,
                root_job_id: None,
                credits: Some(credits),
                pack: Some(pack.to_owned()),
            },
        };
        let safe: String = payment_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        NewEvent::new(format!("evt_purchase_{safe}"), &payload)
    }
}

/// How long an event and each attempt of its delivery log are kept (Svix and Stripe keep
/// theirs 30 days): their `expires_at` is this after they were written, and DynamoDB's TTL
/// removes them. A replay renews the event's.
pub const RETENTION: std::time::Duration = std::time::Duration::from_secs(30 * 86_400);

/// The `expires_at` (Unix seconds) of a webhook row written at `now`.
pub fn expires_at(now: time::OffsetDateTime) -> i64 {
    (now + RETENTION).unix_timestamp()
}

/// Svix's schedule: the waits before attempts 2, 3, … after each failed attempt (attempt 1
/// is immediate): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h — eight attempts over about
/// 28 hours, then the event gives up for that endpoint.
pub const SCHEDULE_SECS: [u64; 7] = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

/// The longest wait a queue message can carry (SQS `DelaySeconds`); a longer one is recorded
/// as due and re-driven by the sweeper's round.
pub const MAX_QUEUE_DELAY_SECS: u64 = 900;

/// Retry policy: the wait after each failed attempt follows [`SCHEDULE_SECS`]; an endpoint
/// that has failed every attempt for `disable_after_secs` is disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub disable_after_secs: u64,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            disable_after_secs: 3 * 86_400,
        }
    }
}

impl RetryPolicy {
    /// The wait after attempt `made` (1 = the first) failed; `None` once the schedule is over.
    pub fn wait_after(&self, made: u32) -> Option<std::time::Duration> {
        let i = usize::try_from(made.checked_sub(1)?).ok()?;
        SCHEDULE_SECS
            .get(i)
            .map(|s| std::time::Duration::from_secs(*s))
    }

    /// Attempts one event makes to one endpoint at most.
    pub fn attempts(&self) -> u32 {
        SCHEDULE_SECS.len() as u32 + 1
    }
}

/// How the next attempt after a failure is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextAttempt {
    /// A queue message delayed by this many seconds (≤ [`MAX_QUEUE_DELAY_SECS`]).
    Queued { delay_secs: u64 },
    /// Recorded as due after this many seconds: the sweeper's round enqueues it then.
    Recorded { after_secs: u64 },
    /// The schedule is over: no more attempts for this endpoint.
    GiveUp,
}

impl NextAttempt {
    /// The plan after attempt `made` failed.
    pub fn after(policy: &RetryPolicy, made: u32) -> NextAttempt {
        match policy.wait_after(made).map(|w| w.as_secs()) {
            None => NextAttempt::GiveUp,
            Some(s) if s <= MAX_QUEUE_DELAY_SECS => NextAttempt::Queued { delay_secs: s },
            Some(s) => NextAttempt::Recorded { after_secs: s },
        }
    }
}

/// How long a due attempt may stay unclaimed (its message late or lost, its deliverer
/// crashed) before the sweeper's round enqueues it again; also the round's first look at a
/// new event, which the stream has normally delivered by then.
pub const REDRIVE_GRACE: std::time::Duration = std::time::Duration::from_secs(120);

/// One delivery-queue message: attempt `attempt` of event `event_id` to endpoint
/// `endpoint_id`. The attempt number makes it idempotent: a duplicate (a stream record seen
/// twice, the sweeper's re-drive beside a late message) finds the attempt already claimed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryMessage {
    #[serde(rename = "eventId")]
    pub event_id: String,
    #[serde(rename = "endpointId")]
    pub endpoint_id: String,
    pub attempt: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_follow_svix_schedule_queue_short_waits_and_record_long_ones() {
        let p = RetryPolicy::default();
        let plans: Vec<NextAttempt> = (1..=p.attempts())
            .map(|n| NextAttempt::after(&p, n))
            .collect();
        assert_eq!(plans[0], NextAttempt::Queued { delay_secs: 5 });
        assert_eq!(plans[1], NextAttempt::Queued { delay_secs: 300 });
        assert_eq!(plans[2], NextAttempt::Recorded { after_secs: 1800 });
        assert_eq!(plans[6], NextAttempt::Recorded { after_secs: 36_000 });
        assert_eq!(plans[7], NextAttempt::GiveUp, "eight attempts in all");
        let total: u64 = SCHEDULE_SECS.iter().sum();
        assert_eq!(
            total, 99_305,
            "about 27.6 h from the first attempt to the last"
        );
    }

    #[test]
    fn a_row_written_now_expires_after_the_retention() {
        let now = time::OffsetDateTime::now_utc();
        assert_eq!(expires_at(now) - now.unix_timestamp(), 30 * 86_400);
    }

    #[test]
    fn event_types_serialize_as_their_names() {
        for t in [
            EventType::EditSucceeded,
            EventType::CreditsPurchased,
            EventType::RepairFailed,
        ] {
            assert_eq!(
                serde_json::to_value(t).ok(),
                Some(serde_json::json!(t.as_str()))
            );
        }
    }
}
