//! Buying credits in the iOS app against ministack and the stand-in App Store: a StoreKit 2
//! transaction grants its pack once however often and alongside whatever notification it
//! comes, `REFUND`/`REVOKE` take it back once and never below zero, and anything that is not
//! Apple's signed data for this app is refused with nothing written. The stand-in's data is
//! first shown to be what Apple's own library believes.

use atelier_shared::adapters::payments::apple::{AppleSettings, VerifyError};
use atelier_shared::config::UnboundPurchases;
use atelier_shared::domain::LedgerKind;
use atelier_shared::store::schema::LedgerItem;
use atelier_tests::app_store::{
    self, AppStoreStandIn, Chain, STARTER, notify, submit, transaction_payload,
};
use atelier_tests::app_store_api::{self, AppStoreApiStandIn};
use atelier_tests::{Harness, Reply};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use futures::future::join_all;
use http::StatusCode;
use serde_json::{Value, json};

fn rows_of(rows: &[LedgerItem], kind: LedgerKind) -> Vec<&LedgerItem> {
    rows.iter().filter(|r| r.kind == kind).collect()
}

/// The payload part of a JWS replaced by `payload`, the signature kept.
fn tampered(jws: &str, payload: &Value) -> String {
    let parts: Vec<&str> = jws.split('.').collect();
    let p = URL_SAFE_NO_PAD.encode(payload.to_string());
    format!("{}.{p}.{}", parts[0], parts[2])
}

