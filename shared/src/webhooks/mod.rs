//! Signed webhooks to the deployment's app backends (Standard Webhooks).
//!
//! The database is the outbox: an event row is written in the SAME transaction as the state
//! change it reports (a job delivered, failed or canceled; credits bought), so an event is
//! never lost and never sent for something that did not happen. Delivery is decoupled from
//! the job path: a worker reads due events, POSTs them signed to every active endpoint and
//! records each attempt; failures are retried with exponential backoff. Delivery is
//! at-least-once: every retry of an event carries the same `webhook-id`, and receivers dedupe
//! by it (exactly-once over HTTP is impossible).
//!
//! Payloads are thin: ids, states and failure codes, never image bytes or URLs. Event rows
//! and their delivery log are kept [`RETENTION`] (DynamoDB's TTL removes them).

pub mod address;
pub mod client;
pub mod sign;

use serde::{Deserialize, Serialize};

use crate::domain::{JobFailure, JobState, Operation, UserId};
use crate::store::schema::JobItem;

/// Every event type a receiver may get: the catalogue (receivers and tests match on these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    #[serde(rename = "type")]
    pub kind: EventType,
    /// When the state change happened (RFC 3339), not when this attempt was sent.
    pub timestamp: String,
    pub data: EventData,
}

/// What an event is about: ids, states and codes only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventData {
    pub user_id: UserId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<JobState>,
    /// A failed or canceled job's failure code (the API's `failure.code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
        job: &JobItem,
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
                root_job_id: job
                    .repair
                    .as_ref()
                    .map(|r| r.root_job_id.as_str().to_owned()),
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
pub fn expires_at(now: crate::clock::Instant) -> i64 {
    (now + RETENTION).unix_timestamp()
}

/// The longest endpoint URL accepted.
pub const MAX_URL_LEN: usize = 2048;

/// Whether webhooks may go to loopback, private and link-local addresses
/// (`ATELIER_WEBHOOK_PRIVATE_ADDRESSES`): only local runs allow it, where the receivers are on
/// this machine. Refused by default, so a deployment never POSTs inside its own network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrivateAddresses {
    #[default]
    Refuse,
    Allow,
}

impl PrivateAddresses {
    /// Whether an address of `class` may be sent to.
    pub fn permit(self, class: address::AddressClass) -> bool {
        self == PrivateAddresses::Allow || class == address::AddressClass::Public
    }
}

/// Why an endpoint URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("the URL is longer than {MAX_URL_LEN} characters")]
    TooLong,
    #[error("the URL does not parse")]
    Malformed,
    #[error("webhooks go to https:// URLs (http:// only to 127.0.0.1 or localhost)")]
    NotHttps,
    #[error(
        "{host} is a {} address: webhooks go to public addresses only (ATELIER_WEBHOOK_PRIVATE_ADDRESSES=allow is for local runs)",
        class.as_str()
    )]
    NotPublic {
        host: String,
        class: address::AddressClass,
    },
}

/// An endpoint's URL: https, or http to this machine for local runs; no credentials in it;
/// unless `private` allows them, no literal loopback, private or link-local address and no
/// `localhost` (a DNS name is checked again, resolved, at every send).
pub fn validate_url(raw: &str, private: PrivateAddresses) -> Result<reqwest::Url, UrlError> {
    if raw.len() > MAX_URL_LEN {
        return Err(UrlError::TooLong);
    }
    let url = reqwest::Url::parse(raw).map_err(|_| UrlError::Malformed)?;
    if url.host_str().is_none() || !url.username().is_empty() || url.password().is_some() {
        return Err(UrlError::Malformed);
    }
    if let Some(class) = literal_class(&url).filter(|c| !private.permit(*c)) {
        let host = url.host_str().unwrap_or_default().to_owned();
        return Err(UrlError::NotPublic { host, class });
    }
    let local = matches!(url.host_str(), Some("127.0.0.1" | "localhost"));
    match url.scheme() {
        "https" => Ok(url),
        "http" if local => Ok(url),
        _ => Err(UrlError::NotHttps),
    }
}

/// The class of a URL's host when it is an IP literal or a `localhost` name; `None` for a
/// name only DNS can place.
pub fn literal_class(url: &reqwest::Url) -> Option<address::AddressClass> {
    if let Some(ip) = host_ip(url) {
        return Some(address::AddressClass::of(ip));
    }
    let name = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    (name == "localhost" || name.ends_with(".localhost")).then_some(address::AddressClass::Loopback)
}

/// The URL's host when it is an IP literal (the URL parser has already normalized IPv4 forms
/// such as `2130706433` or `0x7f.1`; IPv6 literals come bracketed).
pub fn host_ip(url: &reqwest::Url) -> Option<std::net::IpAddr> {
    let host = url.host_str()?;
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse().ok()
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
    fn urls_are_https_or_local_http() {
        let validate_url = |url| validate_url(url, PrivateAddresses::Allow);
        for (url, ok, why) in [
            ("https://hooks.example.com/atelier", true, "https"),
            ("http://127.0.0.1:9000/hook", true, "local http"),
            ("http://localhost/hook", true, "localhost http"),
            ("http://hooks.example.com/", false, "plain http elsewhere"),
            ("ftp://example.com/", false, "other scheme"),
            (
                "https://user:pw@example.com/",
                false,
                "credentials in the URL",
            ),
            ("not a url", false, "garbage"),
        ] {
            assert_eq!(validate_url(url).is_ok(), ok, "{why}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(validate_url(&long), Err(UrlError::TooLong));
    }

    #[test]
    fn outside_local_runs_a_literal_inner_address_is_refused_at_add_time() {
        use address::AddressClass::*;
        for (url, class) in [
            ("http://127.0.0.1:9000/hook", Loopback),
            ("http://localhost/hook", Loopback),
            ("https://LOCALHOST./hook", Loopback),
            ("https://api.localhost/hook", Loopback),
            ("https://169.254.169.254/latest/meta-data/", LinkLocal),
            ("https://10.0.0.8/hook", Private),
            ("https://[::1]/hook", Loopback),
            ("https://[::ffff:192.168.0.1]/hook", Private),
            ("https://[fd00::1]/hook", UniqueLocal),
            ("https://0.0.0.0/hook", Unspecified),
            ("https://100.64.1.1/hook", SharedNat),
            ("https://2130706433/hook", Loopback),
            ("https://0x7f.1/hook", Loopback),
        ] {
            let got = validate_url(url, PrivateAddresses::Refuse);
            assert!(
                matches!(got, Err(UrlError::NotPublic { class: c, .. }) if c == class),
                "{url}: {got:?}"
            );
        }
        for url in ["https://hooks.example.com/a", "https://8.8.8.8/a"] {
            assert!(validate_url(url, PrivateAddresses::Refuse).is_ok(), "{url}");
        }
        assert_eq!(
            validate_url("http://hooks.example.com/", PrivateAddresses::Refuse),
            Err(UrlError::NotHttps)
        );
    }

    #[test]
    fn a_row_written_now_expires_after_the_retention() {
        let now = crate::clock::now();
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
