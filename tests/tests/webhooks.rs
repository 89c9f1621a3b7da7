//! Signed webhooks on the local stack: the outbox row commits with the job's end, a round of
//! delivery POSTs it signed (verified by our verifier and by the official Standard Webhooks
//! library), failures are retried with growing waits, and the receiver never touches the job.
//! Each test has a stack of its own (its own endpoints); the clock is moved, never slept.

use std::time::Duration;

use atelier_model_server::samples;
use atelier_shared::clock::{self, Instant};
use atelier_shared::domain::FailureCode;
use atelier_shared::services::webhooks::{self, DeliverySummary};
use atelier_shared::webhooks::sign::{self, Secret};
use atelier_shared::webhooks::{EventType, Payload};
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

/// One delivery round as of `now`.
async fn deliver(h: &Harness, now: Instant) -> DeliverySummary {
    let http = reqwest::Client::new();
    webhooks::deliver_due(
        &h.app.store,
        &http,
        &h.app.config.webhooks,
        now,
        Duration::from_secs(30),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// An endpoint for `receiver`; its secret.
async fn endpoint(h: &Harness, receiver: &Receiver) -> String {
    let (_, secret) = webhooks::add_endpoint(&h.app.store, &receiver.url, clock::now())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    secret
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
async fn a_receiver_answering_500_twice_is_retried_with_growing_waits_then_served_once() {
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
    let base = h.app.config.webhooks.retry.base_secs;
    let t0 = clock::now();

    let r1 = deliver(&h, t0).await;
    let early = deliver(&h, t0 + Duration::from_secs(base - 1)).await;
    let r2 = deliver(&h, t0 + Duration::from_secs(base)).await;
    let early2 = deliver(&h, t0 + Duration::from_secs(base * 3 - 1)).await;
    let r3 = deliver(&h, t0 + Duration::from_secs(base * 3)).await;
    let done = deliver(&h, t0 + Duration::from_secs(86_400)).await;

    assert_eq!((r1.failed, r2.failed, r3.delivered), (1, 1, 1));
    assert_eq!((early.events, early2.events), (0, 0), "not before the wait");
    assert_eq!(done.events, 0);
    let got = receiver.deliveries();
    assert_eq!(got.len(), 3);
    assert!(
        got.iter().all(|d| d.headers.id == event_id),
        "one webhook-id on every retry"
    );
    let (event, attempts) = h
        .app
        .store
        .webhook_event_rows(&event_id)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
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
    webhooks::add_endpoint(&h.app.store, "http://127.0.0.1:9/dead", clock::now())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let user = h.user();
    let before = h.balance(&user).await;
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    let started = std::time::Instant::now();
    drain(&h, &model).await;
    let job_path = started.elapsed();

    let round = deliver(&h, clock::now()).await;

    assert_eq!(h.job(&user, &id).await.str("status"), "succeeded");
    assert!(
        job_path < Duration::from_secs(10),
        "the job path never waits: {job_path:?}"
    );
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
        (1, 0),
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
    let (dead, _) = webhooks::add_endpoint(&h.app.store, "http://127.0.0.1:9/dead", clock::now())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
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

    assert_eq!(
        (burst.failed, burst.endpoints_disabled),
        (3, 0),
        "{burst:?}"
    );
    assert!(
        still[0].disabled_at.is_none(),
        "three failures in a minute disable nothing"
    );
    assert_eq!(late.endpoints_disabled, 1, "{late:?}");
    assert_eq!(after[0].hook_sk, dead.hook_sk);
    assert!(after[0].disabled_at.is_some());
}
