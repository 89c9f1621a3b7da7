//! The fault harness's push class, in the webhook phase: every user of the run has an iPhone
//! and some an Android phone; some tokens are dead (APNs 410, FCM 404 `UNREGISTERED`); the
//! stand-in push services answer the first pushes 500 and hold others past the client's
//! timeout (delivered, though the sweeper never heard so), while deliverers are killed
//! mid-batch. At rest every notifying event reached every live device of its owner, every copy
//! of it under the event's collapse id (and, for APNs, one `apns-id`), so the phone shows one;
//! no push reached a dead token, and each dead device was unregistered.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use atelier_shared::domain::UserId;
use atelier_shared::domain::push::Notification;
use atelier_shared::domain::webhooks::Payload;
use atelier_shared::store::schema::WebhookEventItem;
use atelier_tests::Harness;
use atelier_tests::push::{PushStandIn, Received};
use http::StatusCode;
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::json;

use super::Tally;

/// The sweeper's push timeout in the run, and how long a held push is held: twice the
/// timeout, so the push always lands after the client gave up, yet a held push costs its
/// batch well under a second (the product's 5 s would cost 5 s each).
pub const PUSH_TIMEOUT: Duration = Duration::from_millis(500);
const PUSH_HELD: Duration = Duration::from_millis(1_000);

/// One registered phone.
struct Device {
    user: UserId,
    id: String,
    token: String,
    dead: bool,
}

/// The push stand-in and the phones of the run.
pub struct PushFaults {
    pub stand_in: PushStandIn,
    devices: Vec<Device>,
}

impl PushFaults {
    /// Registers an iPhone for every user and an Android phone for about half; the first token
    /// and about one in ten of the others are dead.
    pub async fn start(
        stand_in: PushStandIn,
        h: &Harness,
        users: &[UserId],
        rng: &mut StdRng,
        tally: &mut Tally,
    ) -> PushFaults {
        let mut devices = Vec::new();
        for (i, user) in users.iter().enumerate() {
            devices.push((
                user,
                format!("iphone-{i}"),
                "ios",
                format!("{i:08x}{}", "ef".repeat(28)),
            ));
            if rng.gen_bool(0.5) {
                devices.push((
                    user,
                    format!("pixel-{i}"),
                    "android",
                    format!("fcm:chaos-{i}"),
                ));
            }
        }
        let mut out = Vec::new();
        for (user, id, platform, token) in devices {
            let put = h
                .put_device(user, &id, &json!({ "platform": platform, "token": token }))
                .await;
            assert_eq!(put.status, StatusCode::CREATED, "{put:?}");
            // The first token is always dead: removing a dead device is the sweeper's, and the
            // IAM check must see that grant used whatever the seed draws (the draw is still made).
            let dead = rng.gen_bool(0.1) || out.is_empty();
            if dead {
                stand_in.invalidate(&token);
                tally.add("push_devices_dead");
            }
            tally.add("push_devices");
            out.push(Device {
                user: user.clone(),
                id,
                token,
                dead,
            });
        }
        PushFaults {
            stand_in,
            devices: out,
        }
    }

    /// The push services' trouble for the webhook phase: the first pushes answered 500, then
    /// some held past the client's timeout.
    pub fn trouble(&self, rng: &mut StdRng, tally: &mut Tally) {
        let failing = rng.gen_range(3..12);
        self.stand_in.fail_next(failing);
        tally.add_n("push_answered_500", failing.into());
        let slow = rng.gen_range(1..4);
        // Past the client's timeout: the push goes out and the sweeper hears a timeout.
        self.stand_in.slow_next(slow, PUSH_HELD);
        tally.add_n("push_held_past_timeout", slow.into());
    }

