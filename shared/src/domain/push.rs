//! Push notifications derived from the webhook outbox: which events notify the owner's phones,
//! what the notification says, the delivery target of one (event, device) pair, and how a push
//! service's answer is read. The requests themselves are built in `adapters::push`.

use serde_json::{Value, json};

use super::device::DeviceId;
use super::ids::UserId;
use super::webhooks::{EventType, Payload};

/// The prefix of a push delivery's target id (a webhook endpoint's id never starts so).
pub const TARGET_PREFIX: &str = "push#";

/// The delivery target of a push to `device` of `user`: `push#<device>#<user>` (a device id
/// has no `#`, so the split is unambiguous).
pub fn target(user: &UserId, device: &DeviceId) -> String {
    format!("{TARGET_PREFIX}{device}#{user}")
}

/// The user and device of a push target; `None` for a webhook endpoint's id.
pub fn parse_target(target: &str) -> Option<(UserId, DeviceId)> {
    let (device, user) = target.strip_prefix(TARGET_PREFIX)?.split_once('#')?;
    Some((UserId::parse(user)?, DeviceId::parse(device)?))
}

/// What a phone is told: title and body, and the ids the app opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub event_id: String,
    pub kind: EventType,
    pub title: &'static str,
    pub body: &'static str,
    pub job_id: Option<String>,
}

impl Notification {
    /// The notification an event gives its owner, `None` for events that do not notify (a
    /// cancel is the user's own act).
    pub fn of(event_id: &str, payload: &Payload) -> Option<Notification> {
        let previewed = payload.data.failure_code.as_deref()
            == Some(crate::domain::FailureCode::Previewed.as_str());
        let (title, body) = match payload.kind {
            EventType::EditSucceeded => ("Your edit is ready", "Tap to see it."),
            // A preview that showed its area did what was asked: not a failure to the person.
            EventType::EditFailed if previewed => (
                "The area is ready to see",
                "Tap to see what would be redrawn; nothing was charged.",
            ),
            EventType::EditFailed => (
                "Your edit did not work",
                "Nothing was charged; tap for why.",
            ),
            EventType::RepairSucceeded => ("Your repair is ready", "Tap to see it."),
            EventType::RepairFailed => (
                "Your repair did not work",
                "Nothing was charged; tap for why.",
            ),
            EventType::CreditsPurchased => ("Credits added", "Your purchase is on your balance."),
            EventType::EditCanceled | EventType::RepairCanceled => return None,
        };
        Some(Notification {
            event_id: event_id.to_owned(),
            kind: payload.kind,
            title,
            body,
            job_id: payload.data.job_id.clone(),
        })
    }

    /// The APNs body (`aps.alert`, and the ids beside it for the app).
    pub fn apns_body(&self) -> Value {
        json!({
            "aps": { "alert": { "title": self.title, "body": self.body }, "sound": "default" },
            "event_id": self.event_id,
            "type": self.kind.as_str(),
            "job_id": self.job_id,
        })
    }

    /// The FCM HTTP v1 `messages:send` body for `token`.
    pub fn fcm_body(&self, token: &str) -> Value {
        let mut data = json!({ "event_id": self.event_id, "type": self.kind.as_str() });
        if let Some(job) = &self.job_id {
            data["job_id"] = json!(job);
        }
        json!({ "message": {
            "token": token,
            "notification": { "title": self.title, "body": self.body },
            "data": data,
            "android": { "collapse_key": self.event_id },
        }})
    }
}

/// How a push service answered one push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Delivered,
    /// The token is dead: the device is unregistered, never retried.
    Unregistered,
    /// The push service refused our credentials (APNs 403, FCM 401/403): retried like a
    /// failure, and counted apart (alarmed on: no push arrives until the operator fixes them).
    CredentialsRefused,
    /// Anything else: retried on the webhook schedule.
    Failed,
}

