//! The webhook delivery queue as the fault harness's rounds drive it: what it holds (by
//! GetQueueAttributes), the messages the harness keeps in flight for a dead or failed
//! deliverer, and their return on the rounds' clock instead of the queue's wall-clock
//! visibility timeout.

use std::time::Duration;

use atelier_shared::clock::Instant;
use atelier_shared::domain::webhooks::SCHEDULE_SECS;
use atelier_tests::Harness;
use aws_sdk_sqs::types::QueueAttributeName as Attr;

use super::inject;

/// The longest queue delay a live message waits before the rounds' clock has to move: the
/// first retry (5 s; a busy endpoint's copy waits 2 s). A longer one (the second retry's
/// 300 s) is re-driven by the sweeper's round once the clock passes its due time.
pub const SHORT_DELAY_SECS: i32 = SCHEDULE_SECS[0] as i32;

/// The queue's three counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Depth {
    pub visible: u64,
    pub in_flight: u64,
    pub delayed: u64,
}

impl Depth {
    /// The counts for a round's line, with how many of those in flight the harness holds.
    pub fn describe(&self, held: u64) -> String {
        format!(
            "{} visible, {} in flight ({held} held by the harness), {} delayed",
            self.visible, self.in_flight, self.delayed
        )
    }
}

/// The delivery queue's counts (through the clean clients; a harness error after retries).
pub async fn depth(h: &Harness) -> Depth {
    let attrs = inject("reading the delivery queue's counts", || {
        h.clients
            .sqs
            .get_queue_attributes()
            .queue_url(h.app.hooks_queue.url())
            .attribute_names(Attr::ApproximateNumberOfMessages)
            .attribute_names(Attr::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(Attr::ApproximateNumberOfMessagesDelayed)
            .send()
    })
    .await
    .attributes
    .unwrap_or_default();
    // A count missing or unreadable is a harness error, never 0: read as 0 it would end a
    // drain with messages still deliverable.
    let count = |a: Attr| {
        let v = attrs.get(&a).and_then(|v| v.parse().ok());
        v.unwrap_or_else(|| panic!("the delivery queue's {a} unreadable: {attrs:?}"))
    };
    Depth {
        visible: count(Attr::ApproximateNumberOfMessages),
        in_flight: count(Attr::ApproximateNumberOfMessagesNotVisible),
        delayed: count(Attr::ApproximateNumberOfMessagesDelayed),
    }
}

/// The queue's visibility timeout: how long a received message stays hidden.
pub async fn visibility(h: &Harness) -> Duration {
    let attrs = inject("reading the delivery queue's visibility timeout", || {
        h.clients
            .sqs
            .get_queue_attributes()
            .queue_url(h.app.hooks_queue.url())
            .attribute_names(Attr::VisibilityTimeout)
            .send()
    })
    .await
    .attributes
    .unwrap_or_default();
    let secs = attrs
        .get(&Attr::VisibilityTimeout)
        .and_then(|v| v.parse().ok());
    Duration::from_secs(secs.unwrap_or_else(|| panic!("no visibility timeout: {attrs:?}")))
}

/// Messages received and neither deleted nor returned: a killed batch's (the deliverer died
/// before deleting any) and a failed message's (a batch-item failure). On AWS they come back
/// once the visibility timeout runs out; here they come back when the rounds' clock passes
/// it, so no round waits on the wall clock for them and a seed replays when they return.
pub struct Held {
    visibility: Duration,
    /// (when it is visible again on the rounds' clock, receipt handle)
    messages: Vec<(Instant, String)>,
    /// Delayed messages found longer than [`SHORT_DELAY_SECS`]: not waited for.
    pub long_delayed: u64,
}

impl Held {
    pub fn new(visibility: Duration) -> Held {
        Held {
            visibility,
            messages: Vec::new(),
            long_delayed: 0,
        }
    }

    pub fn len(&self) -> u64 {
        self.messages.len() as u64
    }

    /// Keeps `handles`, received at `at`, in flight until the rounds' clock passes `at` + the
    /// visibility timeout, hidden for SQS's longest visibility (12 h) meanwhile: a round
    /// longer than the timeout in wall time (a large run) would otherwise bring them back
    /// first, at a point that depends on the machine's speed. Returns how many could not be
    /// hidden (they come back at the queue's own timeout, as before).
    pub async fn hold(&mut self, h: &Harness, at: Instant, handles: Vec<String>) -> u64 {
        let url = h.app.hooks_queue.url();
        let hidden = futures::future::join_all(handles.iter().map(|handle| {
            h.clients
                .sqs
                .change_message_visibility()
                .queue_url(url)
                .receipt_handle(handle)
                .visibility_timeout(43_200)
                .send()
        }))
        .await;
        let back = at + self.visibility;
        self.messages.extend(handles.into_iter().map(|h| (back, h)));
        hidden.iter().filter(|r| r.is_err()).count() as u64
    }

    /// Makes visible again every held message whose visibility ran out by `at` (visibility
    /// 0, as the queue does at the timeout). A handle the queue no longer knows (its message
    /// came back by wall time and was received again) is already back: its error is the
    /// expected answer, and the count says how many.
    pub async fn release(&mut self, h: &Harness, at: Instant) -> (u64, u64) {
        let (due, kept): (Vec<_>, Vec<_>) = self.messages.drain(..).partition(|(t, _)| *t <= at);
        self.messages = kept;
        let url = h.app.hooks_queue.url();
        let results = futures::future::join_all(due.iter().map(|(_, handle)| {
            h.clients
                .sqs
                .change_message_visibility()
                .queue_url(url)
                .receipt_handle(handle)
                .visibility_timeout(0)
                .send()
        }))
        .await;
        let stale = results.iter().filter(|r| r.is_err()).count() as u64;
        (results.len() as u64 - stale, stale)
    }

    /// How long the next receive should wait, or `None` when nothing on the queue can be
    /// delivered at this clock: nothing visible, nothing in flight but what this harness
    /// holds, nothing delayed but long delays.
    pub fn wait_for(&mut self, d: Depth) -> Option<i32> {
        // A long-delayed message that surfaced (by wall time) is no longer delayed.
        self.long_delayed = self.long_delayed.min(d.delayed);
        if d.visible > 0 {
            Some(0)
        } else if d.delayed > self.long_delayed {
            // Returns as soon as one is visible: the wait ends on the message.
            Some(SHORT_DELAY_SECS)
        } else {
            None
        }
    }
}
