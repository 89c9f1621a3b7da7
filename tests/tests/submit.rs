//! The paid submit path: idempotency, one debit per job, overdraft, in-flight limit, queue
//! failure — against ministack.

use atelier_shared::domain::LedgerKind;
use atelier_tests::{Harness, capture_logs};
use futures::future::join_all;
use http::StatusCode;
use serde_json::{Value, json};

async fn edit_body(h: &Harness, user: &atelier_shared::domain::UserId) -> Value {
    let original = h.upload(user, "original", Harness::png(8, 8)).await;
    json!({ "style": "embroidery", "target": "pet", "original_asset_id": original })
}

fn debits(rows: &[atelier_shared::store::schema::LedgerItem]) -> usize {
    rows.iter().filter(|r| r.kind == LedgerKind::Debit).count()
}

#[tokio::test]
async fn new_edit_is_202_with_location_and_charges_the_quoted_price() {
    let h = Harness::new().await;
    let user = h.user();
    let body = edit_body(&h, &user).await;
    let before = h.balance(&user).await;
    let quote = h.quote(&user, &body).await;

    let res = h.submit(&user, Some("k-1"), &body).await;

    assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    assert_eq!(
        res.header("location"),
        Some(format!("/v1/edits/{}", res.str("id")).as_str())
    );
    assert_eq!(res.str("status"), "queued");
    let price = quote.body["credits"].as_i64().expect("the quote's price");
    assert_eq!(res.body["credits"].as_i64(), Some(price));
    assert_eq!(h.balance(&user).await, before - price);
    let got = h.get(&user, &format!("/v1/edits/{}", res.str("id"))).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.str("id"), res.str("id"));
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn replay_returns_the_same_job_and_charges_once() {
    let h = Harness::new().await;
    let user = h.user();
    let body = edit_body(&h, &user).await;
    let first = h.submit(&user, Some("replay-key"), &body).await;
    let before = h.balance(&user).await;

    // Same meaning, other formatting: key order, whitespace, an explicit default.
    let mut reformatted = body.clone();
    reformatted["strength"] = json!("balanced");
    reformatted["style"] = json!("  embroidery ");
    let replay = h.submit(&user, Some("replay-key"), &reformatted).await;

    assert_eq!(first.status, StatusCode::ACCEPTED);
    assert_eq!(replay.status, StatusCode::OK, "{replay:?}");
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.str("id"), first.str("id"));
    assert_eq!(h.balance(&user).await, before, "a replay charges nothing");
    assert_eq!(debits(&h.ledger(&user).await), 1);
}

