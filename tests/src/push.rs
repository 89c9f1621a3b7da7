//! Stand-in push services on 127.0.0.1, one server: APNs (`POST /3/device/{token}`, served
//! over h2c: our client speaks HTTP/2 with prior knowledge to an `http://` APNs URL), FCM
//! HTTP v1 (`POST /v1/projects/{project}/messages:send`) and the OAuth2 token endpoint
//! (`POST /token`). Each checks what the real service requires (the provider JWT's signature
//! with the test key, `apns-topic`, `apns-push-type`, the bearer it issued), answers as the
//! real one does (APNs echoes `apns-id`, which its clients match answers by), counts
//! deliveries per device token, and can be told that a token is dead or malformed or that the
//! next pushes fail. `tests/tests/push_official.rs` drives it with the services' client
//! libraries.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use atelier_model_server::samples;
use atelier_shared::adapters::push::{ApnsSettings, FcmSettings, Pusher};
use atelier_shared::adapters::webhooks::client::WebhookClient;
use atelier_shared::clock;
use atelier_shared::domain::UserId;
use atelier_shared::domain::webhooks::DeliveryMessage;
use atelier_shared::services::process::Outcome;
use atelier_shared::services::webhooks::{self, Hooks};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Version};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};

use crate::{Harness, StandIn};

pub const APNS_KEY: &str = include_str!("../fixtures/push/apns-test-key.p8");
const APNS_PUBLIC: &str = include_str!("../fixtures/push/apns-test-key.pub.pem");
pub const FCM_KEY: &str = include_str!("../fixtures/push/fcm-test-service-account.pem");
const FCM_PUBLIC: &str = include_str!("../fixtures/push/fcm-test-service-account.pub.pem");
pub const TOPIC: &str = "test.atelier.app";
pub const TEAM: &str = "TEAMID1234";
pub const KEY_ID: &str = "KEYID12345";
pub const PROJECT: &str = "atelier-test";
pub const CLIENT_EMAIL: &str = "push@atelier-test.iam.gserviceaccount.com";
const ACCESS_TOKEN: &str = "stand-in-access-token";
const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// One push as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub token: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
    pub http2: bool,
}

#[derive(Default)]
struct Inner {
    pushes: Vec<Received>,
    /// What a token is answered instead of a delivery (410 dead, 400 malformed, 500).
    refused: HashMap<String, StatusCode>,
    fail_next: u32,
    /// The next pushes held this long before they are answered (and delivered).
    slow_next: (u32, std::time::Duration),
    token_calls: u32,
}

