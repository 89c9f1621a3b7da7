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

use crate::domain::{JobFailure, JobId, JobState, Operation, UserId};

/// The parts of a job an event reports.
#[derive(Debug, Clone, Copy)]
pub struct JobRef<'a> {
    pub job_id: &'a JobId,
    pub user_id: &'a UserId,
    pub operation: Operation,
    /// A repair's lineage root.
    pub root_job_id: Option<&'a JobId>,
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
    #[schema(value_type = Option<crate::domain::FailureCode>)]
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
}

impl NewEvent {
    fn new(id: String, payload: &Payload) -> NewEvent {
        NewEvent {
            id,
            kind: payload.kind,
            // A struct of strings and integers always serializes.
            body: serde_json::to_string(payload).unwrap_or_default(),
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

/// Retry policy: the wait before attempt round `n + 1` after `n` failed rounds doubles from
/// `base_secs` up to `max_secs`; after `give_up_after` rounds the event stops. An endpoint
/// that has failed every attempt for `disable_after_secs` is disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub base_secs: u64,
    pub max_secs: u64,
    pub give_up_after: u32,
    pub disable_after_secs: u64,
}

impl Default for RetryPolicy {
    /// 30 s doubling to 6 h: 18 rounds span about three days (the "long run" before an
    /// endpoint is disabled).
    fn default() -> RetryPolicy {
        RetryPolicy {
            base_secs: 30,
            max_secs: 6 * 3600,
            give_up_after: 18,
            disable_after_secs: 3 * 86_400,
        }
    }
}

impl RetryPolicy {
    /// The wait after `failed` failed rounds (1 = the first failure).
    pub fn wait_after(&self, failed: u32) -> std::time::Duration {
        let shift = failed.saturating_sub(1).min(30);
        let secs = self
            .base_secs
            .saturating_mul(1u64 << shift)
            .min(self.max_secs);
        std::time::Duration::from_secs(secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_ceiling_and_span_days() {
        let p = RetryPolicy::default();
        let waits: Vec<u64> = (1..=p.give_up_after)
            .map(|n| p.wait_after(n).as_secs())
            .collect();
        assert_eq!(&waits[..4], &[30, 60, 120, 240]);
        assert_eq!(waits.last(), Some(&(6 * 3600)));
        let total: u64 = waits.iter().sum();
        assert!((2 * 86_400..4 * 86_400).contains(&total), "{total} s");
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
