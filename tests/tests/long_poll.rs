//! `GET /v1/edits/{id}` as a long-poll (`Prefer: wait=N`, `?wait=N`) and a conditional read
//! (`ETag` / `If-None-Match`), against ministack and the stand-in model server.

use std::time::{Duration, Instant};

use atelier_model_server::samples;
use atelier_tests::{Harness, Reply, StandIn, sqs_event};
use http::StatusCode;
use serde_json::{Value, json};

fn pet() -> Value {
    json!({ "style": "embroidery", "target": "pet" })
}

fn etag(reply: &Reply) -> String {
    reply
        .header("etag")
        .unwrap_or_else(|| panic!("no ETag: {reply:?}"))
        .to_owned()
}

#[tokio::test]
async fn a_waiting_client_gets_the_delivered_job_within_a_second_of_delivery() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    let processor = h.processor(&model);

    // The client loops as the CLI does: wait for a change from what it holds.
    let client = async {
        let mut held = etag(&h.job(&user, &id).await);
        let mut seen = Vec::new();
        loop {
            let res = h
                .job_with(
                    &user,
                    &id,
                    "",
                    &[("prefer", "wait=20"), ("if-none-match", &held)],
                )
                .await;
            let answered = atelier_shared::clock::now();
            assert_eq!(res.header("preference-applied"), Some("wait=20"));
            if res.status == StatusCode::NOT_MODIFIED {
                continue;
            }
            assert_eq!(res.status, StatusCode::OK, "{res:?}");
            held = etag(&res);
            seen.push(res.str("status"));
            if res.str("status") == "succeeded" {
                return (res, answered, seen);
            }
        }
    };
    let consumer = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        atelier_consumer::handle(&processor, sqs_event(&id)).await
    };
    let ((job, answered, seen), batch) = tokio::join!(client, consumer);

    assert!(batch.batch_item_failures.is_empty());
    let delivered = atelier_shared::clock::parse(&job.str("updated_at"))
        .unwrap_or_else(|| panic!("updated_at: {job:?}"));
    let gap = (answered - delivered).as_seconds_f64();
    println!("delivery to answer: {gap:.3} s (states seen: {seen:?})");
    assert!(
        gap < 1.5,
        "the waiting client heard of the delivery {gap:.3} s after it"
    );
    assert!(job.body["result"]["url"].is_string(), "{job:?}");
}

#[tokio::test]
async fn a_wait_on_an_unchanged_job_answers_after_n_seconds_with_the_same_state() {
    let h = Harness::new().await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    let before = h.job(&user, &id).await;

    for (query, prefer) in [("?wait=2", None), ("", Some("wait=2"))] {
        let headers: Vec<(&str, &str)> = prefer.iter().map(|p| ("prefer", *p)).collect();
        let started = Instant::now();
        let res = h.job_with(&user, &id, query, &headers).await;
        let took = started.elapsed();

        assert_eq!(res.status, StatusCode::OK, "{res:?}");
        assert_eq!(res.str("status"), "queued");
        assert_eq!(etag(&res), etag(&before), "nothing changed");
        assert_eq!(res.header("preference-applied"), Some("wait=2"));
        assert_eq!(res.header("vary"), Some("Prefer"));
        assert!(
            took >= Duration::from_millis(1900) && took < Duration::from_millis(3500),
            "{query} {prefer:?}: answered after {took:?}"
        );
    }
}

#[tokio::test]
async fn if_none_match_is_304_until_the_job_changes_then_200_with_a_new_etag() {
    let h = Harness::new().await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    let held = etag(&h.job(&user, &id).await);

    let same = h
        .job_with(&user, &id, "", &[("if-none-match", &held)])
        .await;
    assert_eq!(same.status, StatusCode::NOT_MODIFIED, "{same:?}");
    assert_eq!(same.body, Value::Null, "a 304 has no body");
    assert_eq!(etag(&same), held);

    let started = Instant::now();
    let waited = h
        .job_with(
            &user,
            &id,
            "",
            &[("if-none-match", &held), ("prefer", "wait=1")],
        )
        .await;
    assert_eq!(waited.status, StatusCode::NOT_MODIFIED, "{waited:?}");
    assert!(started.elapsed() >= Duration::from_millis(900));

    assert_eq!(h.cancel(&user, &id).await.status, StatusCode::OK);
    let changed = h
        .job_with(&user, &id, "", &[("if-none-match", &held)])
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{changed:?}");
    assert_eq!(changed.str("status"), "canceled");
    assert_ne!(etag(&changed), held);
}

#[tokio::test]
async fn a_wait_ends_when_the_job_changes_and_a_long_wish_is_capped_at_20() {
    let h = Harness::new().await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;

    let started = Instant::now();
    let (res, _) = tokio::join!(
        h.job_with(&user, &id, "", &[("prefer", "respond-async, wait=600")]),
        async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(h.cancel(&user, &id).await.status, StatusCode::OK);
        }
    );

    assert_eq!(res.str("status"), "canceled", "{res:?}");
    assert_eq!(res.header("preference-applied"), Some("wait=20"));
    let took = started.elapsed();
    println!("cancel to answer: {took:?} after the wait started (cancel at 500 ms)");
    assert!(
        took < Duration::from_millis(2000),
        "answered after {took:?}"
    );
}

#[tokio::test]
async fn two_reads_of_a_delivered_job_share_the_etag_though_their_links_differ() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    let batch = atelier_consumer::handle(&h.processor(&model), sqs_event(&id)).await;
    assert!(batch.batch_item_failures.is_empty());

    let first = h.job(&user, &id).await;
    // Presigned links carry their signing second.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = h.job(&user, &id).await;
    let png = h.job_in(&user, &id, "png").await;

    let url = |r: &Reply| {
        r.body["result"]["url"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_ne!(url(&first), url(&second), "each read signs a fresh link");
    assert_eq!(etag(&first), etag(&second));
    assert_ne!(etag(&png), etag(&first), "another format is another body");
    let held = h
        .job_with(&user, &id, "", &[("if-none-match", &etag(&first))])
        .await;
    assert_eq!(held.status, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn a_bad_wait_parameter_is_400_and_a_malformed_preference_is_ignored() {
    let h = Harness::new().await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;

    for (query, why) in [
        ("?wait=0", "zero"),
        ("?wait=21", "over 20"),
        ("?wait=abc", "not a number"),
        ("?wait=-1", "negative"),
        ("?wait=1.5", "not whole"),
        ("?wait=", "empty"),
    ] {
        let res = h.job_with(&user, &id, query, &[]).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{why}: {res:?}");
        assert_eq!(res.code(), "INVALID_WAIT", "{why}");
    }

    let started = Instant::now();
    let res = h.job_with(&user, &id, "", &[("prefer", "wait=soon")]).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.header("preference-applied"), None);
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "answered at once"
    );
}

#[tokio::test]
async fn waiting_on_another_users_job_is_404_at_once() {
    let h = Harness::new().await;
    let (owner, other) = (h.user(), h.user());
    let id = h
        .submit_photo(&owner, "k", samples::single_pet(), pet())
        .await;

    for (query, headers) in [("", [("prefer", "wait=5")]), ("?wait=5", [("x-none", "")])] {
        let started = Instant::now();
        let res = h.job_with(&other, &id, query, &headers).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{res:?}");
        assert_eq!(res.header("preference-applied"), None);
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "no wait, so no timing oracle: {:?}",
            started.elapsed()
        );
    }
}
