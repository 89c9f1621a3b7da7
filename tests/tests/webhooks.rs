//! Signed webhooks on the local stack: the outbox row commits with the job's end, a round of
//! delivery POSTs it signed (verified by our verifier and by the official Standard Webhooks
//! library), failures are retried with growing waits, and the receiver never touches the job.
//! Each test has a stack of its own (its own endpoints); the clock is moved, never slept.

use std::time::Duration;

use atelier_model_server::samples;
use atelier_shared::adapters::webhooks::PrivateAddresses;
use atelier_shared::adapters::webhooks::client::WebhookClient;
use atelier_shared::clock::{self, Instant};
use atelier_shared::config::WebhookSettings;
use atelier_shared::domain::FailureCode;
use atelier_shared::domain::webhooks::REDRIVE_GRACE;
use atelier_shared::domain::webhooks::sign::{self, Secret};
use atelier_shared::domain::webhooks::{EventType, Payload, RETENTION};
use atelier_shared::services::webhooks;
use atelier_shared::store::schema::{
    WebhookAttemptItem, WebhookEndpointItem, WebhookEventItem, attr,
};
use atelier_tests::receiver::{Delivery, Receiver, official_verify};
use atelier_tests::{Harness, StandIn};
use http::StatusCode;
use serde_json::json;

fn pet() -> serde_json::Value {
    json!({ "style": "needle_felt", "target": "pet" })
}

