//! A stand-in App Store Server API for Send Consumption Information
//! (`PUT /inApps/v2/transactions/consumption/{transactionId}`) and Get Transaction Info
//! (`GET /inApps/v1/transactions/{transactionId}`: `{"signedTransactionInfo": …}` signed now by
//! the stand-in App Store it was given, with a refund's `revocationDate` once a test revokes it;
//! `404` with Apple's `errorCode` 4040010 for one it does not know): it believes a request only with
//! Apple's authentication (an ES256 JWT signed by the In-App Purchase key it was made with, `kid`
//! that key's id, `aud` `appstoreconnect-v1`, `iss` the issuer, `bid` the app, not expired, at
//! most an hour long) and a body Apple takes (`customerConsented` true, `deliveryStatus` and
//! `sampleContentProvided` present, `consumptionPercentage` 0-100000), answering `202` as Apple
//! does; a test can make it answer `503`. Apple's own `app-store-server-library` is one of its
//! clients (tests/tests/apple_purchases.rs).

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};

pub const KEY_ID: &str = "STANDIN001";
pub const ISSUER_ID: &str = "57246542-96fe-1a63-e053-0824d011072a";

/// One request the stand-in took: the transaction and the body.
#[derive(Debug, Clone)]
pub struct Taken {
    pub transaction_id: String,
    pub body: Value,
    pub user_agent: Option<String>,
}

#[derive(Default)]
struct Inner {
    taken: Vec<Taken>,
    /// Transactions Apple knows, by id (their payloads), and the store that signs them.
    transactions: std::collections::HashMap<String, Value>,
    signer: Option<crate::app_store::AppStoreStandIn>,
    lookups: u32,
    refused: u32,
    unavailable_left: u32,
}

/// The running stand-in, with its own key.
#[derive(Clone)]
pub struct AppStoreApiStandIn {
    pub url: String,
    private_pem: String,
    public_pem: String,
    bundle_id: String,
    inner: Arc<Mutex<Inner>>,
}

