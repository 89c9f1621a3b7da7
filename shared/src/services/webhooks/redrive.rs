//! The safety net, in the sweeper's minute ([`redrive_due`]): every due event's attempts that
//! are due and unclaimed enqueued again, and the event moved to its next look.

use std::time::{Duration, Instant as StdInstant};

use futures::StreamExt;

use crate::clock::{self, Instant};
use crate::domain::webhooks::{DeliveryMessage, REDRIVE_GRACE};
use crate::error::Error;
use crate::services::delivery::{Hooks, active_endpoints};
use crate::store::schema::{WebhookDeliveryItem, WebhookEventItem};

/// Due events one query of [`redrive_due`] reads.
pub const BATCH: i32 = 100;
/// Due events the safety net re-drives at once: each is a few sequential calls (its devices,
/// its delivery rows, the requeues, the send, its next look), so a backlog of a thousand took
/// minutes one after another.
const REDRIVE_AT_ONCE: usize = 8;

/// What one call of [`redrive_due`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RedriveSummary {
    /// Due events looked at.
    pub events: u64,
    /// Attempts enqueued again.
    pub enqueued: u64,
    /// Events whose every delivery ended (they leave the due index).
    pub closed: u64,
    /// Seconds since the oldest looked-at event that still has an endpoint to serve was made.
    pub oldest_pending_secs: u64,
}

impl RedriveSummary {
    fn add(&mut self, other: RedriveSummary) {
        self.events += other.events;
        self.enqueued += other.enqueued;
        self.closed += other.closed;
        self.oldest_pending_secs = self.oldest_pending_secs.max(other.oldest_pending_secs);
    }
}

/// The safety net, in the sweeper's minute: every due event (oldest due first, within
/// `budget`): enqueues each endpoint's attempt that is due and unclaimed, and moves the event
/// to its next look, or closes it when every delivery ended. It never POSTs.
pub async fn redrive_due(
    hooks: Hooks<'_>,
    now: Instant,
    budget: Duration,
) -> Result<RedriveSummary, Error> {
    let started = StdInstant::now();
    let endpoints: Vec<String> = active_endpoints(hooks.store)
        .await?
        .into_iter()
        .map(|e| e.hook_sk)
        .collect();
    let mut summary = RedriveSummary::default();
    let mut seen = std::collections::HashSet::new();
    while started.elapsed() <= budget {
        let due = hooks
            .store
            .webhook_events_due(&clock::format(now), BATCH)
            .await?;
        let fresh: Vec<_> = due
            .into_iter()
            .filter(|e| seen.insert(e.hook_pk.clone()))
            .collect();
        if fresh.is_empty() {
            break;
        }
        let events = futures::stream::iter(fresh)
            .take_while(|_| std::future::ready(started.elapsed() <= budget))
            .map(|event| {
                let endpoints = &endpoints;
                async move { redrive_event(hooks, &event, endpoints, now).await }
            })
            .buffer_unordered(REDRIVE_AT_ONCE)
            .collect::<Vec<_>>()
            .await;
        // Every event of the page had its turn; the first error still fails the sweep.
        for one in events {
            summary.add(one?);
        }
    }
    crate::adapters::metrics::webhook_oldest_pending(summary.oldest_pending_secs);
    Ok(summary)
}

/// One event of [`redrive_due`]: its targets are the active endpoints and the push targets
/// of its owner's devices.
async fn redrive_event(
    hooks: Hooks<'_>,
    event: &WebhookEventItem,
    endpoints: &[String],
    now: Instant,
) -> Result<RedriveSummary, Error> {
    let mut summary = RedriveSummary {
        events: 1,
        ..RedriveSummary::default()
    };
    let mut targets = endpoints.to_vec();
    targets.extend(crate::services::push::targets(hooks, event).await?);
    let rows = hooks.store.webhook_deliveries(&event.hook_pk).await?;
    let now_s = clock::format(now);
    let mut messages = Vec::new();
    let mut next: Option<Instant> = None;
    for ep in &targets {
        let row = rows.iter().find(|r| r.endpoint_id == *ep);
        let due = match row {
            Some(r) if r.ended() => continue,
            Some(r) => row_due(r).unwrap_or(now),
            None => now,
        };
        if due > now {
            next = Some(next.map_or(due, |n| n.min(due)));
            continue;
        }
        let attempts = row.map_or(0, |r| r.attempts);
        let take = match row {
            Some(_) => {
                hooks
                    .store
                    .requeue_webhook_delivery(&event.hook_pk, ep, attempts, &now_s)
                    .await?
            }
            None => true,
        };
        if take {
            messages.push((
                DeliveryMessage {
                    event_id: event.hook_pk.clone(),
                    endpoint_id: ep.clone(),
                    attempt: attempts + 1,
                },
                0,
            ));
        }
        let again = now + REDRIVE_GRACE;
        next = Some(next.map_or(again, |n| n.min(again)));
    }
    hooks.queue.send(&messages).await?;
    summary.enqueued += messages.len() as u64;
    if next.is_some() {
        let age = clock::parse(&event.created_at).map_or(0, |t| (now - t).whole_seconds());
        summary.oldest_pending_secs = summary
            .oldest_pending_secs
            .max(u64::try_from(age).unwrap_or(0));
    } else {
        summary.closed += 1;
    }
    let next = next.map(clock::format);
    hooks
        .store
        .set_webhook_event_due(&event.hook_pk, next.as_deref(), false)
        .await?;
    Ok(summary)
}

/// When a row's next attempt is overdue: its due time, plus the grace when a message (or a
/// live claim) should have made it by then.
fn row_due(row: &WebhookDeliveryItem) -> Option<Instant> {
    let due = clock::parse(row.next_due.as_deref()?)?;
    Some(if row.queued { due + REDRIVE_GRACE } else { due })
}