    /// (event, device) pairs still to happen: a live device that has not received an event
    /// of its owner yet, a dead one not unregistered yet.
    pub async fn missing(&self, h: &Harness, events: &[WebhookEventItem]) -> Vec<(String, String)> {
        let delivered = self.delivered();
        let mut out = Vec::new();
        for (event, owner) in notifying(events) {
            for d in self.devices.iter().filter(|d| d.user == owner) {
                let pending = if d.dead {
                    h.device_ids(&d.user).await.contains(&d.id)
                } else {
                    !delivered.contains_key(&(event.clone(), d.token.clone()))
                };
                if pending {
                    out.push((event.clone(), d.id.clone()));
                }
            }
        }
        out
    }

    /// Pushes as delivered, by (event id, token).
    fn delivered(&self) -> BTreeMap<(String, String), Vec<Received>> {
        let mut out: BTreeMap<(String, String), Vec<Received>> = BTreeMap::new();
        for p in self.stand_in.delivered() {
            let event = p.body["event_id"]
                .as_str()
                .or_else(|| p.body["message"]["data"]["event_id"].as_str())
                .unwrap_or_default()
                .to_owned();
            out.entry((event, p.token.clone())).or_default().push(p);
        }
        out
    }

    /// One push per device per event as the phone shows it: each live device got each of its
    /// owner's notifying events, every copy under the event's collapse id (and one `apns-id`);
    /// nothing reached a dead token, and a dead device that was pushed to is unregistered.
    pub async fn checks(
        &self,
        h: &Harness,
        events: &[WebhookEventItem],
        tally: &mut Tally,
        violations: &mut Vec<String>,
    ) {
        for (event, device) in self.missing(h, events).await {
            violations.push(format!("push: {event} to {device} never settled (not delivered, or a dead token not unregistered)"));
        }
        let delivered = self.delivered();
        let notifying = notifying(events);
        tally.add_n("push_notifying_events", notifying.len() as u64);
        let owners: BTreeMap<String, UserId> = notifying.iter().cloned().collect();
        let pushed_users: BTreeSet<UserId> =
            notifying.into_iter().map(|(_, owner)| owner).collect();
        for ((event, token), copies) in &delivered {
            let device = self.devices.iter().find(|d| d.token == *token);
            if device.map(|d| &d.user) != owners.get(event) {
                violations.push(format!(
                    "push: {event} reached {token}, not its owner's phone"
                ));
            }
            let collapse: BTreeSet<String> = copies
                .iter()
                .map(|p| {
                    p.headers
                        .get("apns-collapse-id")
                        .cloned()
                        .or_else(|| {
                            p.body["message"]["android"]["collapse_key"]
                                .as_str()
                                .map(str::to_owned)
                        })
                        .unwrap_or_default()
                })
                .collect();
            let ids: BTreeSet<Option<&String>> =
                copies.iter().map(|p| p.headers.get("apns-id")).collect();
            if collapse != BTreeSet::from([event.clone()]) || ids.len() != 1 {
                violations.push(format!(
                    "push: {event} to {token} under collapse ids {collapse:?}, apns-ids {ids:?}"
                ));
            }
            if copies.len() > 1 {
                tally.add_n("push_duplicates_collapsed", copies.len() as u64 - 1);
            }
        }
        tally.add_n(
            "pushes_delivered",
            delivered.values().map(|c| c.len() as u64).sum(),
        );
        for d in &self.devices {
            let registered = h.device_ids(&d.user).await.contains(&d.id);
            if d.dead && delivered.keys().any(|(_, t)| *t == d.token) {
                violations.push(format!("push: the dead token of {} got a push", d.id));
            }
            if d.dead && pushed_users.contains(&d.user) && registered {
                violations.push(format!(
                    "push: {} has a dead token and is still registered",
                    d.id
                ));
            }
            if !d.dead && !registered {
                violations.push(format!("push: {} is live but was unregistered", d.id));
            }
        }
    }
}

/// The events that notify their owner's phones: (event id, owner).
fn notifying(events: &[WebhookEventItem]) -> Vec<(String, UserId)> {
    events
        .iter()
        .filter_map(|e| {
            let payload: Payload = serde_json::from_str(&e.body).ok()?;
            Notification::of(&e.hook_pk, &payload)?;
            Some((e.hook_pk.clone(), payload.data.user_id))
        })
        .collect()
}