impl AppStoreApiStandIn {
    pub async fn start(bundle_id: &str) -> AppStoreApiStandIn {
        let (listener, url) = crate::local_listener().await;
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .unwrap_or_else(|e| panic!("{e}"));
        let s = AppStoreApiStandIn {
            url,
            private_pem: key.serialize_pem(),
            public_pem: key.public_key_pem(),
            bundle_id: bundle_id.to_owned(),
            inner: Arc::default(),
        };
        let app = Router::new()
            .route(
                "/inApps/v2/transactions/consumption/{id}",
                put(send_consumption),
            )
            .route("/inApps/v1/transactions/{id}", get(transaction_info))
            .with_state(s.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        s
    }

    /// The key as the operator stores it (`ATELIER_APPLE_API_KEY` / its secret).
    pub fn key_json(&self) -> Value {
        json!({ "keyId": KEY_ID, "issuerId": ISSUER_ID, "privateKey": self.private_pem })
    }

    /// The `.p8` PEM, for Apple's library.
    pub fn private_pem(&self) -> &str {
        &self.private_pem
    }

    /// Apple knows the transaction `payload` (signed by `store` when asked for).
    pub fn knows(&self, store: &crate::app_store::AppStoreStandIn, payload: &Value) {
        let mut inner = self.lock();
        inner.signer = Some(store.clone());
        let id = payload["transactionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        inner.transactions.insert(id, payload.clone());
    }

    /// Apple refunds the known transaction `id` now.
    pub fn revoke(&self, id: &str) {
        if let Some(t) = self.lock().transactions.get_mut(id) {
            t["revocationDate"] = json!(crate::app_store::now_ms());
            t["revocationReason"] = json!(0);
        }
    }

    /// Get Transaction Info requests served.
    pub fn lookups(&self) -> u32 {
        self.lock().lookups
    }

    /// The next `n` requests are answered `503`.
    pub fn fail_next(&self, n: u32) {
        self.lock().unavailable_left = n;
    }

    pub fn taken(&self) -> Vec<Taken> {
        self.lock().taken.clone()
    }

    /// Requests refused for their authentication or body.
    pub fn refused(&self) -> u32 {
        self.lock().refused
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the bearer is Apple's authentication for this key and app.
    fn authenticated(&self, headers: &HeaderMap) -> bool {
        let Some(token) = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
        else {
            return false;
        };
        let Ok(header) = jsonwebtoken::decode_header(token) else {
            return false;
        };
        let Ok(key) = DecodingKey::from_ec_pem(self.public_pem.as_bytes()) else {
            return false;
        };
        let mut v = Validation::new(Algorithm::ES256);
        v.set_audience(&["appstoreconnect-v1"]);
        v.set_issuer(&[ISSUER_ID]);
        v.set_required_spec_claims(&["exp", "aud", "iss"]);
        let Ok(claims) = jsonwebtoken::decode::<Value>(token, &key, &v) else {
            return false;
        };
        let c = claims.claims;
        let life_ok = match (c["iat"].as_i64(), c["exp"].as_i64()) {
            (Some(iat), Some(exp)) => exp - iat <= 3600,
            (None, Some(exp)) => exp - crate::app_store::now_ms() / 1000 <= 3600,
            _ => false,
        };
        header.kid.as_deref() == Some(KEY_ID) && c["bid"] == self.bundle_id.as_str() && life_ok
    }
}

/// Whether `body` is a ConsumptionRequest Apple takes.
fn body_ok(body: &Value) -> bool {
    let pct_ok = match body.get("consumptionPercentage") {
        None => true,
        Some(p) => p.as_u64().is_some_and(|p| p <= 100_000),
    };
    let delivery = [
        "DELIVERED",
        "UNDELIVERED_QUALITY_ISSUE",
        "UNDELIVERED_WRONG_ITEM",
        "UNDELIVERED_SERVER_OUTAGE",
        "UNDELIVERED_OTHER",
    ];
    body["customerConsented"] == true
        && body["sampleContentProvided"].is_boolean()
        && body["deliveryStatus"]
            .as_str()
            .is_some_and(|d| delivery.contains(&d))
        && pct_ok
}

async fn send_consumption(
    State(s): State<AppStoreApiStandIn>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !s.authenticated(&headers) {
        s.lock().refused += 1;
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if !body_ok(&body) || !id.chars().all(|c| c.is_ascii_digit()) {
        s.lock().refused += 1;
        let error = json!({ "errorCode": 4_000_000, "errorMessage": "An error that indicates an invalid request." });
        return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
    }
    let mut inner = s.lock();
    if inner.unavailable_left > 0 {
        inner.unavailable_left -= 1;
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let user_agent = headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    inner.taken.push(Taken {
        transaction_id: id,
        body,
        user_agent,
    });
    StatusCode::ACCEPTED.into_response()
}

async fn transaction_info(
    State(s): State<AppStoreApiStandIn>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if !s.authenticated(&headers) {
        s.lock().refused += 1;
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let mut inner = s.lock();
    if inner.unavailable_left > 0 {
        inner.unavailable_left -= 1;
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    inner.lookups += 1;
    let (Some(signer), Some(payload)) = (&inner.signer, inner.transactions.get(&id)) else {
        let error = json!({ "errorCode": 4_040_010, "errorMessage": "Transaction id not found." });
        return (StatusCode::NOT_FOUND, axum::Json(error)).into_response();
    };
    let mut payload = payload.clone();
    payload["signedDate"] = json!(crate::app_store::now_ms());
    let signed = signer.sign(&payload);
    axum::Json(json!({ "signedTransactionInfo": signed })).into_response()
}

/// A harness like [`crate::app_store::harness`] that also answers `CONSUMPTION_REQUEST`s to `api`, configured
/// as the operator does (the key's JSON, read by the API's own setup).
pub async fn harness_answering(
    store: &crate::app_store::AppStoreStandIn,
    api: &AppStoreApiStandIn,
) -> crate::Harness {
    use atelier_shared::adapters::payments::apple::AppleApiSettings;
    use atelier_shared::adapters::payments::google::KeySource;
    let mut config = crate::Harness::config();
    crate::app_store::sell_on(&mut config, store);
    if let Some(apple) = config.payments.apple.as_mut() {
        apple.api = Some(AppleApiSettings {
            url: api.url.clone(),
            key: KeySource::Plain(api.key_json().to_string().into()),
        });
    }
    let mut h = crate::Harness::with_config(config).await;
    let client = atelier_shared::adapters::payments::setup::connect_app_store_api(
        &h.app.config.payments,
        &h.clients,
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(client.is_some(), "the App Store Server API is configured");
    h.app = h.app.with_app_store_api(client);
    h
}
