//! What webhook and push deliveries share: the delivery context, how one message ended, and
//! what follows a failed attempt (the retry schedule). `services::webhooks` and
//! `services::push` both build on it; neither imports the other's internals through it.

use std::time::Duration;

use crate::adapters::webhooks::client::WebhookClient;
use crate::adapters::webhooks::queue::DeliveryQueue;
use crate::clock::{self, Instant};
use crate::config::WebhookSettings;
use crate::domain::webhooks::{DeliveryMessage, NextAttempt};
use crate::error::Error;
use crate::store::Store;
use crate::store::schema::{WebhookDeliveryItem, WebhookEndpointItem};
use crate::store::webhook_deliveries::AttemptEnd;

/// What delivery needs: the table, the HTTP client, the settings and the delivery queue.
#[derive(Debug, Clone, Copy)]
pub struct Hooks<'a> {
    pub store: &'a Store,
    pub http: &'a WebhookClient,
    pub settings: &'a WebhookSettings,
    pub queue: &'a DeliveryQueue,
    /// The push services' client; `None`: no push is derived (push not configured).
    pub pusher: Option<&'a crate::adapters::push::Pusher>,
}

/// How one delivery message ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The endpoint answered 2xx.
    Delivered,
    /// It did not; the next attempt is scheduled (or the schedule is over).
    Failed,
    /// Every slot of the endpoint was held: the message was sent again a little later.
    Busy,
    /// Nothing to do: the attempt was already claimed or made, or the endpoint or event is
    /// gone or disabled.
    Skipped,
}

/// What ends an attempt: delivered; a retry on the schedule (a delayed message sent now when
/// the wait fits a queue's delay, else a due time the sweeper's round honours); or the end
/// of the schedule.
pub(crate) async fn schedule_next(
    hooks: Hooks<'_>,
    msg: &DeliveryMessage,
    row: &WebhookDeliveryItem,
    ok: bool,
    now: Instant,
) -> Result<AttemptEnd, Error> {
    let at = clock::format(now);
    if ok {
        return Ok(AttemptEnd::Delivered { at });
    }
    let made = msg.attempt.saturating_sub(row.run_start);
    Ok(match NextAttempt::after(&hooks.settings.retry, made) {
        NextAttempt::GiveUp => AttemptEnd::GaveUp { at },
        NextAttempt::Recorded { after_secs } => AttemptEnd::Retry {
            next_due: clock::format(now + Duration::from_secs(after_secs)),
            queued: false,
        },
        NextAttempt::Queued { delay_secs } => {
            let next = DeliveryMessage {
                attempt: msg.attempt + 1,
                ..msg.clone()
            };
            // Sent before the row says so: if the send fails, the row still shows the
            // attempt unmade and the sweeper's round re-drives it after the grace.
            hooks.queue.send(&[(next, delay_secs)]).await?;
            AttemptEnd::Retry {
                next_due: clock::format(now + Duration::from_secs(delay_secs)),
                queued: true,
            }
        }
    })
}

/// The active endpoints.
pub(crate) async fn active_endpoints(store: &Store) -> Result<Vec<WebhookEndpointItem>, Error> {
    Ok(store
        .webhook_endpoints()
        .await?
        .into_iter()
        .filter(|e| e.disabled_at.is_none())
        .collect())
}
