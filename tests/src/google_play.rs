//! A stand-in Google on 127.0.0.1, one server: the OAuth2 token endpoint (`POST /token`, a
//! JWT-bearer grant checked against the test service account's public key, the Publisher
//! scope and Google's token endpoint as audience), the Android Publisher API's one-time products
//! (`GET …/purchases/products/{productId}/tokens/{token}` and `POST …:consume`) and voided
//! purchases (`GET …/purchases/voidedpurchases`, paged by token), paths and
//! bodies exactly as Google's discovery document says, which `google-api-python-client`
//! proves by calling them), and Google's certs (`GET /oauth2/v3/certs`, a JWKS). It signs
//! Pub/Sub push OIDC tokens with the key of those certs, as Google does, and forges bad ones
//! on request; `google-auth` judges them alike (tests/tests/google_purchases.rs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use atelier_shared::adapters::payments::google::{
    GooglePlay, GooglePlaySettings, KeySource, PUBLISHER_SCOPE, ServiceAccountKey,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

pub const ACCOUNT_KEY: &str = include_str!("../fixtures/google/play-service-account.pem");
const ACCOUNT_PUBLIC: &str = include_str!("../fixtures/google/play-service-account.pub.pem");
const SIGNER_KEY: &str = include_str!("../fixtures/google/google-signer.pem");
const FORGER_KEY: &str = include_str!("../fixtures/google/forger.pem");
const CERTS: &str = include_str!("../fixtures/google/certs.json");
/// The kid of the stand-in Google's signing key.
pub const KID: &str = "stand-in-google-1";
pub const PACKAGE: &str = "com.example.atelier";
pub const ACCOUNT_EMAIL: &str = "play@atelier-test.iam.gserviceaccount.com";
/// The push subscription's audience and service account.
pub const AUDIENCE: &str = "https://api.example.test/v1/webhooks/google";
pub const PUSHER_EMAIL: &str = "rtdn-push@atelier-test.iam.gserviceaccount.com";
const ACCESS_TOKEN: &str = "stand-in-play-access-token";

/// A one-time product purchase as Google Play holds it.
#[derive(Debug, Clone)]
pub struct Purchase {
    pub product_id: String,
    pub order_id: String,
    /// 0 purchased, 1 canceled, 2 pending.
    pub purchase_state: i32,
    /// 0 yet to be consumed, 1 consumed.
    pub consumption_state: i32,
    pub quantity: i64,
    pub account: Option<String>,
    /// When it was bought (milliseconds since the epoch).
    pub purchase_time_ms: i64,
    /// When Google voided it (refund, chargeback): it shows in the voided purchases list.
    /// `purchaseState` is left as it was, the case where only that list tells.
    pub voided_time_ms: Option<i64>,
}

impl Purchase {
    pub fn new(product_id: &str) -> Purchase {
        Purchase {
            product_id: product_id.to_owned(),
            order_id: format!(
                "GPA.{:04}-{:04}-{:04}-{:05}",
                rand::random::<u16>() % 10_000,
                rand::random::<u16>() % 10_000,
                rand::random::<u16>() % 10_000,
                rand::random::<u32>() % 100_000
            ),
            purchase_state: 0,
            consumption_state: 0,
            quantity: 1,
            account: None,
            purchase_time_ms: crate::app_store::now_ms(),
            voided_time_ms: None,
        }
    }
}

#[derive(Default)]
struct Inner {
    /// By purchase token.
    purchases: HashMap<String, Purchase>,
    token_calls: u32,
    get_calls: u32,
    /// `purchases.voidedpurchases.list` pages served.
    voided_calls: u32,
    /// Consumes that changed a purchase (a second one is refused, as by Google).
    consumed: u32,
    /// Calls refused for their bearer.
    unauthorized: u32,
    /// The next Publisher calls answered 503.
    fail_next: u32,
    /// The next consumes answered 503.
    fail_consumes: u32,
}

