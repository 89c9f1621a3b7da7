//! Buying credits in the Android app against ministack and the stand-in Google: a purchase
//! token grants its pack once however often (and however concurrently) it is posted, and is
//! consumed; a voided purchase pushed by Pub/Sub takes it back once and never below zero; a
//! push whose OIDC token is not Google's for this subscription, and a purchase Google does
//! not vouch for, write nothing. The stand-in is first shown to be what Google's own clients
//! speak to and believe.

use atelier_shared::adapters::payments::google::{KeySource, PublisherError, PushAuthError};
use atelier_shared::adapters::payments::setup;
use atelier_shared::config::UnboundPurchases;
use atelier_shared::domain::{LedgerKind, Packs, UserId};
use atelier_shared::store::schema::LedgerItem;
use atelier_tests::google_play::{
    self, GoogleStandIn, Purchase, PushToken, STARTER, bad_push_tokens, push, submit, submit_body,
    voided,
};
use atelier_tests::{Harness, Reply};
use futures::future::join_all;
use http::StatusCode;
use serde_json::{Value, json};

const STUDIO: &str = "studio_pack";

/// A harness whose API reads the stand-in's service-account key from Secrets Manager at
/// cold start, as the deployed API does, and sells the starter pack as [`STARTER`].
async fn setup(google: &GoogleStandIn) -> Harness {
    setup_with(google, UnboundPurchases::Refuse).await
}

