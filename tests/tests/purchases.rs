//! Buying credits against ministack and the stand-in Stripe: the checkout, the signed webhook,
//! one ledger row per payment however often and in whatever order Stripe delivers, refunds
//! and disputes that never drive a balance below zero, and the hold they leave.

use atelier_shared::adapters::payments::signature;
use atelier_shared::domain::{LedgerKind, Operator, UserId};
use atelier_shared::services::payments;
use atelier_shared::store::payments::{PurchaseOutcome, ReleaseOutcome};
use atelier_shared::store::schema::LedgerItem;
use atelier_tests::stripe::{Event, StripeStandIn, WEBHOOK_SECRET, unix_now};
use atelier_tests::{Harness, capture_logs};
use futures::future::join_all;
use http::StatusCode;
use serde_json::json;

async fn setup() -> (Harness, StripeStandIn) {
    let stripe = StripeStandIn::start().await;
    let h = Harness::new().await.with_stripe(&stripe);
    (h, stripe)
}

fn rows_of(rows: &[LedgerItem], kind: LedgerKind) -> Vec<&LedgerItem> {
    rows.iter().filter(|r| r.kind == kind).collect()
}

/// Submits one edit (a fresh upload); the reply.
async fn submit_edit(h: &Harness, user: &UserId, key: &str) -> atelier_tests::Reply {
    let original = h.upload(user, "original", Harness::png(8, 8)).await;
    let body = json!({ "style": "origami", "target": "pet", "original_asset_id": original });
    h.submit(user, Some(key), &body).await
}

#[tokio::test]
async fn packs_are_public_with_prices_in_minor_units() {
    let (h, _stripe) = setup().await;

    let res = h.packs().await;

    assert_eq!(res.status, StatusCode::OK, "{res:?}");
    let starter = &res.body["items"][0];
    assert_eq!(starter["id"], "starter");
    assert_eq!(starter["credits"], 50);
    assert_eq!(starter["amount"], 500);
    assert_eq!(starter["currency"], "usd");
}

#[tokio::test]
async fn checkout_creates_a_payment_session_bound_to_the_user_and_the_pack() {
    let (h, stripe) = setup().await;
    let user = h.user();

    let res = h.checkout(&user, "c-1", &json!({ "pack": "studio" })).await;

    assert_eq!(res.status, StatusCode::CREATED, "{res:?}");
    assert!(res.str("id").starts_with("cs_test_"));
    assert!(res.str("url").starts_with(&stripe.base_url));
    let session: serde_json::Value = reqwest::Client::new()
        .get(format!(
            "{}/v1/checkout/sessions/{}",
            stripe.base_url,
            res.str("id")
        ))
        .bearer_auth("sk_test_reader")
        .send()
        .await
        .expect("stand-in")
        .json()
        .await
        .expect("json");
    assert_eq!(session["mode"], "payment");
    assert_eq!(session["amount_total"], 2000);
    assert_eq!(session["client_reference_id"], user.as_str());
    assert_eq!(session["metadata"]["user_id"], user.as_str());
    assert_eq!(session["metadata"]["pack"], "studio");
    assert_eq!(session["metadata"]["credits"], "250");
    assert_eq!(
        session["success_url"],
        "http://localhost:8787/?checkout=success"
    );
}

#[tokio::test]
async fn checkout_replay_is_the_same_session_and_another_body_under_the_key_is_409() {
    let (h, _stripe) = setup().await;
    let user = h.user();
    let first = h
        .checkout(&user, "c-replay", &json!({ "pack": "starter" }))
        .await;

    let replay = h
        .checkout(&user, "c-replay", &json!({ "pack": "starter" }))
        .await;
    let other = h
        .checkout(&user, "c-replay", &json!({ "pack": "studio" }))
        .await;
    let someone_else = h
        .checkout(&h.user(), "c-replay", &json!({ "pack": "starter" }))
        .await;

    assert_eq!(first.status, StatusCode::CREATED, "{first:?}");
    assert_eq!(replay.status, StatusCode::OK, "{replay:?}");
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.str("id"), first.str("id"));
    assert_eq!(other.status, StatusCode::CONFLICT, "{other:?}");
    assert_eq!(other.code(), "IDEMPOTENCY_CONFLICT");
    // Keys are per user: another user's same key is a new session.
    assert_eq!(someone_else.status, StatusCode::CREATED, "{someone_else:?}");
    assert_ne!(someone_else.str("id"), first.str("id"));
}