#[tokio::test]
async fn replay_with_other_body_is_409_and_charges_nothing() {
    let h = Harness::new().await;
    let user = h.user();
    let body = edit_body(&h, &user).await;
    let first = h.submit(&user, Some("conflict-key"), &body).await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    let before = h.balance(&user).await;

    let mut other = body.clone();
    other["style"] = json!("origami");
    let res = h.submit(&user, Some("conflict-key"), &other).await;

    assert_eq!(res.status, StatusCode::CONFLICT);
    assert_eq!(res.code(), "IDEMPOTENCY_CONFLICT");
    assert_eq!(res.header("content-type"), Some("application/problem+json"));
    assert_eq!(h.balance(&user).await, before);
    assert_eq!(debits(&h.ledger(&user).await), 1);
    let job = h
        .get(&user, &format!("/v1/edits/{}", first.str("id")))
        .await;
    assert_eq!(
        job.body["settings"]["style"], "embroidery",
        "the original job is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_submits_with_one_key_make_one_job_and_one_debit() {
    let h = Harness::new().await;
    let user = h.user();
    let body = edit_body(&h, &user).await;
    let before = h.balance(&user).await;

    let replies = join_all((0..64).map(|_| {
        let (h, user, body) = (h.clone(), user.clone(), body.clone());
        tokio::spawn(async move { h.submit(&user, Some("one-key"), &body).await })
    }))
    .await;

    let replies: Vec<_> = replies
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let created = replies
        .iter()
        .filter(|r| r.status == StatusCode::ACCEPTED)
        .count();
    let replayed = replies
        .iter()
        .filter(|r| r.status == StatusCode::OK)
        .count();
    assert_eq!(
        (created, replayed),
        (1, 63),
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    let ids: std::collections::BTreeSet<String> = replies.iter().map(|r| r.str("id")).collect();
    assert_eq!(ids.len(), 1, "every reply names the same job");
    let rows = h.ledger(&user).await;
    assert_eq!(debits(&rows), 1);
    let price = replies[0].body["credits"]
        .as_i64()
        .expect("the job's price");
    assert_eq!(h.balance(&user).await, before - price);
    h.assert_audit_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_submits_against_a_balance_for_37_accept_exactly_37() {
    let mut config = Harness::config();
    config.limits.max_in_flight = 1000;
    // 200 requests of one user at once on purpose: the request budget is not what is tested.
    config.limits.requests_per_window = 1_000_000;
    let h = Harness::with_config(config).await;
    let user = h.user();
    let body = edit_body(&h, &user).await;
    let price = h.quote(&user, &body).await.body["credits"]
        .as_i64()
        .expect("the quote's price");
    h.fund_to(&user, 37 * price).await;

    let replies = join_all((0..200).map(|i| {
        let (h, user, body) = (h.clone(), user.clone(), body.clone());
        tokio::spawn(async move { h.submit(&user, Some(&format!("k-{i}")), &body).await })
    }))
    .await;

    let statuses: Vec<StatusCode> = replies
        .into_iter()
        .map(|r| r.map(|r| r.status).unwrap_or(StatusCode::IM_A_TEAPOT))
        .collect();
    let accepted = statuses
        .iter()
        .filter(|s| **s == StatusCode::ACCEPTED)
        .count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::PAYMENT_REQUIRED)
        .count();
    assert_eq!((accepted, refused), (37, 163), "{statuses:?}");
    assert_eq!(h.balance(&user).await, 0);
    assert_eq!(debits(&h.ledger(&user).await), 37);
    let account = h.account(&user).await;
    assert_eq!(account.body["in_flight"], 37);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn an_overdraft_leaves_no_job_no_ledger_row_and_no_balance_change() {
    let h = Harness::new().await;
    let user = h.user();
    let mut body = edit_body(&h, &user).await;
    body["target"] = json!("background");
    let reference = h.upload(&user, "style_reference", Harness::png(4, 4)).await;
    body["style_reference_asset_id"] = json!(reference);
    // Spend the signup grant down to less than the price.
    let cheap = json!({ "style": "origami", "target": "pet", "original_asset_id": body["original_asset_id"] });
    assert_eq!(
        h.submit(&user, Some("spend"), &cheap).await.status,
        StatusCode::ACCEPTED
    );
    let before = h.balance(&user).await;
    let rows_before = h.ledger(&user).await.len();

    let res = h.submit(&user, Some("overdraft"), &body).await;

    assert_eq!(res.status, StatusCode::PAYMENT_REQUIRED, "{res:?}");
    assert_eq!(res.code(), "INSUFFICIENT_CREDITS");
    assert_eq!(res.body["balance"].as_i64(), Some(before));
    assert_eq!(h.balance(&user).await, before);
    assert_eq!(h.ledger(&user).await.len(), rows_before);
    let jobs = h.get(&user, "/v1/edits").await;
    assert_eq!(
        jobs.body["items"].as_array().map(Vec::len),
        Some(1),
        "only the first job exists"
    );
    // The same key later, with money, is a fresh request (nothing was stored under it).
    h.fund_to(&user, 100).await;
    assert_eq!(
        h.submit(&user, Some("overdraft"), &body).await.status,
        StatusCode::ACCEPTED
    );
    h.assert_audit_clean().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_queue_send_still_returns_the_job_queued_and_logs_deferred() {
    let mut config = Harness::config();
    config.resources.queue_url = format!("{}-does-not-exist", config.resources.queue_url);
    let h = Harness::with_config(config).await;
    let user = h.user();
    let body = edit_body(&h, &user).await;

    let (logs, _guard) = capture_logs();
    let res = h.submit(&user, Some("no-queue"), &body).await;

    assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    assert_eq!(res.str("status"), "queued");
    let stored = h.get(&user, &format!("/v1/edits/{}", res.str("id"))).await;
    assert_eq!(stored.str("status"), "queued");
    let text = logs.text();
    let line = text
        .lines()
        .find(|l| l.contains("queue_dispatch_deferred"))
        .unwrap_or_else(|| panic!("no event in {text}"));
    assert!(
        line.contains(&res.str("id")),
        "the event names the job: {line}"
    );
}

#[tokio::test]
async fn a_user_at_the_in_flight_limit_gets_429_and_is_not_charged_and_others_are_unaffected() {
    let mut config = Harness::config();
    config.limits.max_in_flight = 2;
    let h = Harness::with_config(config).await;
    let (busy, other) = (h.user(), h.user());
    let body = edit_body(&h, &busy).await;
    h.fund_to(&busy, 100).await;
    for k in ["a", "b"] {
        assert_eq!(
            h.submit(&busy, Some(k), &body).await.status,
            StatusCode::ACCEPTED
        );
    }
    let before = h.balance(&busy).await;

    let res = h.submit(&busy, Some("c"), &body).await;

    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(res.code(), "TOO_MANY_IN_FLIGHT");
    assert!(
        res.header("retry-after")
            .is_some_and(|v| v.parse::<u32>().is_ok())
    );
    assert_eq!(h.balance(&busy).await, before);
    assert_eq!(debits(&h.ledger(&busy).await), 2);
    let other_body = edit_body(&h, &other).await;
    assert_eq!(
        h.submit(&other, Some("c"), &other_body).await.status,
        StatusCode::ACCEPTED
    );
    h.assert_audit_clean().await;
}

/// The in-flight limit is named as such even when the balance is exactly the price: more
/// credits would not help (mutation pass: `<` → `<=` in `debit_refusal` called it a 402).
#[tokio::test]
async fn at_the_in_flight_limit_with_exactly_the_price_left_the_refusal_is_the_limit() {
    let mut config = Harness::config();
    config.limits.max_in_flight = 2;
    let h = Harness::with_config(config).await;
    let busy = h.user();
    let body = edit_body(&h, &busy).await;
    let first = h.submit(&busy, Some("a"), &body).await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    let price = first.body["credits"]
        .as_i64()
        .unwrap_or_else(|| panic!("the job's price: {first:?}"));
    h.fund_to(&busy, 2 * price).await;
    assert_eq!(
        h.submit(&busy, Some("b"), &body).await.status,
        StatusCode::ACCEPTED
    );
    assert_eq!(h.balance(&busy).await, price);

    let res = h.submit(&busy, Some("c"), &body).await;

    assert_eq!(
        (res.status, res.code()),
        (StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_IN_FLIGHT"),
        "{res:?}"
    );
    assert_eq!(h.balance(&busy).await, price);
    assert_eq!(debits(&h.ledger(&busy).await), 2);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_missing_asset_is_404_and_changes_nothing() {
    let h = Harness::new().await;
    let (user, stranger) = (h.user(), h.user());
    let theirs = h.upload(&stranger, "original", Harness::png(4, 4)).await;
    let before = h.balance(&user).await;
    let cases = [
        (
            "another user's asset",
            json!({ "style": "origami", "target": "pet", "original_asset_id": theirs }),
        ),
        (
            "never uploaded",
            json!({ "style": "origami", "target": "pet", "original_asset_id": atelier_shared::domain::AssetId::generate().as_str() }),
        ),
    ];
    for (why, body) in cases {
        let res = h
            .submit(&user, Some(why.replace(' ', "-").as_str()), &body)
            .await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{why}: {res:?}");
        assert_eq!(res.code(), "ASSET_NOT_FOUND", "{why}");
    }
    // An upload of another kind does not stand in for a mask.
    let original = h.upload(&user, "original", Harness::png(4, 4)).await;
    let body = json!({ "style": "origami", "target": "brush", "original_asset_id": original, "mask_asset_id": original });
    assert_eq!(
        h.submit(&user, Some("mask-kind"), &body).await.code(),
        "ASSET_NOT_FOUND"
    );
    assert_eq!(h.balance(&user).await, before);
    assert!(
        h.ledger(&user)
            .await
            .iter()
            .all(|r| r.kind == LedgerKind::Grant)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_calls_create_the_account_and_its_grant_once() {
    let h = Harness::new().await;
    let user = h.user();

    let replies = join_all((0..16).map(|_| {
        let (h, user) = (h.clone(), user.clone());
        tokio::spawn(async move { h.account(&user).await })
    }))
    .await;

    assert!(
        replies
            .iter()
            .all(|r| r.as_ref().is_ok_and(|r| r.status == StatusCode::OK))
    );
    let rows = h.ledger(&user).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].reference, "grant:signup");
    assert_eq!(
        h.balance(&user).await,
        atelier_shared::domain::pricing::SIGNUP_GRANT.get()
    );
}

#[tokio::test]
async fn an_admin_grant_is_applied_once_per_reason_and_the_books_balance() {
    let h = Harness::new().await;
    let user = h.user();
    let before = h.balance(&user).await;

    use atelier_shared::domain::{Credits, GrantReason, Operator};
    use atelier_shared::services::accounts::{self, GrantRequest, GrantResult};
    let req = GrantRequest {
        credits: Credits::new(7),
        reason: GrantReason::parse("promo-x").unwrap_or_else(|e| panic!("{e}")),
        operator: Operator::parse("ops").unwrap_or_else(|e| panic!("{e}")),
        create_account: false,
    };
    let first = accounts::grant(&h.app, &user, &req).await;
    let again = accounts::grant(&h.app, &user, &req).await;

    assert!(matches!(first, Ok(GrantResult::Granted)), "{first:?}");
    assert!(
        matches!(again, Ok(GrantResult::AlreadyGranted { .. })),
        "{again:?}"
    );
    assert_eq!(h.balance(&user).await, before + 7);
    let rows = h.ledger(&user).await;
    assert_eq!(
        rows.iter()
            .filter(|r| r.reference == "grant:admin:promo-x")
            .count(),
        1
    );
    assert_eq!(
        rows.iter().map(|r| r.amount.get()).sum::<i64>(),
        before + 7,
        "balance == sum of the ledger"
    );
    h.assert_audit_clean().await;
}

/// A submit whose transaction committed while its reply was lost, and whose SDK retry then
/// met a conflict: the store's own retry carries the same `ClientRequestToken`, so DynamoDB
/// answers it as that commit. The person gets `202` (not a replay of their own request), one
/// debit, and the job is queued at once instead of waiting for the sweeper's re-send.
#[tokio::test]
async fn a_submit_whose_committed_reply_was_lost_is_answered_created_and_queued_at_once() {
    use atelier_wire_proxy::{FaultKind, FaultPlan, Operation, Service};
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    let body = edit_body(&h, &user).await;
    let before = h.balance(&user).await;
    let resources = &h.app.config.resources;
    // The submit's transaction: reply dropped after the commit, the SDK's resend refused as a
    // conflict, the store's retry forwarded.
    let tx = Operation::new(Service::DynamoDb, "TransactWriteItems");
    let want = [
        Some(FaultKind::DropAfterForward),
        Some(FaultKind::TransactionConflict),
        None,
    ];
    let plan = |seed| {
        FaultPlan::new(seed)
            .rate(FaultKind::TransactionConflict, 0.3)
            .rate(FaultKind::DropAfterForward, 0.3)
            .only(["TransactWriteItems"])
    };
    let seed = (0..10_000u64)
        .find(|s| (0..3).all(|n| plan(*s).decide(&tx, n).error == want[n as usize]))
        .unwrap_or_else(|| panic!("no seed gives {want:?}"));
    let (faulty, proxy) = h.through_wire(Some(plan(seed))).await;

    let res = faulty.submit(&user, Some("k-lost"), &body).await;

    assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    let injected: Vec<_> = proxy
        .faults()
        .iter()
        .map(|f| (f.kind, f.upstream_status))
        .collect();
    assert_eq!(
        injected,
        [
            (FaultKind::DropAfterForward, Some(200)),
            (FaultKind::TransactionConflict, None)
        ],
        "the commit's reply was lost, then the resend met a conflict"
    );
    assert_eq!(
        proxy.counts().get(Service::DynamoDb, "TransactWriteItems"),
        3
    );
    let ledger = h.ledger(&user).await;
    assert_eq!(debits(&ledger), 1);
    let balance = h.balance(&user).await;
    assert_eq!(balance, before - res.body["credits"].as_i64().unwrap_or(0));
    let sum: i64 = ledger.iter().map(|r| r.amount.get()).sum();
    assert_eq!(balance, sum, "the balance is the sum of the ledger");
    let queued = h
        .clients
        .sqs
        .receive_message()
        .queue_url(&resources.queue_url)
        .wait_time_seconds(2)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let bodies: Vec<_> = queued.messages().iter().filter_map(|m| m.body()).collect();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert!(bodies[0].contains(&res.str("id")), "{bodies:?}");
}