/// [`setup`] with unbound purchases refused or accepted.
async fn setup_with(google: &GoogleStandIn, unbound: UnboundPurchases) -> Harness {
    let mut config = Harness::config();
    config.payments.unbound_store_purchases = unbound;
    config.payments.packs = Packs::parse(&format!(
        "starter:50:500:usd::{STARTER},studio:250:2000:usd:com.example.studio:{STUDIO}"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let h = Harness::with_config(config.clone()).await;
    let secret_id = store_secret(&h, &google.key_json().to_string()).await;
    let mut settings = google.settings();
    settings.key = KeySource::Secret(secret_id);
    config.payments.google_play = Some(settings);
    let play = setup::connect_google_play(&config.payments, &h.clients)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(play.is_some(), "a stored key turns Google Play on");
    let mut h = Harness::with_config(config).await;
    h.app = h.app.with_google_play(play);
    h
}

/// A new secret holding `value`; its id.
async fn store_secret(h: &Harness, value: &str) -> String {
    let name = format!("atelier-test-google-{}", ulid::Ulid::new());
    let out = h
        .clients
        .secrets
        .create_secret()
        .name(&name)
        .secret_string(value)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    out.arn().unwrap_or(&name).to_owned()
}

/// A starter pack `user`'s app bought, with the account's token as Play Billing's
/// `setObfuscatedAccountId` sets it.
async fn starter_for(h: &Harness, user: &UserId) -> Purchase {
    let mut purchase = Purchase::new(STARTER);
    purchase.account = Some(h.app_account_token(user).await);
    purchase
}

/// `user` bought the starter pack and posted it: its order id and purchase token.
async fn bought(h: &Harness, google: &GoogleStandIn, user: &UserId) -> (String, String) {
    let purchase = starter_for(h, user).await;
    let order = purchase.order_id.clone();
    let token = google.buy(purchase);
    let res = submit(h, user, STARTER, &token).await;
    assert_eq!(res.status, StatusCode::CREATED, "{res:?}");
    (order, token)
}

fn rows_of(rows: &[LedgerItem], kind: LedgerKind) -> Vec<&LedgerItem> {
    rows.iter().filter(|r| r.kind == kind).collect()
}

/// What Google's own clients say of each case (tests/official-google/verify.py).
async fn official(cases: &[Value]) -> Vec<Value> {
    let python = std::env::var("ATELIER_GOOGLE_PYTHON")
        .unwrap_or_else(|_| panic!("ATELIER_GOOGLE_PYTHON is unset: run `cargo xtask test`"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/official-google/verify.py");
    let input: String = cases.iter().map(|c| format!("{c}\n")).collect();
    atelier_tests::receiver::json_lines(python, script, &input).await
}

#[tokio::test]
async fn googles_publisher_client_reads_and_consumes_the_stand_ins_purchases_as_our_client_does() {
    let google = GoogleStandIn::start().await;
    let bought = Purchase::new(STARTER);
    let order = bought.order_id.clone();
    let token = google.buy(bought);
    let ours = google
        .client()
        .product_purchase(STARTER, &token)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let case = |token: &str, product: &str, consume: bool| {
        json!({ "kind": "publisher", "key": google.key_json(), "endpoint": format!("{}/", google.url),
            "package": google_play::PACKAGE, "product": product, "token": token, "consume": consume })
    };

    let said = official(&[
        case(&token, STARTER, true),
        case(&token, STUDIO, false),
        case("not-a-token", STARTER, false),
    ])
    .await;

    assert_eq!(said[0]["ok"], true, "{said:?}");
    assert_eq!(said[0]["purchase"]["orderId"], order.as_str());
    assert_eq!(said[0]["purchase"]["purchaseState"], 0);
    assert_eq!(said[0]["purchase"]["consumptionState"], 0);
    assert_eq!(said[0]["after"]["consumptionState"], 1);
    assert_eq!(ours.order_id.as_deref(), Some(order.as_str()));
    assert_eq!((ours.purchase_state, ours.consumption_state), (0, 0));
    // The same two bad reads from our client: refused as the library was, and read as "Google
    // knows no such purchase" (the API then answers 400 GOOGLE_PURCHASE_INVALID, grants nothing).
    let client = google.client();
    for (i, (product, token, why)) in [
        (STUDIO, token.as_str(), "another product's token"),
        (STARTER, "not-a-token", "an unknown token"),
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(said[i + 1]["status"], 400, "{why}: {said:?}");
        let refused = client.product_purchase(product, token).await;
        assert!(
            matches!(refused, Err(PublisherError::NoSuchPurchase(400))),
            "our client on {why}: {refused:?}"
        );
    }
    assert_eq!(google.consumed(), 1);
    assert!(google.token_calls() >= 2, "both clients got a bearer");
    assert_eq!(google.unauthorized(), 0);
}

#[tokio::test]
async fn googles_publisher_client_pages_through_the_stand_ins_voided_purchases_as_ours_finds_them()
{
    let google = GoogleStandIn::start().await;
    let purchases: Vec<Purchase> = (0..3).map(|_| Purchase::new(STARTER)).collect();
    let orders: Vec<String> = purchases.iter().map(|p| p.order_id.clone()).collect();
    let tokens: Vec<String> = purchases.into_iter().map(|p| google.buy(p)).collect();
    google.void(&tokens[0]);
    google.void(&tokens[2]);
    let now = atelier_tests::app_store::now_ms();
    let start = now - 86_400_000;
    let case = json!({ "kind": "voided", "key": google.key_json(),
        "endpoint": format!("{}/", google.url), "package": google_play::PACKAGE,
        "start": start, "page": 1 });
    let client = google.client();

    let said = official(&[case]).await;
    let ours: Vec<_> = join_all(orders.iter().map(|o| client.voided_order(o, start, now))).await;

    assert_eq!(said[0]["ok"], true, "{said:?}");
    assert_eq!(said[0]["pages"], 2, "one voided purchase a page: {said:?}");
    let mut listed: Vec<&str> = said[0]["orders"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    listed.sort_unstable();
    let mut voided = vec![orders[0].as_str(), orders[2].as_str()];
    voided.sort_unstable();
    assert_eq!(listed, voided);
    let found: Vec<bool> = ours
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("{e:?}")).is_some())
        .collect();
    assert_eq!(found, [true, false, true]);
    assert_eq!(google.unauthorized(), 0);
}

#[tokio::test]
async fn google_auth_and_our_verifier_accept_pubsubs_token_and_refuse_the_same_bad_ones() {
    let google = GoogleStandIn::start().await;
    let client = google.client();
    let good = PushToken::default();
    let mut cases = vec![
        ("accepted", good.clone()),
        (
            "accepted (issuer without scheme)",
            PushToken {
                issuer: "accounts.google.com".to_owned(),
                ..good
            },
        ),
    ];
    cases.extend(bad_push_tokens());
    let tokens: Vec<String> = cases.iter().map(|(_, t)| t.sign()).collect();
    let certs_url = google.settings().certs_url;

    let said = official(
        &tokens
            .iter()
            .map(|t| {
                json!({ "kind": "push", "token": t, "audience": google_play::AUDIENCE,
                    "certs_url": certs_url, "email": google_play::PUSHER_EMAIL })
            })
            .collect::<Vec<_>>(),
    )
    .await;

    assert_eq!(said.len(), cases.len());
    for (((why, _), token), library) in cases.iter().zip(&tokens).zip(&said) {
        let accepted = why.starts_with("accepted");
        assert_eq!(library["ok"], accepted, "google-auth on {why}: {library}");
        let our = client.verify_push(Some(&format!("Bearer {token}"))).await;
        assert_eq!(our.is_ok(), accepted, "our verifier on {why}: {our:?}");
    }
    let none = client.verify_push(None).await;
    assert!(matches!(none, Err(PushAuthError::Missing)), "{none:?}");
}

#[tokio::test]
async fn a_purchase_token_posted_twenty_times_at_once_grants_once_and_is_consumed_once() {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let bought = starter_for(&h, &user).await;
    let order = bought.order_id.clone();
    let token = google.buy(bought);

    let replies = join_all((0..20).map(|_| submit(&h, &user, STARTER, &token))).await;

    let created: Vec<&Reply> = replies
        .iter()
        .filter(|r| r.status == StatusCode::CREATED)
        .collect();
    assert_eq!(created.len(), 1, "{replies:?}");
    assert_eq!(created[0].body["order_id"], order.as_str());
    assert_eq!(created[0].body["pack"], "starter");
    assert_eq!(created[0].body["credits"], 50);
    assert!(
        replies
            .iter()
            .filter(|r| r.status != StatusCode::CREATED)
            .all(|r| r.status == StatusCode::OK && r.body["outcome"] == "already_granted"),
        "{replies:?}"
    );
    let rows = h.ledger(&user).await;
    let purchases = rows_of(&rows, LedgerKind::Purchase);
    assert_eq!(purchases.len(), 1);
    assert_eq!(purchases[0].reference, format!("purchase:google:{order}"));
    assert_eq!(h.balance(&user).await, before + 50);
    assert_eq!(google.consumed(), 1);
    assert_eq!(
        google.purchase(&token).map(|p| p.consumption_state),
        Some(1)
    );
    let again = submit(&h, &user, STARTER, &token).await;
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(h.balance(&user).await, before + 50);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_voided_purchase_is_taken_back_once_never_below_zero_and_holds_the_account() {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let user = h.user();
    let (order, token) = bought(&h, &google, &user).await;
    h.spend(&user, 3).await;
    let left = h.balance(&user).await;
    assert!(left < 50, "the edits spent some of the pack: {left}");
    let oidc = PushToken::default().sign();
    google.void(&token);

    let first = push(&h, Some(&oidc), &voided(&order, &token)).await;
    let second = push(&h, Some(&oidc), &voided(&order, &token)).await;

    assert_eq!(first.status, StatusCode::OK, "{first:?}");
    assert_eq!(first.body["outcome"], "reversed");
    assert_eq!(first.body["credits"], -left);
    assert_eq!(first.body["shortfall"], 50 - left);
    assert_eq!(second.body["outcome"], "already_reversed", "{second:?}");
    assert_eq!(h.balance(&user).await, 0);
    assert_eq!(h.account(&user).await.body["on_hold"], true);
    let rows = h.ledger(&user).await;
    assert_eq!(rows_of(&rows, LedgerKind::PurchaseReversal).len(), 1);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_void_ahead_of_its_purchase_is_kept_and_the_purchase_posted_after_pubsub_gave_up_grants_nothing()
 {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let rows_before = h.ledger(&user).await;
    let mut purchase = Purchase::new(STARTER);
    purchase.account = Some(h.app_account_token(&user).await);
    let order = purchase.order_id.clone();
    let token = google.buy(purchase);
    google.void(&token);
    let oidc = PushToken::default().sign();

    // The app's post is held back; the void reaches us first, is taken, and Pub/Sub stops.
    let early = push(&h, Some(&oidc), &voided(&order, &token)).await;
    let replayed = push(&h, Some(&oidc), &voided(&order, &token)).await;
    let late = submit(&h, &user, STARTER, &token).await;
    let again = submit(&h, &user, STARTER, &token).await;

    assert_eq!(early.status, StatusCode::OK, "{early:?}");
    assert_eq!(early.body["outcome"], "reversed_first");
    assert_eq!(replayed.body["outcome"], "already_reversed", "{replayed:?}");
    late.assert_problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "TRANSACTION_REVOKED",
        "late",
    );
    again.assert_problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "TRANSACTION_REVOKED",
        "again",
    );
    assert_eq!(h.balance(&user).await, before);
    assert_eq!(h.ledger(&user).await, rows_before);
    assert_eq!(google.consumed(), 0);
    let tombstone = h.app.store.get_tombstone(&format!("google:{order}")).await;
    let tombstone = tombstone.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        tombstone.is_some_and(|t| t.evidence.contains(&order)),
        "the void is kept with Google's word on it"
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_signed_push_claiming_a_void_google_does_not_report_reverses_nothing() {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let user = h.user();
    let (order, token) = bought(&h, &google, &user).await;
    let balance = h.balance(&user).await;
    let rows = h.ledger(&user).await;
    let oidc = PushToken::default().sign();
    let unknown = "GPA.9999-0000-0000-00001";

    let claimed = push(&h, Some(&oidc), &voided(&order, &token)).await;
    let never_bought = push(&h, Some(&oidc), &voided(unknown, "t")).await;

    assert_eq!(claimed.status, StatusCode::OK, "{claimed:?}");
    assert_eq!(claimed.body["outcome"], "ignored");
    assert_eq!(never_bought.body["outcome"], "ignored", "{never_bought:?}");
    assert!(google.voided_calls() >= 2, "Google was asked each time");
    assert_eq!(h.balance(&user).await, balance);
    assert_eq!(h.ledger(&user).await, rows);
    let tombstone = h
        .app
        .store
        .get_tombstone(&format!("google:{unknown}"))
        .await;
    assert!(tombstone.unwrap_or_else(|e| panic!("{e}")).is_none());
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_purchase_older_than_the_bound_is_granted_only_if_googles_voided_list_does_not_name_it() {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let hours = |h: i64| atelier_tests::app_store::now_ms() - h * 3_600_000;
    let account = h.app_account_token(&user).await;
    let old = |at: i64| {
        let mut p = Purchase::new(STARTER);
        p.purchase_time_ms = at;
        p.account = Some(account.clone());
        p
    };
    let refunded = google.buy(old(hours(73)));
    google.void(&refunded);
    let kept = google.buy(old(hours(73)));
    let ancient = google.buy(old(hours(31 * 24)));

    let refused = submit(&h, &user, STARTER, &refunded).await;
    let granted = submit(&h, &user, STARTER, &kept).await;
    let stale = submit(&h, &user, STARTER, &ancient).await;

    refused.assert_problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "TRANSACTION_REVOKED",
        "voided",
    );
    assert_eq!(granted.status, StatusCode::CREATED, "{granted:?}");
    stale.assert_problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "TRANSACTION_STALE",
        "31 days",
    );
    assert_eq!(h.balance(&user).await, before + 50);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn other_notifications_are_ignored_and_another_apps_refused() {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let oidc = PushToken::default().sign();
    let test = json!({ "version": "1.0", "packageName": google_play::PACKAGE,
        "eventTimeMillis": "1764670000000", "testNotification": { "version": "1.0" } });
    let mut other_app = voided("GPA.0000-0000-0000-00000", "t");
    other_app["packageName"] = json!("com.example.other");

    let ignored = push(&h, Some(&oidc), &test).await;
    let foreign = push(&h, Some(&oidc), &other_app).await;

    assert_eq!(ignored.status, StatusCode::OK, "{ignored:?}");
    assert_eq!(ignored.body["outcome"], "ignored");
    assert_eq!(foreign.status, StatusCode::BAD_REQUEST, "{foreign:?}");
    assert_eq!(foreign.code(), "MALFORMED_EVENT");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn pushes_whose_oidc_token_is_not_pubsubs_for_us_are_refused_with_nothing_written() {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let user = h.user();
    let (order, token) = bought(&h, &google, &user).await;
    let balance = h.balance(&user).await;
    let rows = h.ledger(&user).await.len();
    let mut tokens: Vec<(&str, Option<String>)> = bad_push_tokens()
        .into_iter()
        .map(|(why, t)| (why, Some(t.sign())))
        .collect();
    tokens.push(("no token", None));
    tokens.push(("not a JWT", Some("not.a.jwt".to_owned())));

    for (why, t) in &tokens {
        let res = push(&h, t.as_deref(), &voided(&order, &token)).await;
        res.assert_problem(StatusCode::UNAUTHORIZED, "PUBSUB_TOKEN_INVALID", why);
    }

    assert_eq!(h.balance(&user).await, balance);
    assert_eq!(h.ledger(&user).await.len(), rows);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn purchases_google_does_not_vouch_for_or_that_grant_nothing_write_nothing() {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let rows_before = h.ledger(&user).await.len();
    let with = |f: &dyn Fn(&mut Purchase)| {
        let mut p = Purchase::new(STARTER);
        f(&mut p);
        google.buy(p)
    };
    let pending = with(&|p| p.purchase_state = 2);
    let cancelled = with(&|p| p.purchase_state = 1);
    let someone = h.app_account_token(&h.user()).await;
    let mine = h.app_account_token(&user).await;
    let bound = with(&|p| p.account = Some(someone.clone()));
    let unbound = with(&|_| {});
    let studio = google.buy(Purchase::new(STUDIO));
    let down = with(&|p| p.account = Some(mine.clone()));
    let cases: Vec<(Value, StatusCode, &str)> = vec![
        (
            json!({"productId": STARTER, "purchaseToken": "unknown-token"}),
            StatusCode::BAD_REQUEST,
            "GOOGLE_PURCHASE_INVALID",
        ),
        (
            json!({"productId": STARTER, "purchaseToken": studio}),
            StatusCode::BAD_REQUEST,
            "GOOGLE_PURCHASE_INVALID",
        ),
        (
            json!({"productId": "gold_pack", "purchaseToken": studio}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "UNKNOWN_PRODUCT",
        ),
        (
            json!({"productId": STARTER, "purchaseToken": pending}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "PURCHASE_PENDING",
        ),
        (
            json!({"productId": STARTER, "purchaseToken": cancelled}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "TRANSACTION_REVOKED",
        ),
        (
            json!({"productId": STARTER, "purchaseToken": bound}),
            StatusCode::FORBIDDEN,
            "TRANSACTION_OTHER_ACCOUNT",
        ),
        (
            json!({"productId": STARTER, "purchaseToken": unbound}),
            StatusCode::FORBIDDEN,
            "PURCHASE_NOT_BOUND",
        ),
        (
            json!({"productId": STARTER}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION_FAILED",
        ),
        (
            json!({"productId": STARTER, "purchaseToken": "a/../b"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION_FAILED",
        ),
        (
            json!({"productId": STARTER, "purchaseToken": "x".repeat(1025)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION_FAILED",
        ),
        (
            json!({"productId": STARTER, "purchaseToken": "t", "extra": 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION_FAILED",
        ),
    ];

    for (body, status, code) in &cases {
        submit_body(&h, &user, body)
            .await
            .assert_problem(*status, code, body);
    }
    google.fail_next(1);
    let unavailable = submit(&h, &user, STARTER, &down).await;

    assert_eq!(
        unavailable.status,
        StatusCode::BAD_GATEWAY,
        "{unavailable:?}"
    );
    assert_eq!(unavailable.code(), "PAYMENT_PROVIDER_ERROR");
    assert_eq!(h.balance(&user).await, before);
    assert_eq!(h.ledger(&user).await.len(), rows_before);
    assert_eq!(google.consumed(), 0);
    let retried = submit(&h, &user, STARTER, &down).await;
    assert_eq!(retried.status, StatusCode::CREATED, "{retried:?}");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_consume_that_fails_after_the_grant_is_done_when_the_app_posts_again() {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let token = google.buy(starter_for(&h, &user).await);
    google.fail_next_consumes(1);

    let failed = submit(&h, &user, STARTER, &token).await;
    let again = submit(&h, &user, STARTER, &token).await;

    failed.assert_problem(
        StatusCode::BAD_GATEWAY,
        "PAYMENT_PROVIDER_ERROR",
        "consume failed",
    );
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(again.body["outcome"], "already_granted");
    assert_eq!(google.consumed(), 1);
    assert_eq!(h.balance(&user).await, before + 50);
    assert_eq!(
        rows_of(&h.ledger(&user).await, LedgerKind::Purchase).len(),
        1
    );
    h.assert_audit_clean().await;
}

/// Where the deployment accepts unbound purchases, the first to post one gets it.
#[tokio::test]
async fn an_unbound_purchase_granted_to_one_user_is_a_conflict_for_another() {
    let google = GoogleStandIn::start().await;
    let h = setup_with(&google, UnboundPurchases::Accept).await;
    let (alice, bob) = (h.user(), h.user());
    let bob_before = h.balance(&bob).await;
    let token = google.buy(Purchase::new(STARTER));

    let first = submit(&h, &alice, STARTER, &token).await;
    let stolen = submit(&h, &bob, STARTER, &token).await;

    assert_eq!(first.status, StatusCode::CREATED, "{first:?}");
    assert_eq!(stolen.status, StatusCode::CONFLICT, "{stolen:?}");
    assert_eq!(stolen.code(), "TRANSACTION_OTHER_ACCOUNT");
    assert_eq!(h.balance(&bob).await, bob_before);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn without_a_stored_key_google_play_is_off_and_both_routes_say_so() {
    let google = GoogleStandIn::start().await;
    let mut config = Harness::config();
    let h = Harness::with_config(config.clone()).await;
    let mut settings = google.settings();
    settings.key = KeySource::Secret(store_secret(&h, "{}").await);
    config.payments.google_play = Some(settings);
    let play = setup::connect_google_play(&config.payments, &h.clients)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let user = h.user();

    let bought = submit(&h, &user, STARTER, "t").await;
    let pushed = push(&h, Some(&PushToken::default().sign()), &voided("o", "t")).await;

    assert!(play.is_none(), "an empty secret leaves Google Play off");
    assert_eq!(bought.status, StatusCode::SERVICE_UNAVAILABLE, "{bought:?}");
    assert_eq!(bought.code(), "PAYMENTS_NOT_CONFIGURED");
    assert_eq!(pushed.status, StatusCode::SERVICE_UNAVAILABLE, "{pushed:?}");
    assert_eq!(google.token_calls(), 0);
}

/// A closed account takes no money: the purchase is refused and left unconsumed, so Google
/// refunds it (an unacknowledged purchase is refunded after three days).
#[tokio::test]
async fn a_closed_account_is_refused_a_google_play_purchase_which_stays_unconsumed() {
    let google = GoogleStandIn::start().await;
    let h = setup(&google).await;
    let user = h.user();
    let purchase = starter_for(&h, &user).await;
    let order = purchase.order_id.clone();
    let token = google.buy(purchase);
    assert_eq!(h.delete_account(&user).await.status, StatusCode::OK);
    let before = h.balance(&user).await;
    let rows_before = h.ledger(&user).await.len();

    let res = submit(&h, &user, STARTER, &token).await;

    res.assert_problem(StatusCode::FORBIDDEN, "ACCOUNT_CLOSED", "closed account");
    assert_eq!(h.balance(&user).await, before);
    assert_eq!(h.ledger(&user).await.len(), rows_before);
    let payment = h.app.store.get_payment(&format!("google:{order}")).await;
    assert!(matches!(payment, Ok(None)), "{payment:?}");
    assert_eq!(google.consumed(), 0);
    assert_eq!(
        google.purchase(&token).map(|p| p.consumption_state),
        Some(0)
    );
    h.assert_audit_clean().await;
}