/// What Apple's library says of each case: `(ok, error or id)`.
async fn official_verdicts(root: &[u8], cases: &[(&str, String)]) -> Vec<(bool, String)> {
    let python = std::env::var("ATELIER_APP_STORE_PYTHON")
        .unwrap_or_else(|_| panic!("ATELIER_APP_STORE_PYTHON is unset: run `cargo xtask test`"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/official-app-store/verify.py");
    let mut input = String::new();
    for (kind, jws) in cases {
        let case = json!({ "root": STANDARD.encode(root), "bundle_id": app_store::BUNDLE_ID,
            "app_apple_id": app_store::APP_APPLE_ID, "kind": kind, "jws": jws });
        input.push_str(&format!("{case}\n"));
    }
    atelier_tests::receiver::json_lines(python, script, &input)
        .await
        .into_iter()
        .map(|v| {
            let said = v.get("error").or(v.get("id")).cloned().unwrap_or_default();
            (v["ok"] == true, said.to_string())
        })
        .collect()
}

/// Our verifier's verdict on the same case.
fn ours(settings: &AppleSettings, kind: &str, jws: &str) -> Result<(), VerifyError> {
    let now = app_store::now_ms() / 1000;
    match kind {
        "transaction" => settings.verify_transaction(jws, now).map(|_| ()),
        _ => settings.verify_notification(jws, now).map(|_| ()),
    }
}

#[tokio::test]
async fn apples_library_accepts_the_stand_ins_data_and_refuses_what_our_verifier_refuses() {
    let store = AppStoreStandIn::new();
    let other_root = AppStoreStandIn::new();
    let expired = AppStoreStandIn::with_chain(Chain {
        expired_leaf: true,
        ..Chain::default()
    });
    let no_leaf_oid = AppStoreStandIn::with_chain(Chain {
        leaf_oid: false,
        ..Chain::default()
    });
    let no_intermediate_oid = AppStoreStandIn::with_chain(Chain {
        intermediate_oid: false,
        ..Chain::default()
    });
    let payload = transaction_payload(&app_store::transaction_id(), STARTER, None);
    let good = store.transaction(&payload);
    let mut other_bundle = payload.clone();
    other_bundle["bundleId"] = json!("com.example.other");
    let mut more = payload.clone();
    more["quantity"] = json!(10);
    let cases: Vec<(&str, &str, String)> = vec![
        ("accepted", "transaction", good.clone()),
        (
            "accepted",
            "notification",
            store.notification("REFUND", &good),
        ),
        (
            "wrong root",
            "transaction",
            other_root.transaction(&payload),
        ),
        ("expired leaf", "transaction", expired.transaction(&payload)),
        (
            "wrong bundle id",
            "transaction",
            store.transaction(&other_bundle),
        ),
        ("tampered payload", "transaction", tampered(&good, &more)),
        (
            "no leaf OID",
            "transaction",
            no_leaf_oid.transaction(&payload),
        ),
        (
            "no intermediate OID",
            "transaction",
            no_intermediate_oid.transaction(&payload),
        ),
        (
            "tampered notification",
            "notification",
            tampered(
                &store.notification("REFUND", &good),
                &app_store::notification_payload("CONSUMPTION_REQUEST", &good),
            ),
        ),
    ];

    let official = official_verdicts(
        &store.root_der,
        &cases
            .iter()
            .map(|(_, k, j)| (*k, j.clone()))
            .collect::<Vec<_>>(),
    )
    .await;

    assert_eq!(official.len(), cases.len());
    let settings = store.settings();
    for ((why, kind, jws), (library_ok, said)) in cases.iter().zip(&official) {
        let accepted = *why == "accepted";
        assert_eq!(*library_ok, accepted, "Apple's library on {why}: {said}");
        let our = ours(&settings, kind, jws);
        assert_eq!(our.is_ok(), accepted, "our verifier on {why}: {our:?}");
    }
}

#[tokio::test]
async fn a_transaction_submitted_twenty_times_with_its_refund_keeps_no_credits_whichever_lands_first()
 {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let id = app_store::transaction_id();
    let token = h.app_account_token(&user).await;
    let signed = store.transaction(&transaction_payload(&id, STARTER, Some(&token)));
    let refund = store.notification("REFUND", &signed);

    let submissions = join_all((0..20).map(|_| submit(&h, &user, &signed)));
    let (replies, refunded) = tokio::join!(submissions, notify(&h, &refund));

    // Whichever lands first: a grant the refund reverses, or a tombstone no grant passes.
    let granted = replies
        .iter()
        .filter(|r| r.status == StatusCode::CREATED)
        .count();
    let reversed_first = refunded.body["outcome"] == "reversed_first";
    assert_eq!(refunded.status, StatusCode::OK, "{refunded:?}");
    assert_eq!(
        granted,
        usize::from(!reversed_first),
        "{replies:?} {refunded:?}"
    );
    assert!(
        replies
            .iter()
            .all(|r| matches!(r.status, StatusCode::CREATED | StatusCode::OK)
                || r.code() == "TRANSACTION_REVOKED"),
        "{replies:?}"
    );
    assert_eq!(
        notify(&h, &refund).await.body["outcome"],
        "already_reversed"
    );
    let rows = h.ledger(&user).await;
    let purchases = rows_of(&rows, LedgerKind::Purchase);
    let reversals = rows_of(&rows, LedgerKind::PurchaseReversal);
    if reversed_first {
        assert!(purchases.is_empty() && reversals.is_empty(), "{rows:?}");
    } else {
        assert_eq!(purchases.len(), 1);
        assert_eq!(purchases[0].reference, format!("purchase:apple:{id}"));
        assert_eq!(purchases[0].amount.get(), 50);
        assert_eq!(reversals.len(), 1);
        assert_eq!(reversals[0].amount.get(), -50);
    }
    assert_eq!(h.balance(&user).await, before);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_refund_ahead_of_its_transaction_is_kept_and_the_transaction_posted_after_apple_gave_up_grants_nothing()
 {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let rows_before = h.ledger(&user).await;
    let id = app_store::transaction_id();
    let token = h.app_account_token(&user).await;
    // The JWS the app kept back: no revocationDate in it.
    let signed = store.transaction(&transaction_payload(&id, STARTER, Some(&token)));
    let mut refunded = transaction_payload(&id, STARTER, Some(&token));
    refunded["revocationDate"] = json!(app_store::now_ms());
    let refund = store.notification("REFUND", &store.transaction(&refunded));

    let early = notify(&h, &refund).await;
    let replayed = notify(&h, &refund).await;
    let late = submit(&h, &user, &signed).await;
    let again = submit(&h, &user, &signed).await;

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
    let tombstone = h.app.store.get_tombstone(&format!("apple:{id}")).await;
    let tombstone = tombstone
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("the refund is kept"));
    assert!(
        tombstone.reason.starts_with("app_store_refund:"),
        "{tombstone:?}"
    );
    assert!(tombstone.evidence.contains(&id), "{tombstone:?}");
    h.assert_audit_clean().await;
}

/// A transaction payload signed `hours` ago (bought a second before).
fn signed_hours_ago(id: &str, token: Option<&str>, hours: i64) -> Value {
    let mut t = transaction_payload(id, STARTER, token);
    let at = app_store::now_ms() - hours * 3_600_000;
    t["signedDate"] = json!(at);
    t["purchaseDate"] = json!(at - 1000);
    t["originalPurchaseDate"] = json!(at - 1000);
    t
}

#[tokio::test]
async fn a_transaction_signed_over_72_hours_ago_is_refused_as_stale_without_the_server_api() {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let id = app_store::transaction_id();
    let token = h.app_account_token(&user).await;
    let kept = store.transaction(&signed_hours_ago(&id, Some(&token), 73));
    let recent = store.transaction(&signed_hours_ago(
        &app_store::transaction_id(),
        Some(&token),
        71,
    ));
    // What StoreKit gives after AppStore.sync(): the same transaction, signed now.
    let restored = store.transaction(&transaction_payload(&id, STARTER, Some(&token)));

    let stale = submit(&h, &user, &kept).await;
    let balance_after_stale = h.balance(&user).await;
    let within = submit(&h, &user, &recent).await;
    let retried = submit(&h, &user, &restored).await;

    stale.assert_problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "TRANSACTION_STALE",
        "73 h",
    );
    assert_eq!(balance_after_stale, before);
    assert_eq!(within.status, StatusCode::CREATED, "{within:?}");
    assert_eq!(retried.status, StatusCode::CREATED, "{retried:?}");
    assert_eq!(h.balance(&user).await, before + 100);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn with_the_server_api_an_old_transaction_is_asked_of_apple_and_granted_only_if_not_refunded()
{
    let store = AppStoreStandIn::new();
    let api = AppStoreApiStandIn::start(app_store::BUNDLE_ID).await;
    let h = app_store_api::harness_answering(&store, &api).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let token = h.app_account_token(&user).await;
    let (refunded_id, kept_id) = (app_store::transaction_id(), app_store::transaction_id());
    let refunded = signed_hours_ago(&refunded_id, Some(&token), 100);
    let kept = signed_hours_ago(&kept_id, Some(&token), 100);
    api.knows(&store, &refunded);
    api.knows(&store, &kept);
    api.revoke(&refunded_id);
    let unknown = signed_hours_ago(&app_store::transaction_id(), Some(&token), 100);

    let refused = submit(&h, &user, &store.transaction(&refunded)).await;
    let granted = submit(&h, &user, &store.transaction(&kept)).await;
    let not_apples = submit(&h, &user, &store.transaction(&unknown)).await;

    refused.assert_problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "TRANSACTION_REVOKED",
        "refunded",
    );
    assert_eq!(granted.status, StatusCode::CREATED, "{granted:?}");
    not_apples.assert_problem(StatusCode::BAD_REQUEST, "APP_STORE_DATA_INVALID", "unknown");
    assert_eq!(api.lookups(), 3);
    assert_eq!(h.balance(&user).await, before + 50);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_refund_after_the_credits_were_spent_stops_at_zero_and_holds_the_account() {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let signed = app_store::starter_bought_by(&h, &store, &user).await;
    assert_eq!(submit(&h, &user, &signed).await.status, StatusCode::CREATED);
    h.spend(&user, 3).await;
    let left = h.balance(&user).await;
    assert!(left < 50, "the edits spent some of the pack: {left}");

    let res = notify(&h, &store.notification("REVOKE", &signed)).await;

    assert_eq!(res.status, StatusCode::OK, "{res:?}");
    assert_eq!(res.body["outcome"], "reversed");
    assert_eq!(res.body["credits"], -left);
    assert_eq!(res.body["shortfall"], 50 - left);
    assert_eq!(h.balance(&user).await, 0);
    assert_eq!(h.account(&user).await.body["on_hold"], true);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn forged_expired_wrong_bundle_tampered_or_unknown_product_transactions_write_nothing() {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let rows_before = h.ledger(&user).await.len();
    let id = app_store::transaction_id();
    let mine = h.app_account_token(&user).await;
    let payload = transaction_payload(&id, STARTER, Some(&mine));
    let expired = AppStoreStandIn::with_chain(Chain {
        expired_leaf: true,
        ..Chain::default()
    });
    let mut other_bundle = payload.clone();
    other_bundle["bundleId"] = json!("com.example.other");
    let mut more = payload.clone();
    more["quantity"] = json!(10);
    let mut revoked = payload.clone();
    revoked["revocationDate"] = json!(app_store::now_ms());
    let someone = h.app_account_token(&h.user()).await;
    let cases = [
        (
            AppStoreStandIn::new().transaction(&payload),
            StatusCode::BAD_REQUEST,
            "APP_STORE_DATA_INVALID",
        ),
        (
            expired.transaction(&payload),
            StatusCode::BAD_REQUEST,
            "APP_STORE_DATA_INVALID",
        ),
        (
            store.transaction(&other_bundle),
            StatusCode::BAD_REQUEST,
            "APP_STORE_DATA_INVALID",
        ),
        (
            tampered(&store.transaction(&payload), &more),
            StatusCode::BAD_REQUEST,
            "APP_STORE_DATA_INVALID",
        ),
        (
            store.transaction(&transaction_payload(
                &id,
                "com.example.atelier.gold",
                Some(&mine),
            )),
            StatusCode::UNPROCESSABLE_ENTITY,
            "UNKNOWN_PRODUCT",
        ),
        (
            store.transaction(&revoked),
            StatusCode::UNPROCESSABLE_ENTITY,
            "TRANSACTION_REVOKED",
        ),
        (
            store.transaction(&transaction_payload(&id, STARTER, Some(&someone))),
            StatusCode::FORBIDDEN,
            "TRANSACTION_OTHER_ACCOUNT",
        ),
        (
            store.transaction(&transaction_payload(&id, STARTER, None)),
            StatusCode::FORBIDDEN,
            "PURCHASE_NOT_BOUND",
        ),
        (
            "not.a.jws".to_owned(),
            StatusCode::BAD_REQUEST,
            "APP_STORE_DATA_INVALID",
        ),
        (
            String::new(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION_FAILED",
        ),
        (
            "x".repeat(13_000),
            StatusCode::UNPROCESSABLE_ENTITY,
            "VALIDATION_FAILED",
        ),
        (
            "x".repeat(40_000),
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
        ),
    ];

    for (i, (signed, status, code)) in cases.iter().enumerate() {
        let res = submit(&h, &user, signed).await;
        assert_eq!(res.status, *status, "case {i}: {res:?}");
        assert_eq!(res.code(), *code, "case {i}");
    }

    assert_eq!(h.balance(&user).await, before);
    assert_eq!(h.ledger(&user).await.len(), rows_before);
    let payment = h.app.store.get_payment(&format!("apple:{id}")).await;
    assert!(matches!(payment, Ok(None)), "{payment:?}");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_transaction_of_three_starter_packs_grants_150_credits_once() {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let id = app_store::transaction_id();
    let token = h.app_account_token(&user).await;
    let mut three = transaction_payload(&id, STARTER, Some(&token));
    three["quantity"] = json!(3);
    let signed = store.transaction(&three);

    let first = submit(&h, &user, &signed).await;
    let again = submit(&h, &user, &signed).await;

    assert_eq!(first.status, StatusCode::CREATED, "{first:?}");
    assert_eq!(first.body["credits"], 150);
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(again.body["outcome"], "already_granted");
    assert_eq!(h.balance(&user).await, before + 150);
    let rows = h.ledger(&user).await;
    let purchases = rows_of(&rows, LedgerKind::Purchase);
    assert_eq!(purchases.len(), 1);
    assert_eq!(purchases[0].amount.get(), 150);
    h.assert_audit_clean().await;
}

/// A transaction id becomes part of a key (`purchase:apple:<id>`): one that is too long or
/// carries other characters than letters, digits, `-`, `_` and `.` is refused before anything
/// is written; one of 64 such characters is granted.
#[tokio::test]
async fn transaction_ids_too_long_or_with_odd_characters_are_refused_and_one_of_64_is_granted() {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let before = h.balance(&user).await;
    let rows_before = h.ledger(&user).await.len();
    let token = h.app_account_token(&user).await;
    let longest = format!("{}-_.", app_store::transaction_id())
        .chars()
        .cycle()
        .take(64)
        .collect::<String>();
    let refused_ids = [
        format!("{}{}", app_store::transaction_id(), "1".repeat(49)),
        format!("{}/1", app_store::transaction_id()),
        format!("{}#1", app_store::transaction_id()),
    ];

    let refused = join_all(refused_ids.iter().map(|id| {
        let signed = store.transaction(&transaction_payload(id, STARTER, Some(&token)));
        let (h, user) = (&h, &user);
        async move { submit(h, user, &signed).await }
    }))
    .await;
    let balance_after_refused = h.balance(&user).await;
    let rows_after_refused = h.ledger(&user).await.len();
    let granted = submit(
        &h,
        &user,
        &store.transaction(&transaction_payload(&longest, STARTER, Some(&token))),
    )
    .await;

    for (id, res) in refused_ids.iter().zip(&refused) {
        res.assert_problem(StatusCode::BAD_REQUEST, "APP_STORE_DATA_INVALID", id);
        let payment = h.app.store.get_payment(&format!("apple:{id}")).await;
        assert!(matches!(payment, Ok(None)), "{id}: {payment:?}");
    }
    assert_eq!(balance_after_refused, before);
    assert_eq!(rows_after_refused, rows_before);
    assert_eq!(granted.status, StatusCode::CREATED, "{granted:?}");
    assert_eq!(granted.body["transaction_id"], longest.as_str());
    assert_eq!(h.balance(&user).await, before + 50);
    h.assert_audit_clean().await;
}

/// Where the deployment accepts unbound purchases, the first to post one gets it.
#[tokio::test]
async fn an_unbound_transaction_granted_to_one_user_is_a_conflict_for_another() {
    let store = AppStoreStandIn::new();
    let mut config = Harness::config();
    app_store::sell_on(&mut config, &store);
    config.payments.unbound_store_purchases = UnboundPurchases::Accept;
    let h = Harness::with_config(config).await;
    let (alice, bob) = (h.user(), h.user());
    let bob_before = h.balance(&bob).await;
    let signed = store.transaction(&transaction_payload(
        &app_store::transaction_id(),
        STARTER,
        None,
    ));

    let first = submit(&h, &alice, &signed).await;
    let again = submit(&h, &alice, &signed).await;
    let stolen = submit(&h, &bob, &signed).await;

    assert_eq!(first.status, StatusCode::CREATED, "{first:?}");
    assert_eq!(first.body["credits"], 50);
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(again.body["outcome"], "already_granted");
    assert_eq!(stolen.status, StatusCode::CONFLICT, "{stolen:?}");
    assert_eq!(stolen.code(), "TRANSACTION_OTHER_ACCOUNT");
    assert_eq!(h.balance(&bob).await, bob_before);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn other_notifications_are_acknowledged_and_forged_ones_refused() {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let signed = app_store::starter_bought_by(&h, &store, &user).await;
    assert_eq!(submit(&h, &user, &signed).await.status, StatusCode::CREATED);
    let balance = h.balance(&user).await;

    let consumption = notify(&h, &store.notification("CONSUMPTION_REQUEST", &signed)).await;
    let forged = notify(&h, &AppStoreStandIn::new().notification("REFUND", &signed)).await;

    assert_eq!(consumption.status, StatusCode::OK, "{consumption:?}");
    assert_eq!(consumption.body["outcome"], "ignored");
    assert_eq!(forged.status, StatusCode::BAD_REQUEST, "{forged:?}");
    assert_eq!(forged.code(), "APP_STORE_DATA_INVALID");
    assert_eq!(h.balance(&user).await, balance);
    h.assert_audit_clean().await;
}

/// `PUT /v1/account/consumption-consent` with `body`.
async fn consent(h: &Harness, user: &atelier_shared::domain::UserId, body: Value) -> Reply {
    let req = Harness::json_request("PUT", "/v1/account/consumption-consent")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap_or_else(|e| panic!("request: {e}"));
    h.call(Some(user), req).await
}

/// A deployment answering consumption requests to a stand-in App Store Server API, and a
/// user who consented and bought the starter pack (its transaction id and signed data).
struct ConsentingBuyer {
    store: AppStoreStandIn,
    api: AppStoreApiStandIn,
    h: Harness,
    user: atelier_shared::domain::UserId,
    id: String,
    signed: String,
}

impl ConsentingBuyer {
    async fn new() -> ConsentingBuyer {
        let store = AppStoreStandIn::new();
        let api = AppStoreApiStandIn::start(app_store::BUNDLE_ID).await;
        let h = app_store_api::harness_answering(&store, &api).await;
        let user = h.user();
        let given = consent(&h, &user, json!({ "consented": true })).await;
        assert_eq!(given.status, StatusCode::OK, "{given:?}");
        assert!(
            given.body["consumption_consent_at"].is_string(),
            "{given:?}"
        );
        let id = app_store::transaction_id();
        let token = h.app_account_token(&user).await;
        let signed = store.transaction(&transaction_payload(&id, STARTER, Some(&token)));
        assert_eq!(submit(&h, &user, &signed).await.status, StatusCode::CREATED);
        ConsentingBuyer {
            store,
            api,
            h,
            user,
            id,
            signed,
        }
    }

    /// Apple's `CONSUMPTION_REQUEST` about the purchase, delivered.
    async fn refund_requested(&self) -> Reply {
        notify(
            &self.h,
            &self.store.notification("CONSUMPTION_REQUEST", &self.signed),
        )
        .await
    }
}

#[tokio::test]
async fn a_consumption_request_for_a_buyer_who_consented_tells_apple_the_share_they_spent() {
    let b = ConsentingBuyer::new().await;
    b.h.fund_to(&b.user, 56).await;
    b.h.spend(&b.user, 3).await;
    let left = b.h.balance(&b.user).await;
    assert_eq!(
        left, 44,
        "three 4-credit edits: 6 of the pack's 50 are spent"
    );

    let answered = b.refund_requested().await;

    assert_eq!(answered.status, StatusCode::OK, "{answered:?}");
    assert_eq!(answered.body["outcome"], "consumption_sent");
    let taken = b.api.taken();
    assert_eq!(taken.len(), 1, "{taken:?}");
    assert_eq!(taken[0].transaction_id, b.id);
    assert_eq!(
        taken[0].body,
        json!({ "customerConsented": true, "consumptionPercentage": 12_000,
            "deliveryStatus": "DELIVERED", "sampleContentProvided": true })
    );
    assert_eq!(b.api.refused(), 0);
    assert_eq!(
        b.h.balance(&b.user).await,
        left,
        "answering moves no credits"
    );
    b.h.assert_audit_clean().await;
}

#[tokio::test]
async fn without_the_buyers_consent_apple_is_told_nothing_and_a_withdrawn_consent_counts() {
    let store = AppStoreStandIn::new();
    let api = AppStoreApiStandIn::start(app_store::BUNDLE_ID).await;
    let h = app_store_api::harness_answering(&store, &api).await;
    let (never, withdrew) = (h.user(), h.user());
    assert_eq!(
        consent(&h, &withdrew, json!({ "consented": true }))
            .await
            .status,
        StatusCode::OK
    );
    let gone = consent(&h, &withdrew, json!({ "consented": false })).await;
    assert_eq!(gone.status, StatusCode::OK, "{gone:?}");
    assert!(
        gone.body.get("consumption_consent_at").is_none(),
        "{gone:?}"
    );
    let mut outcomes = Vec::new();
    for user in [&never, &withdrew] {
        let signed = app_store::starter_bought_by(&h, &store, user).await;
        assert_eq!(submit(&h, user, &signed).await.status, StatusCode::CREATED);
        let n = notify(&h, &store.notification("CONSUMPTION_REQUEST", &signed)).await;
        outcomes.push((n.status, n.body["outcome"].clone()));
    }
    let unknown = notify(
        &h,
        &store.notification(
            "CONSUMPTION_REQUEST",
            &app_store::starter_transaction(&store),
        ),
    )
    .await;

    for outcome in &outcomes {
        assert_eq!(outcome, &(StatusCode::OK, json!("ignored")));
    }
    assert_eq!(unknown.status, StatusCode::OK, "never granted: {unknown:?}");
    assert_eq!(unknown.body["outcome"], "ignored");
    assert!(api.taken().is_empty(), "{:?}", api.taken());
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn an_app_store_that_cannot_take_the_answer_refuses_the_notification_so_apple_resends_it() {
    let b = ConsentingBuyer::new().await;
    b.api.fail_next(1);

    let first = b.refund_requested().await;
    let again = b.refund_requested().await;

    first.assert_problem(
        StatusCode::BAD_GATEWAY,
        "PAYMENT_PROVIDER_ERROR",
        "503 from Apple",
    );
    assert!(first.header("retry-after").is_some(), "{first:?}");
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(again.body["outcome"], "consumption_sent");
    assert_eq!(b.api.taken().len(), 1);
    assert_eq!(
        b.api.taken()[0].body["consumptionPercentage"],
        0,
        "nothing spent of it"
    );
    b.h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_consent_needs_a_yes_or_no_and_a_deleted_account_takes_none() {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let (user, closed) = (h.user(), h.user());
    assert_eq!(h.balance(&closed).await, 6);
    assert_eq!(h.delete_account(&closed).await.status, StatusCode::OK);

    let missing = consent(&h, &user, json!({})).await;
    let not_bool = consent(&h, &user, json!({ "consented": "yes" })).await;
    let unknown = consent(&h, &user, json!({ "consented": true, "why": 1 })).await;
    let after_deletion = consent(&h, &closed, json!({ "consented": true })).await;

    missing.assert_problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "VALIDATION_FAILED",
        "missing",
    );
    assert!(not_bool.status.is_client_error(), "{not_bool:?}");
    assert!(unknown.status.is_client_error(), "{unknown:?}");
    after_deletion.assert_problem(StatusCode::FORBIDDEN, "ACCOUNT_CLOSED", "deleted");
    for u in [&user, &closed] {
        let account = h
            .app
            .store
            .get_account(u)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let consent_at = account.and_then(|a| a.consumption_consent_at);
        assert_eq!(consent_at, None, "nothing written for {u}");
    }
}

#[tokio::test]
async fn apples_library_sends_consumption_the_stand_in_takes_and_ours_sends_the_same_fields() {
    let b = ConsentingBuyer::new().await;
    let python = std::env::var("ATELIER_APP_STORE_PYTHON")
        .unwrap_or_else(|_| panic!("ATELIER_APP_STORE_PYTHON is unset: run `cargo xtask test`"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/official-app-store/consume.py");
    let case = json!({ "url": b.api.url, "key": b.api.private_pem(), "key_id": app_store_api::KEY_ID,
        "issuer_id": app_store_api::ISSUER_ID, "bundle_id": app_store::BUNDLE_ID,
        "transaction_id": b.id, "percentage": 0 });
    let mut wrong_app = case.clone();
    wrong_app["bundle_id"] = json!("com.example.other");

    let input = format!("{case}\n{wrong_app}\n");
    let official = atelier_tests::receiver::json_lines(&python, script, &input).await;
    let ours = b.refund_requested().await;

    assert_eq!(
        official[0],
        json!({ "ok": true }),
        "Apple's client was taken"
    );
    assert_eq!(
        official[1]["status"], 401,
        "another app's token: {official:?}"
    );
    assert_eq!(ours.body["outcome"], "consumption_sent", "{ours:?}");
    let taken = b.api.taken();
    assert_eq!(taken.len(), 2, "{taken:?}");
    let agent = taken[0].user_agent.clone().unwrap_or_default();
    assert!(
        agent.starts_with("app-store-server-library/python"),
        "{agent}"
    );
    assert_eq!(taken[0].transaction_id, taken[1].transaction_id);
    assert_eq!(
        taken[0].body, taken[1].body,
        "field for field, the library's body"
    );
    assert_eq!(b.api.refused(), 1, "only the other app's request");
}

/// A closed account takes no money: its transaction is refused and stays unfinished in the
/// app, so the user asks Apple for the refund.
#[tokio::test]
async fn a_closed_account_is_refused_an_app_store_purchase_and_nothing_is_written() {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let id = app_store::transaction_id();
    let token = h.app_account_token(&user).await;
    let signed = store.transaction(&transaction_payload(&id, STARTER, Some(&token)));
    assert_eq!(h.delete_account(&user).await.status, StatusCode::OK);
    let before = h.balance(&user).await;
    let rows_before = h.ledger(&user).await.len();

    let res = submit(&h, &user, &signed).await;

    res.assert_problem(StatusCode::FORBIDDEN, "ACCOUNT_CLOSED", "closed account");
    assert_eq!(h.balance(&user).await, before);
    assert_eq!(h.ledger(&user).await.len(), rows_before);
    let payment = h.app.store.get_payment(&format!("apple:{id}")).await;
    assert!(matches!(payment, Ok(None)), "{payment:?}");
    h.assert_audit_clean().await;
}

/// The token is a random UUID (version 4, not the version-8 digest of the user id it once
/// was), stored on the account, the same on every read, and another account's differs.
#[tokio::test]
async fn the_account_token_is_a_random_uuid_kept_on_the_account() {
    let h = Harness::new().await;
    let (a, b) = (h.user(), h.user());

    let first = h.app_account_token(&a).await;
    let again = h.app_account_token(&a).await;
    let other = h.app_account_token(&b).await;

    assert_eq!(first.len(), 36, "{first}");
    assert_eq!(&first[14..15], "4", "a version-4 UUID: {first}");
    assert_eq!(first, again);
    assert_ne!(first, other);
    let stored = h.app.store.get_account(&a).await.ok().flatten();
    assert_eq!(stored.and_then(|s| s.app_account_token), Some(first));
}