async fn drain(h: &Harness, model: &StandIn) {
    let processor = h.processor(model);
    while atelier_local::poller::poll_once(
        &processor,
        &h.clients.sqs,
        &h.app.config.resources.queue_url,
        0,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
        > 0
    {}
}

/// What one [`deliver`] did: events attempted, POSTs answered 2xx and not.
#[derive(Debug, Default)]
struct DeliverySummary {
    events: u64,
    delivered: u64,
    failed: u64,
}

/// Delivery as of `now`, as the local stack runs it: the stream's fan-out of events never
/// attempted, the sweeper's safety net, then every message visible on the delivery queue.
async fn deliver(h: &Harness, now: Instant) -> DeliverySummary {
    deliver_with(h, &h.app.config.webhooks, now).await
}

/// [`deliver`] with `settings` (a deployment's: private addresses refused).
async fn deliver_with(h: &Harness, settings: &WebhookSettings, now: Instant) -> DeliverySummary {
    let http = WebhookClient::new(settings.private_addresses).unwrap_or_else(|e| panic!("{e}"));
    let hooks = webhooks::Hooks {
        store: &h.app.store,
        http: &http,
        settings,
        queue: &h.app.hooks_queue,
        pusher: None,
    };
    let far = clock::format(now + Duration::from_secs(86_400 * 30));
    let pending = h
        .app
        .store
        .webhook_events_due(&far, 1000)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut new = Vec::new();
    for e in pending {
        let rows = h
            .app
            .store
            .webhook_deliveries(&e.hook_pk)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if rows.is_empty() && e.rounds == 0 {
            new.push(e.hook_pk);
        }
    }
    webhooks::fan_out(hooks, &new)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    webhooks::redrive_due(hooks, now, Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut summary = DeliverySummary::default();
    let mut events = std::collections::HashSet::new();
    for m in h.take_hook_messages().await {
        match webhooks::deliver(hooks, &m, now)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
        {
            webhooks::Outcome::Delivered => summary.delivered += 1,
            webhooks::Outcome::Failed => summary.failed += 1,
            _ => continue,
        }
        events.insert(m.event_id);
    }
    summary.events = events.len() as u64;
    summary
}

/// An endpoint for `url`: the endpoint and its secret.
async fn add(h: &Harness, url: &str) -> (WebhookEndpointItem, String) {
    webhooks::add_endpoint(&h.app.store, &h.app.config.webhooks, url, clock::now())
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// An endpoint for `receiver`; its secret.
async fn endpoint(h: &Harness, receiver: &Receiver) -> String {
    add(h, &receiver.url).await.1
}

/// `n` canceled edits of `user`, so `n` events due now; their ids, oldest first.
async fn canceled_events(
    h: &Harness,
    user: &atelier_shared::domain::UserId,
    n: usize,
) -> Vec<String> {
    let mut events = Vec::new();
    for i in 0..n {
        let job = h
            .submit_photo(user, &format!("k{i}"), samples::single_pet(), pet())
            .await;
        assert_eq!(h.cancel(user, &job).await.status, StatusCode::OK);
        events.push(format!("evt_{job}_canceled"));
    }
    events
}

async fn endpoints(h: &Harness) -> Vec<WebhookEndpointItem> {
    h.app
        .store
        .webhook_endpoints()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn rows(h: &Harness, event_id: &str) -> (Option<WebhookEventItem>, Vec<WebhookAttemptItem>) {
    h.app
        .store
        .webhook_event_rows(event_id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn payload(d: &Delivery) -> Payload {
    serde_json::from_str(&d.body).unwrap_or_else(|e| panic!("{e}: {}", d.body))
}

#[tokio::test]
async fn a_delivered_edit_sends_one_signed_edit_succeeded_that_the_official_library_verifies() {
    let h = Harness::isolated(|_| {}).await;
    let model = StandIn::start().await;
    let receiver = Receiver::start(&[], Duration::ZERO).await;
    let secret = endpoint(&h, &receiver).await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    drain(&h, &model).await;

    let first = deliver(&h, clock::now()).await;
    let again = deliver(&h, clock::now() + Duration::from_secs(3600)).await;

    assert_eq!(h.job(&user, &id).await.str("status"), "succeeded");
    assert_eq!((first.events, first.delivered), (1, 1), "{first:?}");
    assert_eq!(again.events, 0, "a delivered event is not sent again");
    let got = receiver.deliveries();
    assert_eq!(got.len(), 1);
    let d = &got[0];
    let body = payload(d);
    assert_eq!(body.kind, EventType::EditSucceeded);
    assert_eq!(body.data.job_id.as_deref(), Some(id.as_str()));
    assert_eq!(body.data.user_id, user);
    assert!(!d.body.contains("http"), "no URL in a payload: {}", d.body);
    let parsed = Secret::parse(&secret).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        sign::verify(
            &parsed,
            &d.headers,
            d.body.as_bytes(),
            clock::now().unix_timestamp()
        ),
        Ok(())
    );
    let mut tampered = d.clone();
    tampered.body = tampered.body.replace("succeeded", "failed");
    let other = Secret::generate().expose();
    let verdicts = official_verify(&[(&secret, d), (&secret, &tampered), (&other, d)]).await;
    assert_eq!(verdicts[0], json!({ "ok": true, "type": "edit.succeeded" }));
    assert_eq!(
        verdicts[1]["ok"],
        json!(false),
        "tampered body: {:?}",
        verdicts[1]
    );
    assert_eq!(
        verdicts[2]["ok"],
        json!(false),
        "wrong secret: {:?}",
        verdicts[2]
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_receiver_answering_500_twice_is_retried_on_svix_schedule_then_served_once() {
    let h = Harness::isolated(|_| {}).await;
    let model = StandIn::start().await;
    let receiver = Receiver::start(&[500, 500], Duration::ZERO).await;
    endpoint(&h, &receiver).await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    drain(&h, &model).await;
    let event_id = format!("evt_{id}_succeeded");

    let r1 = deliver(&h, clock::now()).await;
    // The second attempt rides the queue's 5 s delay, in real time.
    let mut r2 = DeliverySummary::default();
    // A call stamps its attempts with the time it started at, before its redrive and its
    // receive: the stamp may precede the message's arrival by up to the call's own length.
    let mut took = 0.0;
    for _ in 0..40 {
        let started = std::time::Instant::now();
        r2 = deliver(&h, clock::now()).await;
        took = started.elapsed().as_secs_f64();
        if r2.failed + r2.delivered > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let (_, attempts) = rows(&h, &event_id).await;
    let rows_now = h
        .app
        .store
        .webhook_deliveries(&event_id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let second = attempts
        .get(1)
        .and_then(|a| clock::parse(&a.at))
        .unwrap_or_else(|| panic!("{attempts:?}"));
    let third_due = second + Duration::from_secs(300);
    let early = deliver(&h, third_due - Duration::from_secs(1)).await;
    let r3 = deliver(&h, third_due + REDRIVE_GRACE).await;
    let done = deliver(&h, third_due + Duration::from_secs(86_400)).await;

    assert_eq!(
        (r1.failed, r2.failed, r3.delivered),
        (1, 1, 1),
        "{r1:?} {r2:?} {r3:?}"
    );
    assert_eq!(early.events, 0, "not before the wait");
    assert_eq!(done.events, 0);
    let first = clock::parse(&attempts[0].at).unwrap_or_else(|| panic!("{attempts:?}"));
    let gap = (second - first).as_seconds_f64();
    println!(
        "attempt 1 -> 2: {gap:.1} s (schedule: 5 s; stamp up to {took:.2} s early); attempt 3 due 300 s after attempt 2"
    );
    assert!(
        (5.0 - took..9.0).contains(&gap),
        "the second attempt 5 s after the first: {gap} s (its call took {took} s)"
    );
    assert_eq!(
        rows_now[0].next_due.as_deref(),
        Some(clock::format(third_due).as_str()),
        "the third attempt is due 5 min after the second"
    );
    let got = receiver.deliveries();
    assert_eq!(got.len(), 3);
    assert!(
        got.iter().all(|d| d.headers.id == event_id),
        "one webhook-id on every retry"
    );
    let (event, attempts) = rows(&h, &event_id).await;
    let statuses: Vec<_> = attempts.iter().map(|a| a.status_code).collect();
    assert_eq!(statuses, [Some(500), Some(500), Some(200)]);
    assert!(
        event.is_some_and(|e| e.due_state.is_none()),
        "delivered: no longer due"
    );
    assert_eq!(h.job(&user, &id).await.str("status"), "succeeded");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_slow_or_dead_receiver_never_changes_the_job_nor_its_charge() {
    let h = Harness::isolated(|c| c.max_in_flight = 3).await;
    let model = StandIn::start().await;
    let slow = Receiver::start(&[], Duration::from_secs(15)).await;
    endpoint(&h, &slow).await;
    add(&h, "http://127.0.0.1:9/dead").await;
    let user = h.user();
    let before = h.balance(&user).await;
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    drain(&h, &model).await;
    // The job path finished without contacting any receiver: it cannot wait for one.
    assert_eq!(h.job(&user, &id).await.str("status"), "succeeded");
    assert!(slow.deliveries().is_empty(), "no POST from the job path");

    let round = deliver(&h, clock::now()).await;

    assert_eq!(h.job(&user, &id).await.str("status"), "succeeded");
    assert_eq!(round.failed, 2, "timeout and refused connection: {round:?}");
    let charged = before - h.balance(&user).await;
    assert!(charged > 0);
    assert_eq!(
        h.ledger(&user)
            .await
            .iter()
            .filter(|r| r.amount.get() < 0)
            .count(),
        1,
        "charged once"
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_canceled_edit_sends_edit_canceled() {
    let h = Harness::isolated(|_| {}).await;
    let receiver = Receiver::start(&[], Duration::ZERO).await;
    endpoint(&h, &receiver).await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    assert_eq!(h.cancel(&user, &id).await.status, StatusCode::OK);

    deliver(&h, clock::now()).await;

    let got = receiver.deliveries();
    assert_eq!(got.len(), 1);
    let body = payload(&got[0]);
    assert_eq!(body.kind, EventType::EditCanceled);
    assert_eq!(
        body.data.failure_code.as_deref(),
        Some(FailureCode::Canceled.as_str())
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn events_written_before_an_endpoint_exists_are_kept_and_replayed_on_demand() {
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    assert_eq!(h.cancel(&user, &id).await.status, StatusCode::OK);
    let event_id = format!("evt_{id}_canceled");
    let none = deliver(&h, clock::now()).await;
    let receiver = Receiver::start(&[], Duration::ZERO).await;
    endpoint(&h, &receiver).await;

    let replayed = h
        .app
        .store
        .replay_webhook_event(&event_id, &clock::format(clock::now()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    deliver(&h, clock::now() + Duration::from_secs(1)).await;

    assert_eq!(
        (none.events, none.delivered),
        (0, 0),
        "no endpoint: nothing sent"
    );
    assert!(replayed);
    assert_eq!(receiver.deliveries().len(), 1);
    assert_eq!(receiver.deliveries()[0].headers.id, event_id);
}

#[tokio::test]
async fn a_purchase_sends_credits_purchased_with_its_credits_and_pack() {
    let stripe = atelier_tests::stripe::StripeStandIn::start().await;
    let h = Harness::isolated(|_| {}).await.with_stripe(&stripe);
    let receiver = Receiver::start(&[], Duration::ZERO).await;
    endpoint(&h, &receiver).await;
    let user = h.user();
    let before = h.balance(&user).await;
    h.buy(&stripe, &user, "starter").await;

    deliver(&h, clock::now()).await;

    let got = receiver.deliveries();
    assert_eq!(got.len(), 1);
    let body = payload(&got[0]);
    assert_eq!(body.kind, EventType::CreditsPurchased);
    assert_eq!(body.data.user_id, user);
    assert_eq!(body.data.pack.as_deref(), Some("starter"));
    assert_eq!(Some(h.balance(&user).await - before), body.data.credits);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn the_operator_adds_rotates_lists_and_removes_an_endpoint_and_reads_an_events_log() {
    let h = Harness::isolated(|_| {}).await;
    let env: Vec<(&str, String)> = h.app.config.resources.to_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let receiver = Receiver::start(&[503], Duration::ZERO).await;

    let refused =
        atelier_tests::admin(&["webhook", "add", "http://hooks.example.com/"], &env).await;
    let added = atelier_tests::admin(&["webhook", "add", &receiver.url], &env).await;
    let id = added.json()["id"].as_str().unwrap_or_default().to_owned();
    let first = added.json()["secret"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let rotated = atelier_tests::admin(&["webhook", "rotate", &id], &env).await;
    let second = rotated.json()["secret"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let user = h.user();
    let job = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    assert_eq!(h.cancel(&user, &job).await.status, StatusCode::OK);
    deliver(&h, clock::now()).await;
    let event_id = format!("evt_{job}_canceled");
    let log = atelier_tests::admin(&["webhook", "deliveries", &event_id], &env).await;
    let list = atelier_tests::admin(&["webhook", "list"], &env).await;
    let removed = atelier_tests::admin(&["webhook", "remove", &id], &env).await;
    let after = atelier_tests::admin(&["webhook", "list"], &env).await;

    assert_eq!(refused.code, Some(2), "plain http elsewhere: {refused:?}");
    assert!(first.starts_with("whsec_") && second.starts_with("whsec_") && first != second);
    let d = &receiver.deliveries()[0];
    assert_eq!(
        d.headers.signature.split(' ').count(),
        2,
        "both secrets sign for 24 h"
    );
    for secret in [&first, &second] {
        let s = Secret::parse(secret).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            sign::verify(
                &s,
                &d.headers,
                d.body.as_bytes(),
                clock::now().unix_timestamp()
            ),
            Ok(())
        );
    }
    let log = log.json();
    assert_eq!(log["type"], json!("edit.canceled"));
    assert_eq!(log["attempts"][0]["status"], json!(503));
    assert_eq!(log["pending"], json!(true), "a 503 is retried later");
    assert_eq!(list.json()[0]["id"], json!(id));
    assert!(!list.stdout.contains("whsec_"), "list never shows secrets");
    assert_eq!(removed.code, Some(0));
    assert_eq!(after.json(), json!([]));
}

#[tokio::test]
async fn an_endpoint_failing_for_three_days_is_disabled_but_not_after_a_short_outage() {
    let h = Harness::isolated(|_| {}).await;
    let (dead, _) = add(&h, "http://127.0.0.1:9/dead").await;
    let user = h.user();
    for key in ["a", "b", "c"] {
        let job = h
            .submit_photo(&user, key, samples::single_pet(), pet())
            .await;
        assert_eq!(h.cancel(&user, &job).await.status, StatusCode::OK);
    }
    let t0 = clock::now();
    let window = h.app.config.webhooks.retry.disable_after_secs;

    let burst = deliver(&h, t0).await;
    let still = h
        .app
        .store
        .webhook_endpoints()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let late = deliver(&h, t0 + Duration::from_secs(window + 1)).await;
    let after = h
        .app
        .store
        .webhook_endpoints()
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    assert_eq!(burst.failed, 3, "{burst:?}");
    assert!(
        still[0].disabled_at.is_none(),
        "three failures in a minute disable nothing"
    );
    assert!(late.failed >= 1, "{late:?}");
    assert_eq!(after[0].hook_sk, dead.hook_sk);
    assert!(after[0].disabled_at.is_some());
}

#[tokio::test]
async fn an_endpoint_removed_during_a_slow_round_stays_removed_and_gets_nothing_more() {
    let h = Harness::isolated(|_| {}).await;
    // The first POST is answered 500 after 2 s: the round has a failure to record while the
    // operator removes the endpoint.
    let slow = Receiver::start(&[500], Duration::from_secs(2)).await;
    let (ep, _) = add(&h, &slow.url).await;
    let user = h.user();
    canceled_events(&h, &user, 2).await;
    let t0 = clock::now();

    let (round, ()) = tokio::join!(deliver(&h, t0), async {
        slow.wait_for(1).await;
        webhooks::remove_endpoint(&h.app.store, &ep.hook_sk)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    });
    let later = deliver(&h, t0 + Duration::from_secs(86_400)).await;

    assert_eq!(endpoints(&h).await, [], "the remove stands after the round");
    // The second event's message finds the endpoint removed and sends nothing.
    assert_eq!((round.events, round.failed), (1, 1), "{round:?}");
    assert_eq!(
        slow.deliveries().len(),
        1,
        "only the POST in flight at the remove; none to the next event nor later"
    );
    assert_eq!(later.failed + later.delivered, 0, "{later:?}");
}

#[tokio::test]
async fn an_endpoint_rotated_during_a_slow_round_keeps_the_new_secret_and_the_old_one_stops() {
    let h = Harness::isolated(|_| {}).await;
    let slow = Receiver::start(&[500], Duration::from_secs(2)).await;
    let (ep, old) = add(&h, &slow.url).await;
    let user = h.user();
    let events = canceled_events(&h, &user, 2).await;
    let t0 = clock::now();

    let (_, new) = tokio::join!(deliver(&h, t0), async {
        slow.wait_for(1).await;
        webhooks::rotate_endpoint(
            &h.app.store,
            &ep.hook_sk,
            webhooks::OldSecrets::Overlap,
            clock::now(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    });
    let stored = endpoints(&h).await;
    // Past the 24 h overlap: the first event's retry is signed by the new secret alone.
    deliver(&h, t0 + Duration::from_secs(2 * 86_400)).await;

    assert_eq!(stored.len(), 1);
    let e = &stored[0];
    assert_eq!(
        e.secrets.last().map(|s| s.secret.as_str()),
        Some(new.as_str())
    );
    assert_eq!(
        (e.generation, e.failed_rounds, e.failing_since.as_deref()),
        (1, 0, None)
    );
    let got = slow.deliveries();
    let ids: Vec<&str> = got.iter().map(|d| d.headers.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "sent, the next event, the retry: {ids:?}");
    assert_eq!(ids[0], ids[2], "the failed one is retried");
    assert!(events.iter().all(|e| ids.contains(&e.as_str())), "{ids:?}");
    let (old, new) = (Secret::parse(&old), Secret::parse(&new));
    let (old, new) = (
        old.unwrap_or_else(|e| panic!("{e}")),
        new.unwrap_or_else(|e| panic!("{e}")),
    );
    let verifies = |s: &Secret, d: &Delivery| {
        sign::verify(
            s,
            &d.headers,
            d.body.as_bytes(),
            clock::now().unix_timestamp(),
        )
        .is_ok()
    };
    assert!(
        !verifies(&new, &got[0]),
        "the first POST left before the rotation"
    );
    assert!(
        got[1..].iter().all(|d| verifies(&new, d)),
        "every later delivery is signed with the new secret"
    );
    assert_eq!(
        got[1].headers.signature.split(' ').count(),
        2,
        "both during the overlap"
    );
    assert!(
        !verifies(&old, &got[2]),
        "after the overlap the old secret signs nothing"
    );
    let secret = e
        .secrets
        .last()
        .map(|s| s.secret.clone())
        .unwrap_or_default();
    let verdicts = official_verify(&[(&secret, &got[1]), (&secret, &got[2])]).await;
    assert!(
        verdicts.iter().all(|v| v["ok"] == json!(true)),
        "{verdicts:?}"
    );
}

#[tokio::test]
async fn a_redirect_is_a_failed_attempt_and_its_target_gets_nothing() {
    for status in [302, 307, 308] {
        let h = Harness::isolated(|_| {}).await;
        let target = Receiver::start(&[], Duration::ZERO).await;
        let bouncer = Receiver::redirecting(status, &target.url).await;
        endpoint(&h, &bouncer).await;
        let user = h.user();
        let event = canceled_events(&h, &user, 1).await.remove(0);

        let round = deliver(&h, clock::now()).await;

        assert_eq!(
            (round.failed, round.delivered),
            (1, 0),
            "{status}: {round:?}"
        );
        assert_eq!(bouncer.deliveries().len(), 1);
        assert!(
            target.deliveries().is_empty(),
            "{status}: the redirect was not followed"
        );
        let (row, attempts) = rows(&h, &event).await;
        assert_eq!(
            attempts.iter().map(|a| a.status_code).collect::<Vec<_>>(),
            [Some(status)]
        );
        assert!(
            row.is_some_and(|r| r.due_state.is_some()),
            "{status}: retried later"
        );
    }
}

#[tokio::test]
async fn outside_local_runs_a_loopback_address_is_refused_at_send_time_and_retried() {
    let h = Harness::isolated(|_| {}).await;
    let receiver = Receiver::start(&[], Duration::ZERO).await;
    // Added in a local run; then delivered by a worker configured as a deployment is. One
    // endpoint names the loopback address, the other a DNS name that resolves to it.
    let by_name = receiver.url.replace("127.0.0.1", "localhost");
    add(&h, &receiver.url).await;
    add(&h, &by_name).await;
    let user = h.user();
    let event = canceled_events(&h, &user, 1).await.remove(0);
    let deployed = WebhookSettings {
        private_addresses: PrivateAddresses::Refuse,
        ..h.app.config.webhooks
    };
    let t0 = clock::now();

    let refused = deliver_with(&h, &deployed, t0).await;
    let (row, attempts) = rows(&h, &event).await;
    let dues: Vec<_> = h
        .app
        .store
        .webhook_deliveries(&event)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|r| r.next_due)
        .collect();
    let local = deliver(&h, t0 + Duration::from_secs(5) + REDRIVE_GRACE).await;

    assert_eq!((refused.failed, refused.delivered), (2, 0), "{refused:?}");
    let errors: Vec<String> = attempts.iter().filter_map(|a| a.error.clone()).collect();
    assert_eq!(errors.len(), 2, "{attempts:?}");
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("refused: 127.0.0.1 is 127.0.0.1, a loopback")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("refused: localhost is ") && e.ends_with("a loopback address")),
        "{errors:?}"
    );
    let next = clock::format(t0 + Duration::from_secs(5));
    assert!(row.is_some());
    assert_eq!(
        dues,
        [Some(next.clone()), Some(next)],
        "retried per the schedule"
    );
    assert_eq!(
        receiver.deliveries().len(),
        2,
        "nothing reached the receiver until a local run sent it, once per endpoint"
    );
    assert_eq!(local.delivered, 2, "{local:?}");
}

#[tokio::test]
async fn the_operator_is_told_why_an_inner_address_is_refused_and_nothing_is_added() {
    let h = Harness::isolated(|_| {}).await;
    let mut env: Vec<(&str, String)> = h.app.config.resources.to_env();
    env.push(("ATELIER_WEBHOOK_PRIVATE_ADDRESSES", "refuse".to_owned()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let metadata = atelier_tests::admin(
        &[
            "webhook",
            "add",
            "https://169.254.169.254/latest/meta-data/",
        ],
        &env,
    )
    .await;
    let mapped =
        atelier_tests::admin(&["webhook", "add", "https://[::ffff:10.0.0.1]/"], &env).await;
    let local =
        atelier_tests::admin(&["webhook", "add", "http://localhost:9000/hooks"], &env).await;

    assert_eq!(metadata.code, Some(2), "{metadata:?}");
    assert!(
        metadata
            .stderr
            .contains("169.254.169.254 is a link-local address"),
        "{metadata:?}"
    );
    assert!(mapped.stderr.contains("is a private address"), "{mapped:?}");
    assert!(
        local.stderr.contains("localhost is a loopback address"),
        "{local:?}"
    );
    assert_eq!(endpoints(&h).await, []);
}

#[tokio::test]
async fn event_and_attempt_rows_carry_a_numeric_expiry_thirty_days_after_they_were_written() {
    let h = Harness::isolated(|_| {}).await;
    let receiver = Receiver::start(&[500], Duration::ZERO).await;
    endpoint(&h, &receiver).await;
    let user = h.user();
    let event = canceled_events(&h, &user, 1).await.remove(0);
    let t0 = clock::now();
    deliver(&h, t0).await;
    deliver(&h, t0 + Duration::from_secs(3600)).await;
    let replay_at = t0 + Duration::from_secs(10 * 86_400);

    let (row, attempts) = rows(&h, &event).await;
    h.app
        .store
        .replay_webhook_event(&event, &clock::format(replay_at))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (replayed, _) = rows(&h, &event).await;
    let raw = h
        .clients
        .dynamodb
        .query()
        .table_name(&h.app.config.resources.webhooks_table)
        .key_condition_expression("#pk = :pk")
        .expression_attribute_names("#pk", attr::HOOK_PK)
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(event.clone()),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let days = i64::try_from(RETENTION.as_secs()).unwrap_or_default();
    assert_eq!(days, 30 * 86_400);
    let unix = |s: &str| {
        clock::parse(s)
            .map(|t| t.unix_timestamp())
            .unwrap_or_default()
    };
    let row = row.unwrap_or_else(|| panic!("no event row"));
    assert_eq!(row.expires_at, Some(unix(&row.created_at) + days));
    assert_eq!(attempts.len(), 2);
    for a in &attempts {
        assert_eq!(a.expires_at, Some(unix(&a.at) + days), "{a:?}");
    }
    assert_eq!(
        replayed.and_then(|r| r.expires_at),
        Some(replay_at.unix_timestamp() + days),
        "a replay keeps the event a full retention from then"
    );
    let items = raw.items.unwrap_or_default();
    assert_eq!(
        items.len(),
        4,
        "the event, its delivery row and two attempts"
    );
    for item in &items {
        assert!(
            item.get(attr::EXPIRES_AT).is_some_and(|v| v.is_n()),
            "a TTL attribute must be a Number or DynamoDB never deletes the item: {item:?}"
        );
    }
}

/// A leaked secret: `rotate --now` stops it at once, so the next delivery carries one
/// signature, the new secret's, and the old secret verifies nothing.
#[tokio::test]
async fn rotate_now_revokes_the_old_secret_at_once() {
    let h = Harness::isolated(|_| {}).await;
    let env: Vec<(&str, String)> = h.app.config.resources.to_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let receiver = Receiver::start(&[200], Duration::ZERO).await;
    let (ep, old) = add(&h, &receiver.url).await;

    let rotated = atelier_tests::admin(&["webhook", "rotate", &ep.hook_sk, "--now"], &env).await;
    let new = rotated.json()["secret"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let user = h.user();
    canceled_events(&h, &user, 1).await;
    deliver(&h, clock::now()).await;

    assert_eq!(rotated.code, Some(0), "{rotated:?}");
    assert_eq!(rotated.json()["previous_signs_for_hours"], json!(0));
    let stored = endpoints(&h).await;
    assert_eq!(stored[0].secrets.len(), 1, "only the new secret is kept");
    let got = receiver.deliveries();
    assert_eq!(got.len(), 1);
    let d = &got[0];
    assert_eq!(
        d.headers.signature.split(' ').count(),
        1,
        "one signature: {}",
        d.headers.signature
    );
    let verifies = |secret: &str| {
        let s = Secret::parse(secret).unwrap_or_else(|e| panic!("{e}"));
        sign::verify(
            &s,
            &d.headers,
            d.body.as_bytes(),
            clock::now().unix_timestamp(),
        )
        .is_ok()
    };
    assert!(verifies(&new), "signed by the new secret");
    assert!(!verifies(&old), "the old secret signs nothing any more");
}

/// The due events are read page after page: a Query page stops at 1 MB whatever its limit,
/// so a backlog of large events (here five of ≈ 300 KB) would otherwise be cut at the first
/// page; the limit still bounds the whole read.
#[tokio::test]
async fn the_due_events_are_read_past_a_one_megabyte_page_up_to_the_limit() {
    let h = Harness::isolated(|_| {}).await;
    let now = clock::now();
    for i in 0..5 {
        let item = WebhookEventItem {
            hook_pk: format!("evt_paging_{i}"),
            hook_sk: atelier_shared::store::schema::WEBHOOK_EVENT.to_owned(),
            kind: EventType::EditCanceled.as_str().to_owned(),
            body: "x".repeat(300_000),
            created_at: clock::format(now),
            due_state: Some(atelier_shared::store::schema::WEBHOOK_PENDING.to_owned()),
            due_at: Some(clock::format(now)),
            rounds: 0,
            delivered_to: Vec::new(),
            expires_at: None,
            trace_id: None,
        };
        h.clients
            .dynamodb
            .put_item()
            .table_name(&h.app.config.resources.webhooks_table)
            .set_item(Some(
                serde_dynamo::to_item(&item).unwrap_or_else(|e| panic!("{e}")),
            ))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let later = clock::format(now + Duration::from_secs(60));
    let due = |limit| h.app.store.webhook_events_due(&later, limit);
    let all = due(1000).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.len(), 5, "every due event, past the first 1 MB page");
    let some = due(4).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(some.len(), 4, "no more than the limit, over two pages");
}
