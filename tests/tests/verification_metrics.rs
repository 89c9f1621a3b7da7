//! What an operator is alarmed on when verification fails (`VerificationFailures` by
//! `Source`): App Store signed data we refused — a transaction an app posted, a notification —
//! and a push service refusing our credentials — APNs our provider token (403), Google's token
//! endpoint our service account. Accepted data and delivered pushes count nothing. One test:
//! the metrics recorder is process-wide.

use atelier_shared::adapters::metrics::{Metric, Verification, dim};
use atelier_shared::adapters::webhooks::PrivateAddresses;
use atelier_shared::adapters::webhooks::client::WebhookClient;
use atelier_shared::services::webhooks;
use atelier_tests::app_store::{self, AppStoreStandIn};
use atelier_tests::push::{self, PushStandIn, deliver_all, finished_edit};
use atelier_tests::{Harness, StandIn, flushed_metrics};
use http::StatusCode;
use serde_json::{Value, json};

const FUNCTION: &str = "atelier-test-verification";

/// VerificationFailures counted for `source`.
fn failures(docs: &[Value], source: Verification) -> u64 {
    docs.iter()
        .filter(|d| d[dim::SOURCE] == source.as_str())
        .filter_map(|d| d[Metric::VerificationFailures.name()].as_u64())
        .sum()
}

/// Refused App Store data: a forged transaction (another chain) and a forged notification;
/// the genuine transaction beside them is granted.
async fn refused_app_store_data() {
    let store = AppStoreStandIn::new();
    let h = app_store::harness(&store).await;
    let user = h.user();
    let genuine = app_store::starter_bought_by(&h, &store, &user).await;
    let forger = AppStoreStandIn::new();
    let forged = app_store::starter_transaction(&forger);

    let granted = app_store::submit(&h, &user, &genuine).await;
    let refused = app_store::submit(&h, &user, &forged).await;
    let notified = app_store::notify(&h, &forger.notification("REFUND", &genuine)).await;

    assert_eq!(granted.status, StatusCode::CREATED, "{granted:?}");
    assert_eq!(refused.code(), "APP_STORE_DATA_INVALID", "{refused:?}");
    assert_eq!(notified.code(), "APP_STORE_DATA_INVALID", "{notified:?}");
}

/// Pushes to an iPhone and an Android phone with credentials the push services do not know,
/// then with the right ones.
async fn refused_push_credentials() {
    let h = Harness::isolated(|_| {}).await;
    let (model, s) = (StandIn::start().await, PushStandIn::start().await);
    let http = WebhookClient::new(PrivateAddresses::Allow).unwrap_or_else(|e| panic!("{e}"));
    let stranger_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .unwrap_or_else(|e| panic!("{e}"))
        .serialize_pem();
    let refused = s.pusher_as(&stranger_key, "stranger@elsewhere.iam.gserviceaccount.com");
    let user = h.funded_user(40).await;
    let iphone = json!({ "platform": "ios", "token": "ab".repeat(32) });
    let pixel = json!({ "platform": "android", "token": "fcm:verification" });
    assert_eq!(
        h.put_device(&user, "iphone", &iphone).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        h.put_device(&user, "pixel", &pixel).await.status,
        StatusCode::CREATED
    );

    let event = finished_edit(&h, &model, &user, "verification").await;
    let hooks = push::hooks(&h, &http, &refused);
    webhooks::fan_out(hooks, std::slice::from_ref(&event))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let tried = deliver_all(&h, hooks).await;

    assert_eq!(tried.len(), 2, "{tried:?}");
    assert!(
        s.delivered().is_empty(),
        "nothing is delivered with refused credentials"
    );
    assert_eq!(
        h.device_ids(&user).await.len(),
        2,
        "refused credentials unregister nothing"
    );
}

#[tokio::test]
async fn refused_app_store_data_and_refused_push_credentials_are_counted_by_source() {
    flushed_metrics(FUNCTION); // installs the recorder; nothing recorded yet

    refused_app_store_data().await;
    refused_push_credentials().await;

    let docs = flushed_metrics(FUNCTION);
    assert_eq!(failures(&docs, Verification::AppStoreTransaction), 1);
    assert_eq!(failures(&docs, Verification::AppStoreNotification), 1);
    assert_eq!(failures(&docs, Verification::Apns), 1);
    assert_eq!(failures(&docs, Verification::Fcm), 1);
}
