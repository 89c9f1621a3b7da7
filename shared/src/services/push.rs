//! Push notifications from the webhook outbox: an event that notifies (a finished edit or
//! repair, a purchase) gets one delivery per device its owner has registered when the event
//! is fanned out (or re-driven), each a target `push#<device>#<user>` beside the webhook
//! endpoints. The targets ride the same delivery queue and the same per-(event, target)
//! attempt claim, so a push is sent once per device however often the stream record or the
//! message is seen, and retried on the same schedule. A token the push service reports dead
//! unregisters the device (only while it still has that token) and is not retried.

use std::time::{Duration, Instant as StdInstant};

use crate::clock::{self, Instant};
use crate::domain::UserId;
use crate::domain::device::{DeviceId, Platform};
use crate::domain::push::{Answer, Notification, parse_target, target};
use crate::domain::webhooks::{DeliveryMessage, Payload};
use crate::error::Error;
use crate::services::delivery::{Hooks, Outcome, schedule_next};
use crate::store::schema::{DeviceItem, WebhookAttemptItem, WebhookEventItem, webhook_attempt_key};
use crate::store::webhook_deliveries::AttemptEnd;

/// A claim's lease beyond the push's own timeout.
const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// The event's notification and owner, `None` for an event that does not notify.
fn notification(event: &WebhookEventItem) -> Option<(Notification, UserId)> {
    let payload: Payload = serde_json::from_str(&event.body).ok()?;
    let n = Notification::of(&event.hook_pk, &payload)?;
    Some((n, payload.data.user_id))
}

/// The push targets of `event`: one per device its owner has registered now (none without a
/// push client, or for an event that does not notify).
pub async fn targets(hooks: Hooks<'_>, event: &WebhookEventItem) -> Result<Vec<String>, Error> {
    if hooks.pusher.is_none() {
        return Ok(Vec::new());
    }
    let Some((_, user)) = notification(event) else {
        return Ok(Vec::new());
    };
    let devices = hooks.store.devices(&user).await?;
    Ok(devices.iter().map(|(id, _)| target(&user, id)).collect())
}

/// The push targets of events by id (the stream's new events).
pub async fn targets_of(
    hooks: Hooks<'_>,
    event_ids: &[String],
) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::new();
    if hooks.pusher.is_none() {
        return Ok(out);
    }
    for id in event_ids {
        if let Some(event) = hooks.store.webhook_event(id).await? {
            for t in targets(hooks, &event).await? {
                out.push((id.clone(), t));
            }
        }
    }
    Ok(out)
}

/// What one push message is about, once every part of it still exists.
struct Resolved<'a> {
    pusher: &'a crate::adapters::push::Pusher,
    user: UserId,
    device_id: DeviceId,
    device: DeviceItem,
    event: WebhookEventItem,
    n: Notification,
}

/// The message's pusher, device and event; `None` when one is gone (nothing to send).
async fn resolve<'a>(
    hooks: Hooks<'a>,
    msg: &DeliveryMessage,
) -> Result<Option<Resolved<'a>>, Error> {
    let (Some(pusher), Some((user, device_id))) = (hooks.pusher, parse_target(&msg.endpoint_id))
    else {
        return Ok(None);
    };
    let Some(event) = hooks.store.webhook_event(&msg.event_id).await? else {
        return Ok(None);
    };
    let (Some((n, owner)), Some(device)) = (
        notification(&event),
        device(hooks, &user, &device_id).await?,
    ) else {
        return Ok(None);
    };
    Ok((owner == user).then_some(Resolved {
        pusher,
        user,
        device_id,
        device,
        event,
        n,
    }))
}