/// The running stand-in.
#[derive(Clone)]
pub struct GoogleStandIn {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

impl GoogleStandIn {
    pub async fn start() -> GoogleStandIn {
        let (listener, url) = crate::local_listener().await;
        let s = GoogleStandIn {
            url,
            inner: Arc::default(),
        };
        let purchase_path = "/androidpublisher/v3/applications/{package}/purchases/products/{product}/tokens/{token}";
        let voided_path = "/androidpublisher/v3/applications/{package}/purchases/voidedpurchases";
        let app = Router::new()
            .route(voided_path, get(voided_list))
            .route("/token", post(token))
            .route("/oauth2/v3/certs", get(|| async { CERTS }))
            .route(purchase_path, get(get_purchase).post(consume))
            .with_state(s.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        s
    }

    /// Our settings for this stand-in.
    pub fn settings(&self) -> GooglePlaySettings {
        GooglePlaySettings {
            package_name: PACKAGE.to_owned(),
            publisher_url: self.url.clone(),
            token_url: format!("{}/token", self.url),
            push_audience: AUDIENCE.to_owned(),
            push_service_account: PUSHER_EMAIL.to_owned(),
            certs_url: format!("{}/oauth2/v3/certs", self.url),
            key: KeySource::Plain(self.key_json().to_string().into()),
        }
    }

    /// The service account's JSON key, as Google hands it out (its `token_uri` this stand-in).
    pub fn key_json(&self) -> Value {
        json!({
            "type": "service_account",
            "project_id": "atelier-test",
            "private_key_id": "stand-in-key-1",
            "private_key": ACCOUNT_KEY,
            "client_email": ACCOUNT_EMAIL,
            "client_id": "100000000000000000001",
            "token_uri": format!("{}/token", self.url),
        })
    }

    /// A client of this stand-in, as the API builds one at cold start.
    pub fn client(&self) -> GooglePlay {
        let key = ServiceAccountKey {
            client_email: ACCOUNT_EMAIL.to_owned(),
            private_key_pem: ACCOUNT_KEY.to_owned(),
        };
        GooglePlay::new(self.settings(), &key, std::time::Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Google Play records `purchase`; its purchase token.
    pub fn buy(&self, purchase: Purchase) -> String {
        let token = format!(
            "stand-in-token.{}-{}",
            ulid::Ulid::new().to_string().to_lowercase(),
            "x".repeat(100)
        );
        self.lock().purchases.insert(token.clone(), purchase);
        token
    }

    /// The purchase behind `token`, as Google Play holds it now.
    pub fn purchase(&self, token: &str) -> Option<Purchase> {
        self.lock().purchases.get(token).cloned()
    }

    /// Google voids the purchase behind `token` now (a refund): it joins the voided list.
    pub fn void(&self, token: &str) {
        if let Some(p) = self.lock().purchases.get_mut(token) {
            p.voided_time_ms = Some(crate::app_store::now_ms());
        }
    }

    /// Voided purchases list pages served.
    pub fn voided_calls(&self) -> u32 {
        self.lock().voided_calls
    }

    /// Consumes that changed a purchase.
    pub fn consumed(&self) -> u32 {
        self.lock().consumed
    }

    pub fn token_calls(&self) -> u32 {
        self.lock().token_calls
    }

    pub fn get_calls(&self) -> u32 {
        self.lock().get_calls
    }

    pub fn unauthorized(&self) -> u32 {
        self.lock().unauthorized
    }

    /// The next `n` Publisher calls are answered 503.
    pub fn fail_next(&self, n: u32) {
        self.lock().fail_next = n;
    }

    /// The next `n` consumes are answered 503 (gets are served).
    pub fn fail_next_consumes(&self, n: u32) {
        self.lock().fail_consumes = n;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Some(answer)` when a Publisher call is refused before it is served.
    fn refuse(&self, headers: &HeaderMap) -> Option<Response> {
        let mut inner = self.lock();
        if bearer(headers) != ACCESS_TOKEN {
            inner.unauthorized += 1;
            return Some(google_error(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED"));
        }
        if inner.fail_next > 0 {
            inner.fail_next -= 1;
            return Some(google_error(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"));
        }
        None
    }
}

fn bearer(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned()
}

/// An error body as Google's APIs write one.
fn google_error(status: StatusCode, kind: &str) -> Response {
    let message = status.canonical_reason().unwrap_or("error");
    let body = json!({"error": {"code": status.as_u16(), "message": message, "status": kind,
        "errors": [{"message": message, "domain": "global", "reason": kind.to_lowercase()}]}});
    (status, axum::Json(body)).into_response()
}

/// The OAuth2 token endpoint of the Publisher's service account.
async fn token(State(s): State<GoogleStandIn>, body: Bytes) -> Response {
    let (granted, res) = crate::push::jwt_bearer_grant(
        &body,
        ACCOUNT_PUBLIC,
        ACCOUNT_EMAIL,
        PUBLISHER_SCOPE,
        ACCESS_TOKEN,
    );
    if granted {
        s.lock().token_calls += 1;
    }
    res
}

/// `purchases.products.get`: Google's `ProductPurchase` (400 for a token it does not know
/// for this app and product, as Google answers "Invalid Value").
async fn get_purchase(
    State(s): State<GoogleStandIn>,
    Path((package, product, token)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = s.refuse(&headers) {
        return refused;
    }
    let mut inner = s.lock();
    inner.get_calls += 1;
    let Some(p) = inner
        .purchases
        .get(&token)
        .filter(|p| package == PACKAGE && p.product_id == product)
    else {
        return google_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT");
    };
    let mut body = json!({
        "kind": "androidpublisher#productPurchase",
        "purchaseTimeMillis": p.purchase_time_ms.to_string(),
        "purchaseState": p.purchase_state,
        "consumptionState": p.consumption_state,
        "developerPayload": "",
        "orderId": p.order_id,
        "acknowledgementState": p.consumption_state,
        "purchaseType": 0,
        "regionCode": "US",
        "quantity": p.quantity,
        "refundableQuantity": p.quantity,
    });
    if let Some(account) = &p.account {
        body["obfuscatedExternalAccountId"] = json!(account);
    }
    axum::Json(body).into_response()
}

/// `purchases.voidedpurchases.list` as Google answers it: the one-time products (`type` 0)
/// voided from `startTime` (at most 30 days back, else 400) to `endTime` (default now), oldest
/// first, `maxResults` a page (default and most 1000), the next page's `token` in
/// `tokenPagination.nextPageToken`; no `voidedPurchases` at all when none.
async fn voided_list(
    State(s): State<GoogleStandIn>,
    Path(package): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = s.refuse(&headers) {
        return refused;
    }
    let now = crate::app_store::now_ms();
    let num = |k: &str| q.get(k).and_then(|v| v.parse::<i64>().ok());
    let start = num("startTime").unwrap_or(now - 30 * 86_400_000);
    let per_page = num("maxResults").unwrap_or(1000).clamp(1, 1000) as usize;
    if package != PACKAGE || start < now - 30 * 86_400_000 || num("type").unwrap_or(0) != 0 {
        return google_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT");
    }
    let mut inner = s.lock();
    inner.voided_calls += 1;
    let end = num("endTime").unwrap_or(now);
    let mut voided: Vec<(i64, &String, &Purchase)> = inner
        .purchases
        .iter()
        .filter_map(|(t, p)| p.voided_time_ms.map(|v| (v, t, p)))
        .filter(|(v, _, _)| (start..=end).contains(v))
        .collect();
    voided.sort_by_key(|(v, t, _)| (*v, (*t).clone()));
    let from: usize = q.get("token").and_then(|t| t.parse().ok()).unwrap_or(0);
    let page: Vec<Value> = voided
        .iter()
        .skip(from)
        .take(per_page)
        .map(|(v, token, p)| {
            json!({ "kind": "androidpublisher#voidedPurchase", "purchaseToken": token,
                "purchaseTimeMillis": p.purchase_time_ms.to_string(),
                "voidedTimeMillis": v.to_string(), "orderId": p.order_id,
                "voidedSource": 0, "voidedReason": 1, "refundType": 1 })
        })
        .collect();
    let mut body = json!({ "pageInfo": { "totalResults": voided.len(),
        "resultPerPage": per_page, "startIndex": from } });
    if !page.is_empty() {
        body["voidedPurchases"] = json!(page);
    }
    if from + per_page < voided.len() {
        body["tokenPagination"] = json!({ "nextPageToken": (from + per_page).to_string() });
    }
    axum::Json(body).into_response()
}

/// `purchases.products.consume`: an empty answer; a purchase not purchased or consumed
/// already is refused.
async fn consume(
    State(s): State<GoogleStandIn>,
    Path((package, product, token)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let Some(token) = token.strip_suffix(":consume") else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if let Some(refused) = s.refuse(&headers) {
        return refused;
    }
    let mut inner = s.lock();
    if inner.fail_consumes > 0 {
        inner.fail_consumes -= 1;
        return google_error(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE");
    }
    let Some(p) = inner
        .purchases
        .get_mut(token)
        .filter(|p| package == PACKAGE && p.product_id == product)
    else {
        return google_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT");
    };
    if p.purchase_state != 0 || p.consumption_state == 1 {
        return google_error(StatusCode::BAD_REQUEST, "FAILED_PRECONDITION");
    }
    p.consumption_state = 1;
    inner.consumed += 1;
    StatusCode::NO_CONTENT.into_response()
}

/// How a push's OIDC token is made (the defaults are Pub/Sub's, valid now).
#[derive(Debug, Clone)]
pub struct PushToken {
    pub issuer: String,
    pub audience: String,
    pub email: String,
    /// Seconds from now (negative: expired).
    pub expires_in: i64,
    /// Signed by a key Google never had (same kid).
    pub forged: bool,
}

impl Default for PushToken {
    fn default() -> PushToken {
        PushToken {
            issuer: "https://accounts.google.com".to_owned(),
            audience: AUDIENCE.to_owned(),
            email: PUSHER_EMAIL.to_owned(),
            expires_in: 3600,
            forged: false,
        }
    }
}

impl PushToken {
    /// The token, as Pub/Sub puts it in `Authorization: Bearer …`.
    pub fn sign(&self) -> String {
        let now = atelier_shared::clock::now().unix_timestamp();
        let claims = json!({
            "aud": self.audience,
            "azp": "100000000000000000002",
            "email": self.email,
            "email_verified": true,
            "exp": now + self.expires_in,
            "iat": now + self.expires_in - 3600,
            "iss": self.issuer,
            "sub": "100000000000000000002",
        });
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(KID.to_owned());
        let pem = if self.forged { FORGER_KEY } else { SIGNER_KEY };
        let key = EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        jsonwebtoken::encode(&header, &claims, &key).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// A Pub/Sub push body carrying `notification` (a `DeveloperNotification`).
pub fn push_body(notification: &Value) -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode(notification.to_string());
    let id = format!("{}", rand::random::<u64>() >> 12);
    let at = "2026-12-02T10:00:00.000Z";
    // Pub/Sub writes the id and time in both spellings.
    json!({
        "message": {
            "data": data,
            "messageId": id,
            "message_id": id,
            "publishTime": at,
            "publish_time": at,
        },
        "subscription": "projects/atelier-test/subscriptions/play-rtdn",
    })
}

/// A voided one-time purchase notification for `order_id`.
pub fn voided(order_id: &str, token: &str) -> Value {
    json!({
        "version": "1.0",
        "packageName": PACKAGE,
        "eventTimeMillis": "1764670000000",
        "voidedPurchaseNotification": {
            "purchaseToken": token,
            "orderId": order_id,
            "productType": 2,
            "refundType": 1,
        },
    })
}

/// Tokens Pub/Sub never sends us, each with why: another issuer, audience or service
/// account, a signature not Google's, expired.
pub fn bad_push_tokens() -> Vec<(&'static str, PushToken)> {
    let good = PushToken::default();
    vec![
        (
            "wrong issuer",
            PushToken {
                issuer: "https://accounts.example.com".to_owned(),
                ..good.clone()
            },
        ),
        (
            "wrong audience",
            PushToken {
                audience: "https://other.example.test/push".to_owned(),
                ..good.clone()
            },
        ),
        (
            "wrong e-mail",
            PushToken {
                email: "someone@atelier-test.iam.gserviceaccount.com".to_owned(),
                ..good.clone()
            },
        ),
        (
            "bad signature",
            PushToken {
                forged: true,
                ..good.clone()
            },
        ),
        (
            "expired",
            PushToken {
                expires_in: -60,
                ..good
            },
        ),
    ]
}

/// The Google Play product of the starter pack wherever the stand-in sells it.
pub const STARTER: &str = "starter_pack";

impl crate::Harness {
    /// This harness with Google Play purchases on, against `google`.
    pub fn with_google_play(mut self, google: &GoogleStandIn) -> crate::Harness {
        self.app = self.app.with_google_play(Some(google.client()));
        self
    }
}

/// `config` selling the starter pack as Google Play's [`STARTER`] too, after whatever App
/// Store product it has (so it can follow `app_store::sell_on`).
pub fn sell_on(config: &mut atelier_shared::config::Config, google: &GoogleStandIn) {
    let packs = format!(
        "starter:50:500:usd:{}:{STARTER},studio:250:2000:usd",
        crate::app_store::STARTER
    );
    config.payments.packs =
        atelier_shared::domain::Packs::parse(&packs).unwrap_or_else(|e| panic!("{e}"));
    config.payments.google_play = Some(google.settings());
}

/// `POST /v1/purchases/google` of `product` and `token` by `user`.
pub async fn submit(
    h: &crate::Harness,
    user: &atelier_shared::domain::UserId,
    product: &str,
    token: &str,
) -> crate::Reply {
    let body = json!({ "productId": product, "purchaseToken": token });
    submit_body(h, user, &body).await
}

/// `POST /v1/purchases/google` of `body` by `user`.
pub async fn submit_body(
    h: &crate::Harness,
    user: &atelier_shared::domain::UserId,
    body: &Value,
) -> crate::Reply {
    let req = http::Request::post("/v1/purchases/google")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap_or_else(|e| panic!("request: {e}"));
    h.call(Some(user), req).await
}

/// Pub/Sub's push of `notification` with `token` as its OIDC token (`None`: no header).
pub async fn push(h: &crate::Harness, token: Option<&str>, notification: &Value) -> crate::Reply {
    let mut req =
        http::Request::post("/v1/webhooks/google").header("content-type", "application/json");
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let req = req
        .body(axum::body::Body::from(push_body(notification).to_string()))
        .unwrap_or_else(|e| panic!("request: {e}"));
    h.call(None, req).await
}
