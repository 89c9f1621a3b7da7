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
        let (mut seen, mut waits) = (Vec::new(), 0);
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
            // A wait says so. An ETag the job already moved past (it changed between two
            // reads) is answered at once, without a wait, and without the header.
            let applied = res.header("preference-applied");
            waits += usize::from(applied == Some("wait=20"));
            if res.status == StatusCode::NOT_MODIFIED {
                assert_eq!(applied, Some("wait=20"));
                continue;
            }
            assert!(applied.is_none() || applied == Some("wait=20"), "{res:?}");
            assert_eq!(res.status, StatusCode::OK, "{res:?}");
            held = etag(&res);
            seen.push(res.str("status"));
            if res.str("status") == "succeeded" {
                assert!(waits > 0, "no read waited: {seen:?}");
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

/// `GET` of `id` with `headers`, timed.
async fn timed(
    h: &Harness,
    user: &atelier_shared::domain::UserId,
    id: &str,
    query: &str,
    headers: &[(&str, &str)],
) -> (Reply, Duration) {
    let started = Instant::now();
    let res = h.job_with(user, id, query, headers).await;
    (res, started.elapsed())
}

#[tokio::test]
async fn a_wait_on_a_finished_job_answers_at_once_and_an_unchanged_tag_is_304_at_once() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.funded_user(40).await;
    let delivered = h
        .submit_photo(&user, "delivered", samples::single_pet(), pet())
        .await;
    let batch = atelier_consumer::handle(&h.processor(&model), sqs_event(&delivered)).await;
    assert!(batch.batch_item_failures.is_empty());
    let canceled = h
        .submit_photo(&user, "canceled", samples::single_pet(), pet())
        .await;
    assert_eq!(h.cancel(&user, &canceled).await.status, StatusCode::OK);

    for (id, state) in [(&delivered, "succeeded"), (&canceled, "canceled")] {
        let held = etag(&h.job(&user, id).await);
        let (fresh, took) = timed(&h, &user, id, "", &[("prefer", "wait=5")]).await;
        assert_eq!(fresh.status, StatusCode::OK, "{fresh:?}");
        assert_eq!(fresh.str("status"), state);
        assert_eq!(etag(&fresh), held);
        assert_eq!(fresh.header("preference-applied"), None, "it did not wait");
        assert!(took < Duration::from_millis(1000), "{state}: {took:?}");

        let (same, took) = timed(&h, &user, id, "?wait=5", &[("if-none-match", &held)]).await;
        assert_eq!(same.status, StatusCode::NOT_MODIFIED, "{same:?}");
        assert_eq!(same.body, Value::Null, "a 304 has no body");
        assert_eq!(etag(&same), held);
        assert_eq!(same.header("preference-applied"), None);
        assert!(took < Duration::from_millis(1000), "{state} 304: {took:?}");
    }
}

