//! Webhooks leave in seconds and never wait for one another: the local stack's delivery path
//! (the stream's stand-in → one message per (event, endpoint) → the delivery queue → one POST
//! each) with real receivers, and the sweeper's round as the safety net.
//!
//! `ATELIER_WEBHOOK_EVENTS` sets how many events the isolation test sends (20 by default, for
//! CI; `ATELIER_WEBHOOK_EVENTS=1000 cargo xtask test -- -p atelier-tests --test
//! webhook_delivery` for the full run).

use std::collections::HashMap;
use std::time::{Duration, Instant as StdInstant};

use atelier_model_server::samples;
use atelier_shared::adapters::webhooks::client::WebhookClient;
use atelier_shared::clock;
use atelier_shared::domain::webhooks::{DeliveryMessage, REDRIVE_GRACE};
use atelier_shared::services::webhooks;
use atelier_tests::Harness;
use atelier_tests::receiver::Receiver;
use http::StatusCode;
use serde_json::json;

async fn add(h: &Harness, url: &str) {
    webhooks::add_endpoint(&h.app.store, &h.app.config.webhooks, url, clock::now())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
}

/// A canceled edit of `user` (so one event); its id and the instant its cancel committed.
async fn canceled_event(
    h: &Harness,
    user: &atelier_shared::domain::UserId,
    i: usize,
) -> (String, StdInstant) {
    let pet = json!({ "style": "needle_felt", "target": "pet" });
    let job = h
        .submit_photo(user, &format!("k{i}"), samples::single_pet(), pet)
        .await;
    assert_eq!(h.cancel(user, &job).await.status, StatusCode::OK);
    (format!("evt_{job}_canceled"), StdInstant::now())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

#[tokio::test]
async fn a_healthy_endpoint_gets_each_event_in_seconds_while_another_hangs_and_a_third_answers_500()
{
    let n: usize = std::env::var("ATELIER_WEBHOOK_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let h = Harness::isolated(|c| {
        c.max_in_flight = 10_000;
        c.upload_slots_per_day = 10_000;
        c.upload_bytes_per_day = 1 << 40;
    })
    .await;
    let healthy = Receiver::start(&[], Duration::ZERO).await;
    let hanging = Receiver::start(&[], Duration::from_secs(3600)).await;
    let failing = Receiver::start(&vec![500; 10 * n], Duration::ZERO).await;
    for r in [&healthy, &hanging, &failing] {
        add(&h, &r.url).await;
    }
    let http = WebhookClient::new(h.app.config.webhooks.private_addresses)
        .unwrap_or_else(|e| panic!("{e}"));
    let path = tokio::spawn(atelier_local::hooks::run(
        h.app.clone(),
        http,
        h.clients.sqs.clone(),
        16,
    ));
    let user = h.user();
    h.fund_to(&user, 1_000_000).await;

    let mut committed = HashMap::new();
    for i in 0..n {
        let (id, at) = canceled_event(&h, &user, i).await;
        committed.insert(id, at);
    }
    let deadline = StdInstant::now() + Duration::from_secs(60);
    while healthy.deliveries().len() < n && StdInstant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Time for a duplicate to show up, were there one.
    tokio::time::sleep(Duration::from_secs(3)).await;
    path.abort();

    let got = healthy.deliveries();
    let mut per_id: HashMap<&str, usize> = HashMap::new();
    for d in &got {
        *per_id.entry(d.headers.id.as_str()).or_default() += 1;
    }
    assert_eq!(per_id.len(), n, "every event reached the healthy endpoint");
    assert!(
        per_id.values().all(|c| *c == 1),
        "exactly once by webhook-id"
    );
    let mut latencies: Vec<f64> = got
        .iter()
        .filter_map(|d| {
            committed
                .get(&d.headers.id)
                .map(|c| (d.at - *c).as_secs_f64())
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let (p50, p95) = (percentile(&latencies, 0.5), percentile(&latencies, 0.95));
    println!(
        "healthy endpoint, {n} events, one endpoint hanging and one answering 500 beside it: \
         commit -> received p50 {p50:.2} s, p95 {p95:.2} s, max {:.2} s",
        latencies.last().copied().unwrap_or(f64::NAN)
    );
    assert!(
        p95 <= 5.0,
        "p95 {p95:.2} s: bounded by seconds, not by the hanging one's 15 s timeouts"
    );
    assert!(
        !failing.deliveries().is_empty(),
        "the 500 endpoint was tried"
    );
    // Each POST to the hanging endpoint is held until the 15 s timeout: never more than the
    // endpoint's slots are open at once.
    let held = hanging.deliveries();
    let window =
        Duration::from_secs(h.app.config.webhooks.timeout_secs) - Duration::from_millis(500);
    let most = held
        .iter()
        .map(|d| {
            held.iter()
                .filter(|o| o.at >= d.at && o.at < d.at + window)
                .count()
        })
        .max()
        .unwrap_or(0);
    println!(
        "hanging endpoint: {} POSTs, at most {most} open at once",
        held.len()
    );
    assert!(
        most <= h.app.config.webhooks.endpoint_concurrency as usize,
        "the hanging endpoint is not flooded: {most} POSTs open at once"
    );
}

/// Takes every message visible on the delivery queue now.
async fn visible_messages(h: &Harness) -> Vec<DeliveryMessage> {
    let mut out = Vec::new();
    loop {
        let got = h
            .clients
            .sqs
            .receive_message()
            .queue_url(h.app.hooks_queue.url())
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let messages = got.messages.unwrap_or_default();
        if messages.is_empty() {
            return out;
        }
        for m in messages {
            if let Some(handle) = m.receipt_handle {
                let _ = h
                    .clients
                    .sqs
                    .delete_message()
                    .queue_url(h.app.hooks_queue.url())
                    .receipt_handle(handle)
                    .send()
                    .await;
            }
            let body = m.body.unwrap_or_default();
            out.push(serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}")));
        }
    }
}

#[tokio::test]
async fn a_dropped_stream_record_and_a_killed_deliverer_are_delivered_by_the_sweepers_round() {
    let h = Harness::isolated(|_| {}).await;
    let receiver = Receiver::start(&[], Duration::ZERO).await;
    add(&h, &receiver.url).await;
    let ep = h
        .app
        .store
        .webhook_endpoints()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let ep = ep[0].hook_sk.clone();
    let user = h.user();
    // Event A: its stream record is lost (never fanned out).
    let (lost, _) = canceled_event(&h, &user, 0).await;
    // Event B: its deliverer claims the first attempt and dies before the POST.
    let (killed, _) = canceled_event(&h, &user, 1).await;
    let t0 = clock::now();
    let lease = clock::format(t0 + Duration::from_secs(45));
    let claimed = h
        .app
        .store
        .claim_webhook_attempt(&killed, &ep, 1, &clock::format(t0), &lease, 0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(claimed.is_some());
    let http = WebhookClient::new(h.app.config.webhooks.private_addresses)
        .unwrap_or_else(|e| panic!("{e}"));
    let hooks = webhooks::Hooks {
        store: &h.app.store,
        http: &http,
        settings: &h.app.config.webhooks,
        queue: &h.app.hooks_queue,
    };
    let hr = &h;
    let round = |at| async move {
        let s = webhooks::redrive_due(hooks, at, Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for m in visible_messages(hr).await {
            webhooks::deliver(hooks, &m, at)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        s
    };

    let early = round(t0).await;
    let late = round(t0 + REDRIVE_GRACE + Duration::from_secs(1)).await;
    let closing = round(t0 + REDRIVE_GRACE * 3).await;

    assert_eq!(
        early.enqueued, 0,
        "nothing is re-driven before the grace: {early:?}"
    );
    assert_eq!(late.enqueued, 2, "{late:?}");
    let ids: Vec<String> = receiver
        .deliveries()
        .into_iter()
        .map(|d| d.headers.id)
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&lost) && ids.contains(&killed), "{ids:?}");
    assert_eq!(
        closing.closed, 2,
        "both events leave the due index: {closing:?}"
    );
    let (_, attempts) = h
        .app
        .store
        .webhook_event_rows(&killed)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        attempts.len(),
        1,
        "the killed claim made no POST; the re-drive made one"
    );
    assert_eq!(attempts[0].round, 2, "the re-drive is the next attempt");
}