#[tokio::test]
async fn checkout_refuses_unknown_packs_and_return_urls_outside_the_allow_list() {
    let (h, _stripe) = setup().await;
    let user = h.user();
    for (i, (body, field, why)) in [
        (json!({}), "pack", "no pack"),
        (json!({ "pack": "gold" }), "pack", "unknown pack"),
        (
            json!({ "pack": "starter", "success_url": "https://evil.example/" }),
            "success_url",
            "foreign host",
        ),
        (
            json!({ "pack": "starter", "cancel_url": "http://localhost:8787.evil.example/" }),
            "cancel_url",
            "look-alike host",
        ),
        (
            json!({ "pack": "starter", "success_url": "http://user@localhost:8787/" }),
            "success_url",
            "credentials",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let res = h.checkout(&user, &format!("c-{i}"), &body).await;
        assert_eq!(
            res.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{why}: {res:?}"
        );
        assert_eq!(res.body["errors"][0]["field"], field, "{why}: {res:?}");
    }
    let req = http::Request::post("/v1/checkout")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(r#"{"pack":"starter"}"#))
        .expect("request");
    let no_key = h.call(Some(&user), req).await;
    assert_eq!(no_key.code(), "IDEMPOTENCY_KEY_REQUIRED");
}

/// The session as Stripe keeps it (`GET /v1/checkout/sessions/{id}`).
async fn session_at_stripe(stripe: &StripeStandIn, id: &str) -> serde_json::Value {
    let res = reqwest::Client::new()
        .get(format!("{}/v1/checkout/sessions/{id}", stripe.base_url))
        .bearer_auth("sk_test_reader")
        .send()
        .await
        .unwrap_or_else(|e| panic!("stand-in: {e}"));
    res.json().await.unwrap_or_else(|e| panic!("json: {e}"))
}

#[tokio::test]
async fn a_checkout_sends_the_user_back_to_its_own_return_urls_under_the_allow_list() {
    let (h, stripe) = setup().await;
    let user = h.user();
    let body = json!({
        "pack": "starter",
        "success_url": "http://localhost:8787/billing/done?order=7",
        "cancel_url": "http://localhost:8787/billing/",
    });

    let res = h.checkout(&user, "c-own-urls", &body).await;

    assert_eq!(res.status, StatusCode::CREATED, "{res:?}");
    let session = session_at_stripe(&stripe, &res.str("id")).await;
    assert_eq!(
        session["success_url"],
        "http://localhost:8787/billing/done?order=7"
    );
    assert_eq!(session["cancel_url"], "http://localhost:8787/billing/");
}

#[tokio::test]
async fn a_return_url_of_2048_characters_is_taken_and_one_character_more_is_422() {
    let (h, stripe) = setup().await;
    let user = h.user();
    let prefix = "http://localhost:8787/";
    let max = atelier_shared::services::payments::MAX_URL_LEN;
    let longest = format!("{prefix}{}", "a".repeat(max - prefix.len()));
    let too_long = format!("{longest}a");

    let taken = h
        .checkout(
            &user,
            "c-2048",
            &json!({ "pack": "starter", "success_url": longest }),
        )
        .await;
    let refused = h
        .checkout(
            &user,
            "c-2049",
            &json!({ "pack": "starter", "success_url": too_long }),
        )
        .await;

    assert_eq!(taken.status, StatusCode::CREATED, "{taken:?}");
    let session = session_at_stripe(&stripe, &taken.str("id")).await;
    assert_eq!(session["success_url"], longest.as_str());
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{refused:?}"
    );
    assert_eq!(refused.body["errors"][0]["field"], "success_url");
    assert_eq!(
        stripe.sessions().await.len(),
        1,
        "no session for the refused"
    );
}

#[tokio::test]
async fn a_paid_session_delivered_twenty_times_at_once_grants_its_credits_once() {
    let (h, stripe) = setup().await;
    let user = h.user();
    let before = h.balance(&user).await;
    let checkout = h
        .checkout(&user, "c-20", &json!({ "pack": "starter" }))
        .await;
    let paid = stripe.pay(&checkout.str("id")).await;

    let replies = join_all((0..20).map(|_| h.deliver(&paid))).await;

    assert!(
        replies.iter().all(|r| r.status == StatusCode::OK),
        "{replies:?}"
    );
    let granted = replies
        .iter()
        .filter(|r| r.body["outcome"] == "granted")
        .count();
    assert_eq!(granted, 1, "{replies:?}");
    assert_eq!(h.balance(&user).await, before + 50);
    let rows = h.ledger(&user).await;
    let purchases = rows_of(&rows, LedgerKind::Purchase);
    assert_eq!(purchases.len(), 1);
    assert_eq!(
        purchases[0].reference,
        format!("purchase:{}", checkout.str("id"))
    );
    let ledger = h.get(&user, "/v1/account/ledger").await;
    assert_eq!(ledger.body["items"][0]["kind"], "purchase");
    assert_eq!(ledger.body["items"][0]["amount"], 50);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_refund_ahead_of_its_payment_is_kept_and_twenty_deliveries_after_it_grant_nothing() {
    let (h, stripe) = setup().await;
    let user = h.user();
    let before = h.balance(&user).await;
    let rows_before = h.ledger(&user).await;
    let checkout = h
        .checkout(&user, "c-mixed", &json!({ "pack": "starter" }))
        .await;
    let paid = stripe.pay(&checkout.str("id")).await;
    let refund = stripe.refund(&paid.object("payment_intent")).await;

    // The refund first (Stripe does not promise order), then everything at once.
    let early = h.deliver(&refund).await;
    let deliveries = (0..20).map(|i| {
        let (h, paid, refund) = (&h, &paid, &refund);
        async move {
            if i % 4 == 0 {
                h.deliver(refund).await
            } else {
                h.deliver(paid).await
            }
        }
    });
    let replies = join_all(deliveries).await;

    assert_eq!(early.status, StatusCode::OK, "{early:?}");
    assert_eq!(early.body["outcome"], "reversed_first");
    for (i, r) in replies.iter().enumerate() {
        let expected = if i % 4 == 0 {
            "already_reversed"
        } else {
            "purchase_reversed_first"
        };
        assert_eq!(r.status, StatusCode::OK, "{r:?}");
        assert_eq!(r.body["outcome"], expected, "{r:?}");
    }
    assert_eq!(h.ledger(&user).await, rows_before);
    assert_eq!(h.balance(&user).await, before);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_refund_after_the_credits_were_spent_stops_at_zero_and_holds_the_account_until_released()
{
    let (h, stripe) = setup().await;
    let user = h.user();
    let paid = h.buy(&stripe, &user, "starter").await;
    let mut spent = Vec::new();
    for i in 0..3 {
        let res = submit_edit(&h, &user, &format!("spend-{i}")).await;
        assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
        spent.push(res.str("id"));
    }
    let left = h.balance(&user).await;
    assert!(left < 50, "the edits spent some of the pack: {left}");

    let refund = stripe.refund(&paid.object("payment_intent")).await;
    let res = h.deliver(&refund).await;
    let again = h.deliver(&refund).await;
    let refused = submit_edit(&h, &user, "after-refund").await;

    assert_eq!(res.status, StatusCode::OK, "{res:?}");
    assert_eq!(res.body["outcome"], "reversed");
    assert_eq!(res.body["credits"], -left);
    assert_eq!(res.body["shortfall"], 50 - left);
    assert_eq!(again.body["outcome"], "already_reversed");
    assert_eq!(h.balance(&user).await, 0);
    let rows = h.ledger(&user).await;
    let reversal = rows_of(&rows, LedgerKind::PurchaseReversal);
    assert_eq!(reversal.len(), 1);
    assert_eq!(reversal[0].shortfall.map(|s| s.get()), Some(50 - left));
    assert_eq!(h.account(&user).await.body["on_hold"], true);
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{refused:?}");
    assert_eq!(refused.code(), "ACCOUNT_ON_HOLD");
    h.assert_audit_clean().await;

    let operator = Operator::parse("jane").expect("operator");
    let released = payments::release_hold(&h.app, &user, &operator).await;
    let twice = payments::release_hold(&h.app, &user, &operator).await;
    // A queued edit canceled gives its credits back, enough for a new one.
    assert_eq!(h.cancel(&user, &spent[0]).await.status, StatusCode::OK);
    let accepted = submit_edit(&h, &user, "after-release").await;

    assert!(
        matches!(released, Ok(ReleaseOutcome::Released(_))),
        "{released:?}"
    );
    assert!(matches!(twice, Ok(ReleaseOutcome::NotOnHold)), "{twice:?}");
    assert_eq!(h.account(&user).await.body["on_hold"], false);
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{accepted:?}");
    h.assert_audit_clean().await;
}

/// The operator learns of a hold from the log (`account_put_on_hold`, with the shortfall): a
/// refund the balance covers logs none, one after the credits were spent does.
#[tokio::test]
async fn a_refund_the_balance_covers_holds_nothing_and_one_after_spending_logs_the_hold() {
    let (h, stripe) = setup().await;
    let user = h.user();
    let before = h.balance(&user).await;
    let covered = h.buy(&stripe, &user, "starter").await;
    let (logs, _guard) = capture_logs();

    let first = h
        .deliver(&stripe.refund(&covered.object("payment_intent")).await)
        .await;
    let after_first = logs.text();
    let balance_after_first = h.balance(&user).await;
    let on_hold_after_first = h.account(&user).await.body["on_hold"].clone();
    let spent = h.buy(&stripe, &user, "starter").await;
    h.spend(&user, 3).await;
    let left = h.balance(&user).await;
    assert!(left < 50, "the edits spent into the second pack: {left}");
    let second = h
        .deliver(&stripe.refund(&spent.object("payment_intent")).await)
        .await;

    assert_eq!(first.body["outcome"], "reversed", "{first:?}");
    assert_eq!(first.body["credits"], -50);
    assert_eq!(first.body["shortfall"], 0);
    assert_eq!(balance_after_first, before);
    assert_eq!(on_hold_after_first, false);
    assert!(
        !after_first.contains("account_put_on_hold"),
        "no hold to log: {after_first}"
    );
    assert_eq!(second.body["outcome"], "reversed", "{second:?}");
    assert_eq!(second.body["shortfall"], 50 - left);
    assert_eq!(h.account(&user).await.body["on_hold"], true);
    let text = logs.text();
    let line = text
        .lines()
        .find(|l| l.contains("account_put_on_hold"))
        .unwrap_or_else(|| panic!("the hold is not logged: {text}"));
    assert!(line.contains(user.as_str()), "it names the user: {line}");
    assert!(
        line.contains(&format!("\"shortfall\":{}", 50 - left)),
        "and the shortfall: {line}"
    );
    assert_eq!(h.balance(&user).await, 0, "never below zero");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_dispute_takes_the_credits_back_once_and_a_won_dispute_gives_them_back_and_lifts_the_hold()
 {
    let (h, stripe) = setup().await;
    let user = h.user();
    let paid = h.buy(&stripe, &user, "starter").await;
    let pi = paid.object("payment_intent");
    let res = submit_edit(&h, &user, "spend").await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    let left = h.balance(&user).await;

    let won_too_early = {
        let dispute = stripe.dispute(&pi).await;
        let closed = stripe.close_dispute(&dispute.object("id"), "won").await;
        let early = h.deliver(&closed).await;
        let created = h.deliver(&dispute).await;
        let refund_too = h.deliver(&stripe.refund(&pi).await).await;
        assert_eq!(created.body["outcome"], "reversed", "{created:?}");
        // A refund of a payment already taken back takes nothing more.
        assert_eq!(
            refund_too.body["outcome"], "already_reversed",
            "{refund_too:?}"
        );
        assert_eq!(h.balance(&user).await, left - left.min(50));
        assert_eq!(h.account(&user).await.body["on_hold"], left < 50);
        let won = h.deliver(&closed).await;
        assert_eq!(won.body["outcome"], "restored", "{won:?}");
        assert_eq!(h.deliver(&closed).await.body["outcome"], "already_restored");
        early
    };

    assert_eq!(won_too_early.code(), "PAYMENT_NOT_RECORDED");
    assert_eq!(h.balance(&user).await, left);
    assert_eq!(h.account(&user).await.body["on_hold"], false);
    let rows = h.ledger(&user).await;
    assert_eq!(rows_of(&rows, LedgerKind::ReversalRestored).len(), 1);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_won_dispute_keeps_the_hold_while_another_reversal_is_still_owed() {
    let stripe = StripeStandIn::start().await;
    // Room for enough edits in flight to spend into the second pack.
    let h = Harness::isolated(|l| l.max_in_flight = 20)
        .await
        .with_stripe(&stripe);
    let user = h.user();
    let first = h.buy(&stripe, &user, "starter").await;
    let second = h.buy(&stripe, &user, "starter").await;
    while h.balance(&user).await >= 50 {
        let res = submit_edit(&h, &user, &format!("spend-{}", h.balance(&user).await)).await;
        assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    }
    // Both payments disputed: the first takes what is left, the second takes nothing; both
    // leave a shortfall.
    let mut closed = Vec::new();
    for paid in [&first, &second] {
        let dispute = stripe.dispute(&paid.object("payment_intent")).await;
        let res = h.deliver(&dispute).await;
        assert_eq!(res.body["outcome"], "reversed", "{res:?}");
        assert!(res.body["shortfall"].as_i64() > Some(0), "{res:?}");
        closed.push(stripe.close_dispute(&dispute.object("id"), "won").await);
    }

    let first_won = h.deliver(&closed[0]).await;
    let held_after_first = h.account(&user).await.body["on_hold"].clone();
    let refused = submit_edit(&h, &user, "between-the-wins").await;
    let second_won = h.deliver(&closed[1]).await;

    assert_eq!(first_won.body["outcome"], "restored", "{first_won:?}");
    assert_eq!(held_after_first, true, "the second shortfall is still owed");
    assert_eq!(refused.code(), "ACCOUNT_ON_HOLD", "{refused:?}");
    assert_eq!(second_won.body["outcome"], "restored", "{second_won:?}");
    assert_eq!(h.account(&user).await.body["on_hold"], false);
    let rows = h.ledger(&user).await;
    assert_eq!(rows_of(&rows, LedgerKind::ReversalRestored).len(), 2);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn forged_stale_or_changed_signatures_are_400_and_write_nothing() {
    let (h, stripe) = setup().await;
    let user = h.user();
    let before = h.balance(&user).await;
    let checkout = h
        .checkout(&user, "c-forged", &json!({ "pack": "starter" }))
        .await;
    let paid = stripe.pay(&checkout.str("id")).await;
    let body = paid.payload.as_bytes();
    let now = unix_now();
    let mut changed = body.to_vec();
    let at = changed.len() / 2;
    changed[at] ^= 0x01;

    let cases: Vec<(&str, Vec<u8>, Option<String>)> = vec![
        ("no signature", body.to_vec(), None),
        ("not a signature", body.to_vec(), Some("hello".into())),
        (
            "another secret",
            body.to_vec(),
            Some(signature::header(body, "whsec_forger", now)),
        ),
        (
            "stale",
            body.to_vec(),
            Some(signature::header(body, WEBHOOK_SECRET, now - 301)),
        ),
        (
            "one byte changed",
            changed.clone(),
            Some(signature::header(body, WEBHOOK_SECRET, now)),
        ),
        (
            "v0 only",
            body.to_vec(),
            Some(signature::header(body, WEBHOOK_SECRET, now).replace("v1=", "v0=")),
        ),
    ];
    for (why, payload, header) in cases {
        let res = h.webhook_raw(payload, header.as_deref()).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{why}: {res:?}");
        assert_eq!(res.code(), "SIGNATURE_INVALID", "{why}");
    }

    assert_eq!(h.balance(&user).await, before);
    assert!(rows_of(&h.ledger(&user).await, LedgerKind::Purchase).is_empty());
    assert_eq!(
        h.app
            .store
            .get_payment(&paid.object("payment_intent"))
            .await
            .ok()
            .flatten(),
        None
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn unknown_events_are_200_and_ignored_and_signed_non_events_are_400() {
    let (h, _stripe) = setup().await;
    let other = Event {
        payload: json!({"id": "evt_x", "object": "event", "type": "customer.created", "data": {"object": {"id": "cus_1"}}}).to_string(),
        json: json!(null),
    };
    let garbage = Event {
        payload: "{\"not\": \"an event\"}".to_owned(),
        json: json!(null),
    };

    let ignored = h.deliver(&other).await;
    let malformed = h.deliver(&garbage).await;

    assert_eq!(ignored.status, StatusCode::OK, "{ignored:?}");
    assert_eq!(ignored.body["outcome"], "ignored");
    assert_eq!(malformed.status, StatusCode::BAD_REQUEST, "{malformed:?}");
    assert_eq!(malformed.code(), "MALFORMED_EVENT");
}

/// Stripe's official Node library (pinned in `tests/official-stripe/requirement.txt`,
/// installed by `cargo xtask test`): creates a session on the stand-in, and signs an event
/// with its test-signature helper, which our webhook must accept, and refuse once one byte of
/// the body changes.
#[tokio::test]
async fn stripes_official_library_speaks_to_the_stand_in_and_signs_what_our_webhook_accepts() {
    let modules = std::env::var("ATELIER_STRIPE_NODE_MODULES").unwrap_or_else(|_| {
        panic!("ATELIER_STRIPE_NODE_MODULES is unset: run with `cargo xtask test`")
    });
    let (h, stripe) = setup().await;
    let user = h.user();
    let before = h.balance(&user).await;
    let checkout = h
        .checkout(&user, "c-official", &json!({ "pack": "starter" }))
        .await;
    let paid = stripe.pay(&checkout.str("id")).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/official-stripe/client.cjs");

    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .arg(&stripe.base_url)
        .arg(WEBHOOK_SECRET)
        .arg(paid.object("payment_intent"))
        .env("ATELIER_STRIPE_NODE_MODULES", &modules)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node");
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(paid.payload.as_bytes())
            .await
            .expect("write");
    }
    let out = child.wait_with_output().await.expect("node ran");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let header = answer["header"].as_str().expect("header").to_owned();
    let mut changed = paid.payload.clone().into_bytes();
    let at = changed.len() / 3;
    changed[at] ^= 0x01;

    let altered = h.webhook_raw(changed, Some(&header)).await;
    let balance_after_altered = h.balance(&user).await;
    let accepted = h.webhook_raw(paid.payload.clone(), Some(&header)).await;

    let session = &answer["session"];
    assert!(
        session["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("cs_test_")),
        "{session}"
    );
    assert!(
        session["url"]
            .as_str()
            .is_some_and(|u| u.starts_with(&stripe.base_url)),
        "{session}"
    );
    assert_eq!(session["metadata"]["pack"], "starter");
    assert_eq!(session["amount_total"], 500);
    let refunds = &answer["refunds"];
    assert!(
        refunds[0]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("re_test_")),
        "{refunds}"
    );
    assert_eq!(refunds[0]["id"], refunds[1]["id"], "one refund per key");
    assert_eq!(refunds[0]["amount"], 500);
    assert_eq!(
        stripe.refunds(&paid.object("payment_intent")).await.len(),
        1
    );
    assert_eq!(altered.status, StatusCode::BAD_REQUEST, "{altered:?}");
    assert_eq!(altered.code(), "SIGNATURE_INVALID");
    assert_eq!(balance_after_altered, before);
    assert_eq!(accepted.status, StatusCode::OK, "{accepted:?}");
    assert_eq!(accepted.body["outcome"], "granted");
    assert_eq!(h.balance(&user).await, before + 50);
    h.assert_audit_clean().await;
}

/// A closed account takes no money: the checkout is refused before Stripe is asked.
#[tokio::test]
async fn a_closed_account_opens_no_checkout_and_stripe_sees_no_session() {
    let (h, stripe) = setup().await;
    let user = h.user();
    let before = h.balance(&user).await;
    assert_eq!(h.delete_account(&user).await.status, StatusCode::OK);
    let rows_before = h.ledger(&user).await.len();

    let res = h
        .checkout(&user, "c-closed", &json!({ "pack": "starter" }))
        .await;

    res.assert_problem(StatusCode::FORBIDDEN, "ACCOUNT_CLOSED", "closed account");
    assert!(stripe.sessions().await.is_empty(), "no session at Stripe");
    assert_eq!(h.balance(&user).await, before);
    assert_eq!(h.ledger(&user).await.len(), rows_before);
    h.assert_audit_clean().await;
}

/// A checkout opened before the close and paid after it: refunded once through Stripe's
/// refund API, however often (and however concurrently) Stripe delivers the payment, and
/// recorded once as bought and given back; the balance never moves.
#[tokio::test]
async fn a_checkout_opened_before_the_close_and_paid_after_it_is_refunded_once_and_grants_nothing()
{
    let (h, stripe) = setup().await;
    let user = h.user();
    let checkout = h
        .checkout(&user, "c-race", &json!({ "pack": "starter" }))
        .await;
    assert_eq!(checkout.status, StatusCode::CREATED, "{checkout:?}");
    assert_eq!(h.delete_account(&user).await.status, StatusCode::OK);
    let before = h.balance(&user).await;
    let paid = stripe.pay(&checkout.str("id")).await;
    let payment = paid.object("payment_intent");

    let first = join_all((0..5).map(|_| h.deliver(&paid))).await;
    let replayed = h.deliver(&paid).await;
    let refunded_events = stripe.events_of("charge.refunded").await;
    let own_refund = h.deliver(&refunded_events[0]).await;

    assert!(
        first.iter().all(|r| r.status == StatusCode::OK),
        "{first:?}"
    );
    let outcomes: Vec<&str> = first
        .iter()
        .map(|r| r.body["outcome"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        outcomes.iter().filter(|o| **o == "refunded").count(),
        1,
        "{outcomes:?}"
    );
    assert_eq!(replayed.status, StatusCode::OK, "{replayed:?}");
    assert_ne!(replayed.body["outcome"], "refunded");
    let refunds = stripe.refunds(&payment).await;
    assert_eq!(refunds.len(), 1, "one refund at Stripe: {refunds:?}");
    assert_eq!(refunds[0]["amount"], 500);
    assert_eq!(refunds[0]["status"], "succeeded");
    assert_eq!(refunded_events.len(), 1);
    assert_eq!(own_refund.status, StatusCode::OK, "{own_refund:?}");
    assert_eq!(own_refund.body["outcome"], "already_reversed");
    assert_eq!(h.balance(&user).await, before);
    let rows = h.ledger(&user).await;
    let bought = rows_of(&rows, LedgerKind::Purchase);
    let given_back = rows_of(&rows, LedgerKind::PurchaseReversal);
    assert_eq!(bought.len(), 1);
    assert_eq!(bought[0].amount.get(), 50);
    assert_eq!(given_back.len(), 1);
    assert_eq!(given_back[0].amount.get(), -50);
    let refund_id = refunds[0]["id"].as_str().unwrap_or_default();
    assert_eq!(
        given_back[0].reason.as_deref(),
        Some(format!("account_closed_refund:{refund_id}").as_str())
    );
    assert_eq!(h.account(&user).await.body["on_hold"], false);
    h.assert_audit_clean().await;
}

/// The grant's own transaction refuses a closed account, so a close that commits between a
/// check and the grant cannot let a purchase through.
#[tokio::test]
async fn the_purchase_transaction_itself_refuses_a_closed_account() {
    let (h, _stripe) = setup().await;
    let user = h.user();
    let before = h.balance(&user).await;
    assert_eq!(h.delete_account(&user).await.status, StatusCode::OK);
    let now = atelier_shared::clock::format(atelier_shared::clock::now());
    let payment = atelier_shared::store::schema::PaymentItem {
        payment_id: format!("pi_race_{}", ulid::Ulid::new()),
        user_id: user.clone(),
        session_id: format!("cs_race_{}", ulid::Ulid::new()),
        pack: "starter".to_owned(),
        credits: atelier_shared::domain::Credits::new(50),
        created_at: now.clone(),
    };
    let row = LedgerItem::new(
        &user,
        format!("purchase:{}", payment.session_id),
        payment.credits,
        LedgerKind::Purchase,
        &now,
    );

    let outcome = h.app.store.purchase(&payment, &row).await;

    assert!(
        matches!(outcome, Ok(PurchaseOutcome::AccountClosed)),
        "{outcome:?}"
    );
    assert_eq!(h.balance(&user).await, before);
    let recorded = h.app.store.get_payment(&payment.payment_id).await;
    assert!(matches!(recorded, Ok(None)), "{recorded:?}");
    h.assert_audit_clean().await;
}