impl Answer {
    /// APNs: 200; 410, or 400 `BadDeviceToken`, or `Unregistered` → the device is gone; 403
    /// (`InvalidProviderToken`, `ExpiredProviderToken`, …) → our provider token was refused.
    pub fn apns(status: u16, body: &str) -> Answer {
        let reason = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| v["reason"].as_str().map(str::to_owned));
        match (status, reason.as_deref()) {
            (200, _) => Answer::Delivered,
            (410, _) | (_, Some("BadDeviceToken" | "Unregistered")) => Answer::Unregistered,
            (403, _) => Answer::CredentialsRefused,
            _ => Answer::Failed,
        }
    }

    /// FCM HTTP v1: 200; 404 with `UNREGISTERED` (as `error.status` or a detail's
    /// `errorCode`) → the device is gone; 401/403 → our access token or service account was
    /// refused (`UNAUTHENTICATED`, `PERMISSION_DENIED`, `SENDER_ID_MISMATCH`).
    pub fn fcm(status: u16, body: &str) -> Answer {
        if (200..300).contains(&status) {
            return Answer::Delivered;
        }
        if matches!(status, 401 | 403) {
            return Answer::CredentialsRefused;
        }
        let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let in_details = v["error"]["details"]
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["errorCode"] == "UNREGISTERED"));
        if status == 404 && (v["error"]["status"] == "UNREGISTERED" || in_details) {
            Answer::Unregistered
        } else {
            Answer::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_names_its_user_and_device_and_an_endpoint_is_no_target() {
        let user = UserId::parse("t-01abc").unwrap_or_else(|| panic!("user"));
        let device = DeviceId::parse("phone-1").unwrap_or_else(|| panic!("device"));
        assert_eq!(parse_target(&target(&user, &device)), Some((user, device)));
        assert_eq!(parse_target("ep_0123"), None);
    }

    fn failed_edit(code: &str) -> Payload {
        Payload {
            kind: EventType::EditFailed,
            timestamp: "2026-12-06T00:00:00Z".into(),
            data: crate::domain::webhooks::EventData {
                user_id: UserId::parse("t-01abc").unwrap_or_else(|| panic!("user")),
                job_id: Some("job_1".into()),
                state: Some(crate::domain::JobState::Failed),
                failure_code: Some(code.into()),
                root_job_id: None,
                credits: None,
                pack: None,
            },
        }
    }

    #[test]
    fn a_preview_that_showed_its_area_is_not_told_as_a_failure() {
        let shown = Notification::of("ev_1", &failed_edit("PREVIEWED"));
        let failed = Notification::of("ev_2", &failed_edit("EDIT_FAILED"));

        assert_eq!(shown.map(|n| n.title), Some("The area is ready to see"));
        assert_eq!(failed.map(|n| n.title), Some("Your edit did not work"));
    }

    #[test]
    fn dead_tokens_are_told_apart_from_failures() {
        assert_eq!(Answer::apns(200, ""), Answer::Delivered);
        assert_eq!(
            Answer::apns(410, r#"{"reason":"Unregistered"}"#),
            Answer::Unregistered
        );
        assert_eq!(
            Answer::apns(400, r#"{"reason":"BadDeviceToken"}"#),
            Answer::Unregistered
        );
        assert_eq!(
            Answer::apns(429, r#"{"reason":"TooManyRequests"}"#),
            Answer::Failed
        );
        assert_eq!(Answer::apns(500, "not json"), Answer::Failed);
        assert_eq!(
            Answer::apns(403, r#"{"reason":"InvalidProviderToken"}"#),
            Answer::CredentialsRefused
        );
        assert_eq!(Answer::fcm(401, "{}"), Answer::CredentialsRefused);
        assert_eq!(Answer::fcm(403, "{}"), Answer::CredentialsRefused);
        let gone = r#"{"error":{"code":404,"status":"NOT_FOUND","details":[{"errorCode":"UNREGISTERED"}]}}"#;
        assert_eq!(Answer::fcm(404, gone), Answer::Unregistered);
        assert_eq!(Answer::fcm(503, gone), Answer::Failed);
        assert_eq!(Answer::fcm(200, "{}"), Answer::Delivered);
    }
}
