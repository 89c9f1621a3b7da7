//! One caller's flood never denies the others: each signed-in caller's requests are counted
//! per window in DynamoDB, across every execution environment, and past the budget answered
//! `429 TOO_MANY_REQUESTS` with `Retry-After` before any other work; other users and the
//! payment webhooks are served meanwhile.

use std::time::Duration;

use atelier_shared::clock;
use atelier_shared::domain::{LedgerKind, UserId};
use atelier_shared::services::rate_limit::window;
use atelier_tests::Harness;
use atelier_tests::stripe::StripeStandIn;
use futures::future::join_all;
use http::StatusCode;
use serde_json::json;

/// A stack whose callers may make `budget` requests every `secs` seconds.
async fn limited(budget: u32, secs: u64) -> Harness {
    Harness::isolated(|l| {
        l.requests_per_window = budget;
        l.request_window_secs = secs;
    })
    .await
}

/// Waits, if need be, for the next window to start, so that at least `room` seconds of the
/// window are left for what a test sends next (counted in one window).
async fn fresh_window(secs: u64, room: f64) {
    let now = clock::now();
    let (_, end) = window(now, secs);
    let left = end as f64 - now.unix_timestamp_nanos() as f64 / 1e9;
    if left < room {
        tokio::time::sleep(Duration::from_secs_f64(left.max(0.0) + 0.05)).await;
    }
}

async fn account_status(h: &Harness, user: &UserId) -> StatusCode {
    h.get(user, "/v1/account").await.status
}

#[tokio::test]
async fn past_its_budget_a_caller_gets_429_with_retry_after_and_its_edit_changes_nothing() {
    let h = limited(5, 60).await;
    let user = h.user();
    fresh_window(60, 20.0).await;
    let original = h.upload(&user, "original", Harness::png(8, 8)).await;
    for _ in 0..4 {
        assert_eq!(account_status(&h, &user).await, StatusCode::OK);
    }
    let rows_before = h.ledger(&user).await;

    let body = json!({ "style": "origami", "target": "pet", "original_asset_id": original });
    let refused = h.submit(&user, Some("over"), &body).await;

    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "{refused:?}");
    assert_eq!(refused.code(), "TOO_MANY_REQUESTS");
    assert_eq!(
        refused.header("content-type"),
        Some("application/problem+json")
    );
    let retry: u64 = refused
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    assert_eq!(h.ledger(&user).await, rows_before, "no charge");
    let jobs = h
        .app
        .store
        .jobs_page(&user, 10, None)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(jobs.0.is_empty(), "no job: {jobs:?}");
}

#[tokio::test]
async fn another_user_is_served_while_one_is_refused_and_a_new_window_serves_the_first_again() {
    let h = limited(3, 2).await;
    let (flooder, other) = (h.user(), h.user());
    fresh_window(2, 1.5).await;
    let flood = join_all((0..10).map(|_| account_status(&h, &flooder))).await;

    assert_eq!(
        flood.iter().filter(|s| **s == StatusCode::OK).count(),
        3,
        "{flood:?}"
    );
    assert_eq!(account_status(&h, &other).await, StatusCode::OK);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(account_status(&h, &flooder).await, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_environments_of_one_user_share_one_budget() {
    let h = limited(25, 60).await;
    let user = h.user();
    // Twenty API instances, each with its own clients and connections, as Lambda would run.
    let mut environments = Vec::new();
    for _ in 0..20 {
        let e = Harness::with_config(h.app.config.clone()).await;
        environments.push(e);
    }
    fresh_window(60, 20.0).await;

    let statuses = join_all(
        environments
            .iter()
            .flat_map(|e| [e, e])
            .map(|e| account_status(e, &user)),
    )
    .await;

    let served = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((served, refused), (25, 15), "{statuses:?}");
}

#[tokio::test]
async fn a_flooding_user_never_delays_a_purchase_webhook() {
    let stripe = StripeStandIn::start().await;
    let h = limited(3, 60).await.with_stripe(&stripe);
    let buyer = h.user();
    fresh_window(60, 20.0).await;
    let checkout = h
        .checkout(&buyer, "b-1", &json!({ "pack": "starter" }))
        .await;
    assert_eq!(checkout.status, StatusCode::CREATED, "{checkout:?}");
    // The buyer floods past its budget (the checkout was one of its 3); the payment's webhook
    // still lands.
    let flood = join_all((0..5).map(|_| account_status(&h, &buyer))).await;
    assert_eq!(
        flood.iter().filter(|s| **s == StatusCode::OK).count(),
        2,
        "{flood:?}"
    );
    let paid = stripe.pay(&checkout.str("id")).await;

    let taken = join_all((0..5).map(|_| h.deliver(&paid))).await;

    assert!(
        taken.iter().all(|r| r.status == StatusCode::OK),
        "{taken:?}"
    );
    let purchases: Vec<i64> = h
        .ledger(&buyer)
        .await
        .iter()
        .filter(|r| r.kind == LedgerKind::Purchase)
        .map(|r| r.amount.get())
        .collect();
    assert_eq!(purchases, [50], "granted once");
    h.assert_audit_clean().await;
}