#[tokio::test]
async fn a_finished_edit_with_a_repair_in_flight_is_still_waited_on() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.funded_user(40).await;
    let id = h
        .submit_photo(&user, "edit", samples::single_pet(), pet())
        .await;
    let batch = atelier_consumer::handle(&h.processor(&model), sqs_event(&id)).await;
    assert!(batch.batch_item_failures.is_empty());
    let repair = h
        .repair(
            &user,
            &id,
            "fix",
            &json!({ "instruction": "finer stitches" }),
        )
        .await;
    assert_eq!(repair.status, StatusCode::ACCEPTED, "{repair:?}");
    let held = etag(&h.job(&user, &id).await);

    let (res, took) = timed(
        &h,
        &user,
        &id,
        "",
        &[("prefer", "wait=2"), ("if-none-match", &held)],
    )
    .await;

    assert_eq!(res.status, StatusCode::NOT_MODIFIED, "{res:?}");
    assert_eq!(res.header("preference-applied"), Some("wait=2"));
    assert!(took >= Duration::from_millis(1900), "it waited: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_waits_from_one_user_holds_four_and_the_rest_answer_at_once_while_another_users_job_completes()
 {
    use atelier_shared::services::watch::WAITS_PER_USER;
    const FLOOD: usize = 100;
    // The waits' own cap is tested here, not the request budget the flood would also reach.
    let mut config = Harness::config();
    config.limits.requests_per_window = 1_000_000;
    let (h, model) = (Harness::with_config(config).await, StandIn::start().await);
    let (flooder, other) = (h.user(), h.user());
    let watched = h
        .submit_photo(&flooder, "k", samples::single_pet(), pet())
        .await;
    let held = etag(&h.job(&flooder, &watched).await);
    let job = h
        .submit_photo(&other, "k", samples::single_pet(), pet())
        .await;
    let processor = h.processor(&model);

    let flood = futures::future::join_all((0..FLOOD).map(|_| {
        let (h, flooder, watched, held) = (&h, &flooder, &watched, &held);
        async move { timed(h, flooder, watched, "?wait=20", &[("if-none-match", held)]).await }
    }));
    // The other user's job runs during the flood, and its owner waits for it.
    let other_user = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = etag(&h.job(&other, &job).await);
        let started = Instant::now();
        let consumer = atelier_consumer::handle(&processor, sqs_event(&job));
        let headers = [("prefer", "wait=20"), ("if-none-match", before.as_str())];
        let waiter = timed(&h, &other, &job, "", &headers);
        let (batch, _) = tokio::join!(consumer, waiter);
        assert!(batch.batch_item_failures.is_empty());
        let done = h.job(&other, &job).await;
        (done, started.elapsed())
    };
    let (answers, (done, job_took)) = tokio::join!(flood, other_user);

    let waited: Vec<_> = answers
        .iter()
        .filter(|(r, _)| r.header("preference-applied") == Some("wait=20"))
        .collect();
    let at_once: Vec<_> = answers
        .iter()
        .filter(|(r, _)| r.header("preference-applied").is_none())
        .collect();
    let mut at_once_times: Vec<Duration> = at_once.iter().map(|(_, t)| *t).collect();
    at_once_times.sort();
    let median = at_once_times
        .get(at_once_times.len() / 2)
        .copied()
        .unwrap_or_default();
    let slowest_at_once = at_once_times.last().copied().unwrap_or_default();
    println!(
        "flood of {FLOOD} ?wait=20: {} waited, {} answered at once (median {median:?}, slowest {slowest_at_once:?}); the other user's job took {job_took:?}",
        waited.len(),
        at_once.len()
    );
    assert_eq!(waited.len(), WAITS_PER_USER, "the user's slots, all used");
    assert_eq!(at_once.len(), FLOOD - WAITS_PER_USER);
    assert!(
        answers
            .iter()
            .all(|(r, _)| r.status == StatusCode::NOT_MODIFIED)
    );
    assert!(
        waited
            .iter()
            .all(|(_, t)| *t >= Duration::from_millis(19_900))
    );
    // "At once" on a loaded 2-core machine: 100 requests queue for ministack, never for a wait.
    assert!(
        slowest_at_once < Duration::from_secs(10),
        "beyond the limit the answer does not wait: {slowest_at_once:?}"
    );
    assert_eq!(done.str("status"), "succeeded", "{done:?}");
    assert!(
        job_took < Duration::from_secs(20),
        "within one wait: {job_took:?}"
    );

    // Every slot was given back: the flooder waits again.
    let (again, took) = timed(
        &h,
        &flooder,
        &watched,
        "?wait=1",
        &[("if-none-match", &held)],
    )
    .await;
    assert_eq!(again.header("preference-applied"), Some("wait=1"));
    assert!(took >= Duration::from_millis(900), "{took:?}");
}

#[tokio::test]
async fn a_slot_whose_wait_died_is_free_again_when_its_lease_ends() {
    use atelier_shared::services::watch::WAITS_PER_USER;
    use atelier_shared::store::waits::{Take, WaitSlot};
    let h = Harness::new().await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    // Waits that died holding every slot, with leases ending in 2 s.
    let now = atelier_shared::clock::now().unix_timestamp();
    for index in 0..WAITS_PER_USER {
        let slot = WaitSlot {
            index,
            holder: format!("dead-{index}"),
        };
        let took = h
            .app
            .store
            .take_wait_slot(&user, &slot, WAITS_PER_USER, (now, now + 2, now + 60))
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(took, Take::Taken(slot));
    }

    let (refused, took) = timed(&h, &user, &id, "?wait=3", &[]).await;
    assert_eq!(refused.status, StatusCode::OK);
    assert_eq!(
        refused.header("preference-applied"),
        None,
        "every slot held"
    );
    assert!(took < Duration::from_millis(1000), "{took:?}");

    tokio::time::sleep(Duration::from_millis(3100)).await;
    let (waited, took) = timed(&h, &user, &id, "?wait=1", &[]).await;
    assert_eq!(
        waited.header("preference-applied"),
        Some("wait=1"),
        "the leases ended"
    );
    assert!(took >= Duration::from_millis(900), "{took:?}");
}