/// The running stand-in.
#[derive(Clone)]
pub struct PushStandIn {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

impl PushStandIn {
    pub async fn start() -> PushStandIn {
        let (listener, url) = crate::local_listener().await;
        let s = PushStandIn {
            url,
            inner: Arc::default(),
        };
        let app = Router::new()
            .route("/3/device/{token}", post(apns))
            .route("/v1/projects/{project}/{method}", post(fcm))
            .route("/token", post(token))
            .with_state(s.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        s
    }

    /// A client of this stand-in, as the sweeper builds one from its settings.
    pub fn pusher(&self) -> Pusher {
        self.pusher_as(APNS_KEY, CLIENT_EMAIL)
    }

    /// [`PushStandIn::pusher`] giving up on a push after `timeout` instead of 5 s (the fault
    /// harness holds a push past a short one, so the held push costs it little time).
    pub fn pusher_timing_out_after(&self, timeout: std::time::Duration) -> Pusher {
        self.client(APNS_KEY, CLIENT_EMAIL, timeout)
    }

    /// A client signing with `apns_key` and exchanging its FCM assertion as `client_email`
    /// (another key or account than the stand-in knows: refused credentials).
    pub fn pusher_as(&self, apns_key: &str, client_email: &str) -> Pusher {
        self.client(apns_key, client_email, std::time::Duration::from_secs(5))
    }

    fn client(&self, apns_key: &str, client_email: &str, timeout: std::time::Duration) -> Pusher {
        let apns = ApnsSettings {
            base_url: self.url.clone(),
            key_id: KEY_ID.to_owned(),
            team_id: TEAM.to_owned(),
            topic: TOPIC.to_owned(),
            key_pem: apns_key.to_owned(),
        };
        let fcm = FcmSettings {
            base_url: self.url.clone(),
            token_url: format!("{}/token", self.url),
            project_id: PROJECT.to_owned(),
            client_email: client_email.to_owned(),
            private_key_pem: FCM_KEY.to_owned(),
        };
        Pusher::new(Some(apns), Some(fcm), timeout).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The service-account key file as Firebase's console hands it out, for `client_email`,
    /// with this stand-in's token endpoint as `token_uri` (what the official client reads).
    pub fn service_account(&self, client_email: &str) -> Value {
        json!({
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": "stand-in-key",
            "private_key": FCM_KEY,
            "client_email": client_email,
            "client_id": "1",
            "token_uri": format!("{}/token", self.url),
        })
    }

    /// From now on, `token` is reported dead (APNs 410 `Unregistered`, FCM 404 `UNREGISTERED`).
    pub fn invalidate(&self, token: &str) {
        self.answer(token, StatusCode::GONE);
    }

    /// From now on, `token` is malformed: APNs 400 `BadDeviceToken` (a token of the other
    /// APNs environment, or none at all), FCM 400 `INVALID_ARGUMENT`.
    pub fn malformed(&self, token: &str) {
        self.answer(token, StatusCode::BAD_REQUEST);
    }

    /// From now on, every push to `token` is answered 500.
    pub fn failing(&self, token: &str) {
        self.answer(token, StatusCode::INTERNAL_SERVER_ERROR);
    }

    fn answer(&self, token: &str, status: StatusCode) {
        self.lock().refused.insert(token.to_owned(), status);
    }

    /// The next `n` pushes are answered 500 (and not counted as delivered).
    pub fn fail_next(&self, n: u32) {
        self.lock().fail_next = n;
    }

    /// The next `n` pushes (after those [`PushStandIn::fail_next`] fails) are held `delay`
    /// before they are delivered and answered: past the client's timeout, a push that went
    /// out though its sender never heard so.
    pub fn slow_next(&self, n: u32, delay: std::time::Duration) {
        self.lock().slow_next = (n, delay);
    }

    /// Waits as [`PushStandIn::slow_next`] said, for this push.
    async fn hold(&self) {
        let delay = {
            let mut inner = self.lock();
            let (n, delay) = inner.slow_next;
            // After the failures said by `fail_next`, so a held push is one that goes out.
            (n > 0 && inner.fail_next == 0).then(|| {
                inner.slow_next.0 = n - 1;
                delay
            })
        };
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
    }

    /// Pushes delivered (answered 200) to `token`.
    pub fn delivered_to(&self, token: &str) -> usize {
        self.lock()
            .pushes
            .iter()
            .filter(|p| p.token == token)
            .count()
    }

    /// Every push delivered, oldest first.
    pub fn delivered(&self) -> Vec<Received> {
        self.lock().pushes.clone()
    }

    /// How many access tokens were issued.
    pub fn token_calls(&self) -> u32 {
        self.lock().token_calls
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Pushes sent by the services' client libraries (`tests/official-push/send.py`, in the
    /// venv `cargo xtask test` makes from its pinned requirements), one case a line: what each
    /// library reported.
    pub async fn official(cases: &[Value]) -> Vec<Value> {
        let python = std::env::var("ATELIER_PUSH_PYTHON").unwrap_or_else(|_| {
            panic!("ATELIER_PUSH_PYTHON is unset: run with `cargo xtask test`")
        });
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/official-push/send.py");
        let input: String = cases.iter().map(|c| format!("{c}\n")).collect();
        crate::receiver::json_lines(python, script, &input).await
    }

    /// `Some(answer)` when the push is refused before it counts.
    fn refuse(&self, token: &str) -> Option<StatusCode> {
        let mut inner = self.lock();
        if let Some(status) = inner.refused.get(token) {
            return Some(*status);
        }
        if inner.fail_next > 0 {
            inner.fail_next -= 1;
            return Some(StatusCode::INTERNAL_SERVER_ERROR);
        }
        None
    }
}

/// The sweeper's delivery context on `h`'s stack, pushing through `pusher`.
pub fn hooks<'a>(h: &'a Harness, http: &'a WebhookClient, pusher: &'a Pusher) -> Hooks<'a> {
    Hooks {
        store: &h.app.store,
        http,
        settings: &h.app.config.webhooks,
        queue: &h.app.hooks_queue,
        pusher: Some(pusher),
    }
}

/// A funded `user`'s edit (idempotency key `key`) processed to the end; the id of its
/// `edit.succeeded` event.
pub async fn finished_edit(h: &Harness, model: &StandIn, user: &UserId, key: &str) -> String {
    let pet = json!({ "style": "embroidery", "target": "pet" });
    let job = h.submit_photo(user, key, samples::single_pet(), pet).await;
    let id = atelier_shared::domain::JobId::parse(&job).unwrap_or_else(|| panic!("{job}"));
    let outcome = h.processor(model).process(&id).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    format!("evt_{job}_succeeded")
}

/// Delivers every message on the delivery queue (each once), until none is left.
pub async fn deliver_all(h: &Harness, hooks: Hooks<'_>) -> Vec<DeliveryMessage> {
    let mut seen = Vec::new();
    loop {
        let messages = h.take_hook_messages().await;
        if messages.is_empty() {
            return seen;
        }
        for m in messages {
            webhooks::deliver(hooks, &m, clock::now())
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            seen.push(m);
        }
    }
}

fn header_map(headers: &HeaderMap) -> HashMap<String, String> {
    headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                v.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn bearer(headers: &HeaderMap) -> String {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("bearer ")
                .or_else(|| v.strip_prefix("Bearer "))
        })
        .unwrap_or_default()
        .to_owned()
}

/// APNs: the provider token verifies with the test key (ES256, `kid`, `iss` = team), the
/// headers APNs requires are there, and the body has `aps.alert`. Every answer carries
/// `apns-id`: the request's, or a new one (as APNs does).
async fn apns(
    State(s): State<PushStandIn>,
    Path(token): Path<String>,
    version: Version,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let id = headers
        .get("apns-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_else(|| atelier_shared::adapters::push::apns_id(&ulid::Ulid::new().to_string()));
    s.hold().await;
    let mut res = apns_answer(&s, token, version, &headers, &body);
    if let Ok(v) = http::HeaderValue::from_str(&id) {
        res.headers_mut().insert("apns-id", v);
    }
    res
}

/// APNs's error body: `{"reason": …}` (and when a token became invalid, its `timestamp`).
fn apns_reason(status: StatusCode, reason: &str) -> Response {
    let body = if status == StatusCode::GONE {
        json!({"reason": reason, "timestamp": 0})
    } else {
        json!({"reason": reason})
    };
    (status, axum::Json(body)).into_response()
}

fn apns_answer(
    s: &PushStandIn,
    token: String,
    version: Version,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let jwt = bearer(headers);
    let key = DecodingKey::from_ec_pem(APNS_PUBLIC.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut v = Validation::new(Algorithm::ES256);
    v.required_spec_claims = HashSet::from(["iss".to_owned()]);
    v.validate_exp = false;
    v.set_issuer(&[TEAM]);
    let kid = jsonwebtoken::decode_header(&jwt).ok().and_then(|h| h.kid);
    if jsonwebtoken::decode::<Value>(&jwt, &key, &v).is_err() || kid.as_deref() != Some(KEY_ID) {
        return apns_reason(StatusCode::FORBIDDEN, "InvalidProviderToken");
    }
    let h = header_map(headers);
    let ok = h.get("apns-topic").map(String::as_str) == Some(TOPIC)
        && h.get("apns-push-type").map(String::as_str) == Some("alert");
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if !ok || !body["aps"]["alert"].is_object() {
        return apns_reason(StatusCode::BAD_REQUEST, "BadRequest");
    }
    match s.refuse(&token) {
        Some(StatusCode::GONE) => apns_reason(StatusCode::GONE, "Unregistered"),
        Some(StatusCode::BAD_REQUEST) => apns_reason(StatusCode::BAD_REQUEST, "BadDeviceToken"),
        Some(code) => apns_reason(code, "InternalServerError"),
        None => {
            let http2 = version == Version::HTTP_2;
            s.lock().pushes.push(Received {
                token,
                headers: h,
                body,
                http2,
            });
            StatusCode::OK.into_response()
        }
    }
}

/// The OAuth2 token endpoint of FCM's service account (the FCM scope or the broader
/// cloud-platform one, which firebase-admin asks for).
async fn token(State(s): State<PushStandIn>, body: Bytes) -> Response {
    let scope = atelier_shared::adapters::push::FCM_SCOPE;
    let (granted, res) = jwt_bearer_grant(&body, FCM_PUBLIC, CLIENT_EMAIL, scope, ACCESS_TOKEN);
    if granted {
        s.lock().token_calls += 1;
    }
    res
}

/// Google's OAuth2 token endpoint: a JWT-bearer grant whose assertion verifies with the
/// service account's public key (`public_pem`), issued by `email`, with Google's token
/// endpoint as audience (google-auth names it whatever its `token_uri`), asking for `scope`
/// (one of a space-separated list), answered with `access_token`. Whether it was granted.
pub(crate) fn jwt_bearer_grant(
    body: &[u8],
    public_pem: &str,
    email: &str,
    scope: &str,
    access_token: &str,
) -> (bool, Response) {
    let form: HashMap<String, String> = url_form(body);
    let key = DecodingKey::from_rsa_pem(public_pem.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut v = Validation::new(Algorithm::RS256);
    v.set_issuer(&[email]);
    v.set_audience(&[atelier_shared::adapters::service_account::TOKEN_AUDIENCE]);
    let claims = form
        .get("assertion")
        .and_then(|a| jsonwebtoken::decode::<Value>(a, &key, &v).ok());
    let grant = form.get("grant_type").map(String::as_str);
    // The scope claim is a space-separated list: `scope`, or the broader cloud-platform one
    // (firebase-admin asks for it among others).
    let scoped = claims.is_some_and(|c| {
        c.claims["scope"].as_str().is_some_and(|s| {
            s.split(' ')
                .any(|s| s == scope || s == CLOUD_PLATFORM_SCOPE)
        })
    });
    if grant != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") || !scoped {
        let refused = (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        );
        return (false, refused.into_response());
    }
    let body = json!({"access_token": access_token, "expires_in": 3599, "token_type": "Bearer"});
    (true, axum::Json(body).into_response())
}

fn url_form(body: &[u8]) -> HashMap<String, String> {
    reqwest::Url::parse(&format!("http://x/?{}", String::from_utf8_lossy(body)))
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

/// FCM's error body (`google.rpc.Status`, with an `FcmError` detail when FCM names one).
fn fcm_error(status: StatusCode, name: &str, fcm_code: Option<&str>) -> Response {
    let mut error = json!({"code": status.as_u16(), "message": name, "status": name});
    if let Some(code) = fcm_code {
        error["details"] = json!([{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}]);
    }
    (status, axum::Json(json!({ "error": error }))).into_response()
}

/// FCM HTTP v1 `messages:send`: the bearer it issued, a `message.token`, and `data` values
/// that are strings (FCM refuses any other).
async fn fcm(
    State(s): State<PushStandIn>,
    Path((project, method)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    s.hold().await;
    if method != "messages:send" {
        return fcm_error(StatusCode::NOT_FOUND, "NOT_FOUND", None);
    }
    if project != PROJECT {
        // The service account has no permission on another project.
        return fcm_error(StatusCode::FORBIDDEN, "PERMISSION_DENIED", None);
    }
    if bearer(&headers) != ACCESS_TOKEN {
        return fcm_error(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", None);
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let data_ok = match &body["message"]["data"] {
        Value::Null => true,
        Value::Object(d) => d.values().all(Value::is_string),
        _ => false,
    };
    let token = body["message"]["token"].as_str().map(str::to_owned);
    let (Some(token), true) = (token, data_ok) else {
        return fcm_error(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            Some("INVALID_ARGUMENT"),
        );
    };
    match s.refuse(&token) {
        Some(StatusCode::GONE) => {
            fcm_error(StatusCode::NOT_FOUND, "NOT_FOUND", Some("UNREGISTERED"))
        }
        Some(StatusCode::BAD_REQUEST) => fcm_error(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            Some("INVALID_ARGUMENT"),
        ),
        Some(code) => fcm_error(code, "INTERNAL", None),
        None => {
            let mut inner = s.lock();
            let name = format!("projects/{PROJECT}/messages/{}", inner.pushes.len());
            let headers = header_map(&headers);
            inner.pushes.push(Received {
                token,
                headers,
                body,
                http2: false,
            });
            axum::Json(json!({"name": name})).into_response()
        }
    }
}