/// One push message: claims its attempt, sends once, records it, and schedules what follows
/// (a dead token unregisters the device instead). A duplicate does nothing.
pub async fn deliver(
    hooks: Hooks<'_>,
    msg: &DeliveryMessage,
    now: Instant,
) -> Result<Outcome, Error> {
    let Some(r) = resolve(hooks, msg).await? else {
        return Ok(Outcome::Skipped);
    };
    let lease =
        clock::format(now + Duration::from_secs(hooks.settings.timeout_secs) + LEASE_MARGIN);
    let now_s = clock::format(now);
    let expires = crate::domain::webhooks::expires_at(now);
    let Some(row) = hooks
        .store
        .claim_webhook_attempt(
            &r.event.hook_pk,
            &msg.endpoint_id,
            msg.attempt,
            &now_s,
            &lease,
            expires,
        )
        .await?
    else {
        tracing::info!(event_id = %msg.event_id, device = %r.device_id, attempt = msg.attempt, "push_attempt_duplicate");
        return Ok(Outcome::Skipped);
    };
    let started = StdInstant::now();
    let sent = r
        .pusher
        .send(r.device.platform, &r.device.token, &r.n)
        .await;
    let millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let answer = counted(r.device.platform, &sent);
    let error = sent.as_ref().err().map(|e| crate::error::chain(e));
    tracing::info!(event_id = %r.event.hook_pk, device = %r.device_id, platform = r.device.platform.as_str(), attempt = msg.attempt, answer = ?answer, millis, error, "push_attempt");
    let attempt = WebhookAttemptItem {
        hook_pk: r.event.hook_pk.clone(),
        hook_sk: webhook_attempt_key(msg.attempt, &msg.endpoint_id),
        endpoint_id: msg.endpoint_id.clone(),
        round: msg.attempt,
        at: now_s,
        status_code: None,
        error: Some(format!("{answer:?}")),
        millis,
        expires_at: Some(expires),
    };
    if let Err(e) = hooks.store.put_webhook_attempt(&attempt).await {
        tracing::warn!(error = %e, "push_attempt_log_failed");
    }
    finish(hooks, msg, &r, &row, answer, now).await
}

/// How one push ended, counted: `PushAttempts` by outcome, and a refusal of our credentials
/// (by the push service, or by Google's token endpoint before it) as a verification failure.
fn counted(platform: Platform, sent: &Result<Answer, crate::adapters::push::PushError>) -> Answer {
    use crate::adapters::metrics::{self, Verification};
    let answer = match sent {
        Ok(a) => *a,
        Err(e) if e.refuses_credentials() => Answer::CredentialsRefused,
        Err(_) => Answer::Failed,
    };
    let outcome = match answer {
        Answer::Delivered => "delivered",
        Answer::Unregistered => "unregistered",
        Answer::Failed | Answer::CredentialsRefused => "failed",
    };
    metrics::push_attempt(platform.as_str(), outcome);
    if answer == Answer::CredentialsRefused {
        metrics::verification_failed(match platform {
            Platform::Ios => Verification::Apns,
            Platform::Android => Verification::Fcm,
        });
    }
    answer
}

/// Ends the attempt: delivered, a dead token (the device unregistered, no retry), or the
/// next attempt on the webhook schedule.
async fn finish(
    hooks: Hooks<'_>,
    msg: &DeliveryMessage,
    r: &Resolved<'_>,
    row: &crate::store::schema::WebhookDeliveryItem,
    answer: Answer,
    now: Instant,
) -> Result<Outcome, Error> {
    let at = clock::format(now);
    let end = match answer {
        Answer::Unregistered => {
            let removed = hooks
                .store
                .delete_device(&r.user, &r.device_id, Some(&r.device.token))
                .await?;
            tracing::info!(user_id = %r.user, device = %r.device_id, removed, "push_device_unregistered");
            AttemptEnd::GaveUp { at }
        }
        Answer::Delivered => AttemptEnd::Delivered { at },
        Answer::Failed | Answer::CredentialsRefused => {
            schedule_next(hooks, msg, row, false, now).await?
        }
    };
    let event_id = &r.event.hook_pk;
    hooks
        .store
        .end_webhook_attempt(event_id, &msg.endpoint_id, msg.attempt, &end)
        .await?;
    if let AttemptEnd::Retry {
        next_due,
        queued: false,
    } = &end
    {
        hooks
            .store
            .set_webhook_event_due(event_id, Some(next_due), true)
            .await?;
    }
    Ok(match answer {
        Answer::Delivered => Outcome::Delivered,
        _ => Outcome::Failed,
    })
}

/// The device as registered now; `None` once unregistered.
async fn device(
    hooks: Hooks<'_>,
    user: &UserId,
    id: &DeviceId,
) -> Result<Option<DeviceItem>, Error> {
    Ok(hooks
        .store
        .devices(user)
        .await?
        .into_iter()
        .find(|(d, _)| d == id)
        .map(|(_, item)| item))
}
