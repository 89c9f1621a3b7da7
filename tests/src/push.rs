//! Stand-in push services on 127.0.0.1, one server: APNs (`POST /3/device/{token}`, served
//! over h2c: our client speaks HTTP/2 with prior knowledge to an `http://` APNs URL), FCM
//! HTTP v1 (`POST /v1/projects/{project}/messages:send`) and the OAuth2 token endpoint
//! (`POST /token`). Each checks what the real service requires (the provider JWT's signature
//! with the test key, `apns-topic`, `apns-push-type`, the bearer it issued), counts
//! deliveries per device token, and can be told that a token is invalid or that the next
//! pushes fail.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use atelier_shared::adapters::push::{ApnsSettings, FcmSettings, Pusher};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Version};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};

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
    invalid: HashSet<String>,
    fail_next: u32,
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
        let apns = ApnsSettings {
            base_url: self.url.clone(),
            key_id: KEY_ID.to_owned(),
            team_id: TEAM.to_owned(),
            topic: TOPIC.to_owned(),
            key_pem: APNS_KEY.to_owned(),
        };
        let fcm = FcmSettings {
            base_url: self.url.clone(),
            token_url: format!("{}/token", self.url),
            project_id: PROJECT.to_owned(),
            client_email: CLIENT_EMAIL.to_owned(),
            private_key_pem: FCM_KEY.to_owned(),
        };
        Pusher::new(Some(apns), Some(fcm), std::time::Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// From now on, `token` is reported dead (APNs 410 `Unregistered`, FCM 404 `UNREGISTERED`).
    pub fn invalidate(&self, token: &str) {
        self.lock().invalid.insert(token.to_owned());
    }

    /// The next `n` pushes are answered 500 (and not counted as delivered).
    pub fn fail_next(&self, n: u32) {
        self.lock().fail_next = n;
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

    /// `Some(answer)` when the push is refused before it counts.
    fn refuse(&self, token: &str) -> Option<StatusCode> {
        let mut inner = self.lock();
        if inner.invalid.contains(token) {
            return Some(StatusCode::GONE);
        }
        if inner.fail_next > 0 {
            inner.fail_next -= 1;
            return Some(StatusCode::INTERNAL_SERVER_ERROR);
        }
        None
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
/// headers APNs requires are there, and the body has `aps.alert`.
async fn apns(
    State(s): State<PushStandIn>,
    Path(token): Path<String>,
    version: Version,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let jwt = bearer(&headers);
    let key = DecodingKey::from_ec_pem(APNS_PUBLIC.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut v = Validation::new(Algorithm::ES256);
    v.required_spec_claims = HashSet::from(["iss".to_owned()]);
    v.validate_exp = false;
    v.set_issuer(&[TEAM]);
    let kid = jsonwebtoken::decode_header(&jwt).ok().and_then(|h| h.kid);
    if jsonwebtoken::decode::<Value>(&jwt, &key, &v).is_err() || kid.as_deref() != Some(KEY_ID) {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(json!({"reason": "InvalidProviderToken"})),
        )
            .into_response();
    }
    let h = header_map(&headers);
    let ok = h.get("apns-topic").map(String::as_str) == Some(TOPIC)
        && h.get("apns-push-type").map(String::as_str) == Some("alert");
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if !ok || !body["aps"]["alert"].is_object() {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"reason": "BadRequest"})),
        )
            .into_response();
    }
    match s.refuse(&token) {
        Some(StatusCode::GONE) => (
            StatusCode::GONE,
            axum::Json(json!({"reason": "Unregistered", "timestamp": 0})),
        )
            .into_response(),
        Some(code) => (code, axum::Json(json!({"reason": "InternalServerError"}))).into_response(),
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

/// The OAuth2 token endpoint of FCM's service account.
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
    let scoped = claims.is_some_and(|c| {
        c.claims["scope"]
            .as_str()
            .is_some_and(|s| s.split(' ').any(|s| s == scope))
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

/// FCM HTTP v1 `messages:send`.
async fn fcm(
    State(s): State<PushStandIn>,
    Path((project, method)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if project != PROJECT || method != "messages:send" {
        return StatusCode::NOT_FOUND.into_response();
    }
    if bearer(&headers) != ACCESS_TOKEN {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": {"code": 401, "status": "UNAUTHENTICATED"}})),
        )
            .into_response();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(token) = body["message"]["token"].as_str().map(str::to_owned) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": {"code": 400, "status": "INVALID_ARGUMENT"}})),
        )
            .into_response();
    };
    match s.refuse(&token) {
        Some(StatusCode::GONE) => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND",
                "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}})),
        )
            .into_response(),
        Some(code) => (code, axum::Json(json!({"error": {"code": 500, "status": "INTERNAL"}}))).into_response(),
        None => {
            let name = format!("projects/{PROJECT}/messages/{}", s.lock().pushes.len());
            s.lock().pushes.push(Received { token, headers: header_map(&headers), body, http2: false });
            axum::Json(json!({"name": name})).into_response()
        }
    }
}
