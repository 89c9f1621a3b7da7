//! Money an operator can see: every Stripe webhook delivery is counted by outcome (a wrong
//! webhook secret shows as `signature_invalid`, which is alarmed on, before anyone misses their
//! credits), a granted purchase records its credits and its revenue by pack, and a new edit the
//! credits it charged (a replay none); an App Store notification is counted by what it did.
//! One test: the metrics recorder is process-wide.

use atelier_model_server::samples;
use atelier_shared::adapters::metrics::{Metric, dim};
use atelier_shared::adapters::payments::signature;
use atelier_tests::app_store::{self, AppStoreStandIn, notify, submit};
use atelier_tests::app_store_api::{self, AppStoreApiStandIn};
use atelier_tests::stripe::{StripeStandIn, unix_now};
use atelier_tests::{Harness, flushed_metrics};
use http::StatusCode;
use serde_json::{Value, json};

const FUNCTION: &str = "atelier-test-api";

/// The sum of `metric` over the documents whose dimensions include `dims`.
fn total(docs: &[Value], metric: Metric, dims: &[(&str, &str)]) -> u64 {
    docs.iter()
        .filter(|d| dims.iter().all(|(k, v)| d[*k] == *v))
        .filter_map(|d| d[metric.name()].as_u64())
        .sum()
}

/// App Store notifications about one buyer's purchases, one of each outcome: a consumption
/// request answered, a refund, the same refund again, a refund of a transaction not yet
/// posted, and a notification of a kind we do not act on.
async fn app_store_notifications() {
    let store = AppStoreStandIn::new();
    let api = AppStoreApiStandIn::start(app_store::BUNDLE_ID).await;
    let h = app_store_api::harness_answering(&store, &api).await;
    let user = h.user();
    let consent = Harness::json_request("PUT", "/v1/account/consumption-consent")
        .body(axum::body::Body::from(
            json!({ "consented": true }).to_string(),
        ))
        .unwrap_or_else(|e| panic!("request: {e}"));
    assert_eq!(h.call(Some(&user), consent).await.status, StatusCode::OK);
    let bought = app_store::starter_bought_by(&h, &store, &user).await;
    assert_eq!(submit(&h, &user, &bought).await.status, StatusCode::CREATED);
    let not_posted = app_store::starter_bought_by(&h, &store, &user).await;

    let mut outcomes = Vec::new();
    for (kind, signed) in [
        ("CONSUMPTION_REQUEST", &bought),
        ("REFUND", &bought),
        ("REFUND", &bought),
        ("REFUND", &not_posted),
        ("PRICE_INCREASE", &bought),
    ] {
        let res = notify(&h, &store.notification(kind, signed)).await;
        assert_eq!(res.status, StatusCode::OK, "{kind}: {res:?}");
        outcomes.push(res.body["outcome"].clone());
    }

    assert_eq!(
        outcomes,
        [
            "consumption_sent",
            "reversed",
            "already_reversed",
            "reversed_first",
            "ignored"
        ]
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn payment_webhooks_and_app_store_notifications_are_counted_by_outcome_a_purchase_by_its_credits_and_revenue_and_an_edit_by_its_charge()
 {
    let stripe = StripeStandIn::start().await;
    let h = Harness::new().await.with_stripe(&stripe);
    flushed_metrics(FUNCTION); // installs the recorder; nothing recorded yet
    let user = h.user();
    let checkout = h
        .checkout(&user, "c-metrics", &json!({ "pack": "starter" }))
        .await;
    let paid = stripe.pay(&checkout.str("id")).await;

    let first = h.deliver(&paid).await;
    let again = h.deliver(&paid).await;
    let wrong_secret = signature::header(paid.payload.as_bytes(), "whsec_wrong", unix_now());
    let forged = h
        .webhook_raw(paid.payload.clone(), Some(&wrong_secret))
        .await;

    assert_eq!(first.body["outcome"], "granted");
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(forged.status, StatusCode::BAD_REQUEST);
    let original = h.upload(&user, "original", samples::single_pet()).await;
    let edit = json!({ "style": "embroidery", "target": "pet", "original_asset_id": original });
    let charged = h.submit(&user, Some("k-charged"), &edit).await;
    let replayed = h.submit(&user, Some("k-charged"), &edit).await;
    let docs = flushed_metrics(FUNCTION);
    let events = |outcome| total(&docs, Metric::PaymentEvents, &[(dim::OUTCOME, outcome)]);
    assert_eq!(events("granted"), 1);
    assert_eq!(events("duplicate"), 1);
    assert_eq!(events("signature_invalid"), 1);
    assert_eq!(
        total(&docs, Metric::PurchasedCredits, &[(dim::PACK, "starter")]),
        50
    );
    let revenue = &[(dim::PACK, "starter"), (dim::CURRENCY, "usd")];
    assert_eq!(total(&docs, Metric::PurchaseRevenue, revenue), 500);
    assert_eq!(charged.status, StatusCode::ACCEPTED, "{charged:?}");
    assert_eq!(replayed.str("id"), charged.str("id"));
    let price = charged.body["credits"].as_u64();
    assert_eq!(
        Some(total(
            &docs,
            Metric::ChargedCredits,
            &[(dim::OPERATION, "edit")]
        )),
        price,
        "one charge counted, the replay not"
    );
    h.assert_audit_clean().await;

    // The App Store's notifications, counted under the same metric by what they did.
    app_store_notifications().await;
    let docs = flushed_metrics(FUNCTION);
    let events = |outcome| total(&docs, Metric::PaymentEvents, &[(dim::OUTCOME, outcome)]);
    assert_eq!(events("consumption_sent"), 1);
    assert_eq!(events("reversed"), 1);
    assert_eq!(events("duplicate"), 1, "the refund delivered twice");
    assert_eq!(events("reversed_first"), 1);
    assert_eq!(events("ignored"), 1);
}
