//! Test harness: the real API router on real AWS-protocol services (ministack, started by
//! `cargo xtask test`). One helper per endpoint; every test gets its own users and keys, so
//! tests run in parallel on shared tables.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use atelier_shared::adapters::aws::Clients;
use atelier_shared::config::Config;
use atelier_shared::domain::{Credits, GrantReason, Operator, UserId};
use atelier_shared::services::audit::{self, AuditReport};
use atelier_shared::services::{App, accounts};
use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::OnceCell;
use tower::ServiceExt;

pub mod app_store;
pub mod app_store_api;
pub mod google_play;
pub mod iam;
pub mod keychain;
pub mod push;
pub mod receiver;
pub mod stripe;

static PROVISIONED: OnceCell<()> = OnceCell::const_new();

/// A response, decoded.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Value,
}

/// A listener on a free port of 127.0.0.1, for a stand-in, and its base URL.
pub async fn local_listener() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    (listener, format!("http://{addr}"))
}

impl Reply {
    /// Asserts an error response's status and problem code; `case` names it in the message.
    pub fn assert_problem(&self, status: StatusCode, code: &str, case: impl std::fmt::Display) {
        assert_eq!(self.status, status, "{case}: {self:?}");
        assert_eq!(self.code(), code, "{case}: {self:?}");
    }

    /// The problem `code` of an error response.
    pub fn code(&self) -> &str {
        self.body.get("code").and_then(Value::as_str).unwrap_or("")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// A string field of the body; panics when it is absent, so two missing values never
    /// compare equal.
    pub fn str(&self, field: &str) -> String {
        self.body
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no string {field:?} in the reply: {self:?}"))
            .to_owned()
    }
}

/// The system under test, built the way the Lambda builds it.
#[derive(Clone)]
pub struct Harness {
    pub app: App,
    pub clients: Clients,
}

impl Harness {
    /// The configuration from the environment (set by `cargo xtask test`).
    pub fn config() -> Config {
        Config::from_env().unwrap_or_else(|e| panic!("{e}: run the tests with `cargo xtask test`"))
    }

    /// A harness with the standard configuration.
    pub async fn new() -> Harness {
        Harness::with_config(Harness::config()).await
    }

    /// A harness with a changed configuration (limits, a broken queue URL, ...).
    pub async fn with_config(config: Config) -> Harness {
        // Logs go to the test's captured output (shown for failing tests only).
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_target(false)
            .try_init();
        // Clients are per test: a pooled connection must not outlive the test's runtime.
        let clients = Clients::from_env().await;
        PROVISIONED
            .get_or_init(|| async {
                atelier_shared::store::provision::ensure(&clients, &Harness::config().resources)
                    .await
                    .unwrap_or_else(|e| panic!("provisioning: {e:?}"));
            })
            .await;
        Harness {
            app: App::new(config, &clients),
            clients,
        }
    }

    /// A fresh user id for this test.
    pub fn user(&self) -> UserId {
        let id = format!("t-{}", ulid::Ulid::new().to_string().to_lowercase());
        UserId::parse(&id).unwrap_or_else(|| panic!("user id {id}"))
    }

    /// Sends a request through the router as API Gateway would deliver it for `user`
    /// (`None`: no authorizer context).
    /// The user's e-mail counts as verified (`email_verified` is `"true"`), as for every user
    /// who signed up through the identity provider.
    pub async fn call(&self, user: Option<&UserId>, req: Request<Body>) -> Reply {
        self.call_with_claims(user.map(|u| Harness::claims(u, Some("true"))), req)
            .await
    }

    /// The claims API Gateway's authorizer puts in the context for `user`'s ID token (its
    /// own address, `<user>@example.test`), with `email_verified` as the context carries it
    /// (`None`: the token has no such claim, nor an address).
    pub fn claims(user: &UserId, email_verified: Option<&str>) -> HashMap<String, String> {
        match email_verified {
            Some(v) => Harness::id_claims(user, &format!("{user}@example.test"), v),
            None => HashMap::from([("sub".to_owned(), user.to_string())]),
        }
    }

    /// The claims of an ID token for `user` with this address and `email_verified` value.
    pub fn id_claims(user: &UserId, email: &str, email_verified: &str) -> HashMap<String, String> {
        HashMap::from([
            ("sub".to_owned(), user.to_string()),
            ("token_use".to_owned(), "id".to_owned()),
            ("email".to_owned(), email.to_owned()),
            ("email_verified".to_owned(), email_verified.to_owned()),
        ])
    }

    /// Sends a request with exactly these authorizer claims (`None`: no authorizer context).
    pub async fn call_with_claims(
        &self,
        claims: Option<HashMap<String, String>>,
        req: Request<Body>,
    ) -> Reply {
        let mut req = req;
        if let Some(claims) = claims {
            req.extensions_mut()
                .insert(atelier_api::auth::jwt_request_context(claims));
        }
        let res = atelier_api::router(self.app.clone())
            .oneshot(req)
            .await
            .unwrap_or_else(|e| match e {});
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = res
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_else(|e| panic!("reading the response body: {e}"));
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    pub fn json_request(method: &str, uri: &str) -> http::request::Builder {
        Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
    }

    pub async fn get(&self, user: &UserId, uri: &str) -> Reply {
        self.call(
            Some(user),
            Request::get(uri)
                .body(Body::empty())
                .unwrap_or_else(|e| panic!("request: {e}")),
        )
        .await
    }

    /// `POST /v1/edits` with a key and a JSON body.
    pub async fn submit(&self, user: &UserId, key: Option<&str>, body: &Value) -> Reply {
        self.submit_raw(user, key, body.to_string()).await
    }

    /// `POST /v1/edits` with raw body bytes.
    pub async fn submit_raw(&self, user: &UserId, key: Option<&str>, body: String) -> Reply {
        let mut b = Harness::json_request("POST", "/v1/edits");
        if let Some(k) = key {
            b = b.header("idempotency-key", k);
        }
        self.call(
            Some(user),
            b.body(Body::from(body))
                .unwrap_or_else(|e| panic!("request: {e}")),
        )
        .await
    }

    /// `POST /v1/quotes`.
    pub async fn quote(&self, user: &UserId, body: &Value) -> Reply {
        let req = Harness::json_request("POST", "/v1/quotes")
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// `POST /v1/uploads`.
    pub async fn create_upload(
        &self,
        user: &UserId,
        kind: &str,
        content_type: &str,
        bytes: i64,
    ) -> Reply {
        let body = json!({ "kind": kind, "content_type": content_type, "bytes": bytes });
        let req = Harness::json_request("POST", "/v1/uploads")
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// PUTs bytes to a presigned upload with the headers it names; returns the HTTP status.
    pub async fn put_upload(
        &self,
        upload: &Reply,
        bytes: Vec<u8>,
        content_type: Option<&str>,
    ) -> u16 {
        let url = upload.str("upload_url");
        let mut req = reqwest::Client::new().put(url).body(bytes);
        if let Some(headers) = upload.body.get("headers").and_then(Value::as_object) {
            for (k, v) in headers {
                if k == "content-length" {
                    continue; // reqwest sets the real length of the body
                }
                let v = if k == "content-type" {
                    content_type.unwrap_or(v.as_str().unwrap_or(""))
                } else {
                    v.as_str().unwrap_or("")
                };
                req = req.header(k.as_str(), v);
            }
        }
        req.send().await.map(|r| r.status().as_u16()).unwrap_or(0)
    }

    /// Uploads an image of `kind` and returns its asset id.
    pub async fn upload(&self, user: &UserId, kind: &str, png: Vec<u8>) -> String {
        let slot = self
            .create_upload(user, kind, "image/png", png.len() as i64)
            .await;
        assert_eq!(slot.status, StatusCode::CREATED, "{slot:?}");
        assert_eq!(self.put_upload(&slot, png, None).await, 200, "upload PUT");
        slot.str("asset_id")
    }

    /// `GET /v1/account`.
    pub async fn account(&self, user: &UserId) -> Reply {
        self.get(user, "/v1/account").await
    }

    /// `GET /v1/account` with the token's `email_verified` claim as given (`None`: absent).
    pub async fn account_as(&self, user: &UserId, email_verified: Option<&str>) -> Reply {
        let req = Request::get("/v1/account")
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call_with_claims(Some(Harness::claims(user, email_verified)), req)
            .await
    }

    /// The token `user`'s apps buy with (`GET /v1/account`'s `app_account_token`).
    pub async fn app_account_token(&self, user: &UserId) -> String {
        self.account(user).await.str("app_account_token")
    }

    /// The balance, creating the account if needed.
    pub async fn balance(&self, user: &UserId) -> i64 {
        let a = self.account(user).await;
        assert_eq!(a.status, StatusCode::OK, "{a:?}");
        a.body["balance"]
            .as_i64()
            .unwrap_or_else(|| panic!("the account has no balance: {a:?}"))
    }

    /// Every ledger row of the user, from the base table (consistent).
    pub async fn ledger(&self, user: &UserId) -> Vec<atelier_shared::store::schema::LedgerItem> {
        self.app
            .store
            .ledger_rows(user)
            .await
            .unwrap_or_else(|e| panic!("ledger: {e:?}"))
    }

    /// A fresh user whose balance is exactly `credits` (the setup most tests start with).
    pub async fn funded_user(&self, credits: i64) -> UserId {
        let user = self.user();
        self.fund_to(&user, credits).await;
        user
    }

    /// Grants credits so the balance is exactly `target` (the account gets its signup grant first).
    pub async fn fund_to(&self, user: &UserId, target: i64) {
        let now = self.balance(user).await;
        assert!(target >= now, "fund_to only adds credits");
        if target > now {
            let req = accounts::GrantRequest {
                credits: Credits::new(target - now),
                reason: GrantReason::parse("test-funding").unwrap_or_else(|e| panic!("{e}")),
                operator: Operator::parse("test-harness").unwrap_or_else(|e| panic!("{e}")),
                create_account: false,
            };
            let granted = accounts::grant(&self.app, user, &req).await;
            assert!(
                matches!(granted, Ok(accounts::GrantResult::Granted)),
                "{granted:?}"
            );
        }
        assert_eq!(self.balance(user).await, target);
    }

    /// Spends some of `user`'s credits on `edits` accepted edits.
    pub async fn spend(&self, user: &UserId, edits: usize) {
        for i in 0..edits {
            let original = self.upload(user, "original", Harness::png(8, 8)).await;
            let body =
                json!({ "style": "origami", "target": "pet", "original_asset_id": original });
            let res = self.submit(user, Some(&format!("spend-{i}")), &body).await;
            assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
        }
    }

    /// Runs `atelier-admin audit`'s check and asserts it is clean.
    pub async fn assert_audit_clean(&self) -> AuditReport {
        let report = audit::audit(&self.app)
            .await
            .unwrap_or_else(|e| panic!("audit: {e:?}"));
        assert!(
            report.is_clean(),
            "audit found offenders: {:#?}",
            report.offenders
        );
        report
    }

    /// The user's spend of today (rule 12), read consistently; `None` before their first
    /// reservation of the day.
    pub async fn user_day(
        &self,
        user: &UserId,
    ) -> Option<atelier_shared::store::schema::UserDayItem> {
        let today = atelier_shared::services::budget::day_of(atelier_shared::clock::now());
        self.app
            .store
            .get_user_day(&today, user)
            .await
            .unwrap_or_else(|e| panic!("user day: {e:?}"))
    }

    /// `atelier-admin budget share USER MICROS` (or `--clear` with `None`) as its service call.
    pub async fn set_user_share(
        &self,
        user: &UserId,
        micros: Option<i64>,
    ) -> atelier_shared::services::user_share::ShareSetting {
        use atelier_shared::store::user_share::ShareChange;
        let change = match micros {
            Some(m) => ShareChange::Set {
                share: atelier_shared::domain::Micros::new(m),
                operator: "test-harness".into(),
            },
            None => ShareChange::Clear {
                default: self.app.config.limits.user_daily_share_micros,
            },
        };
        atelier_shared::services::user_share::change(&self.app, user, &change)
            .await
            .unwrap_or_else(|e| panic!("share change: {e:?}"))
    }

    /// A small valid PNG.
    pub fn png(width: u32, height: u32) -> Vec<u8> {
        tiny_png(width, height)
    }
}

/// A solid-colour PNG of the given size.
pub fn tiny_png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbaImage::from_pixel(width, height, image::Rgba([180, 120, 60, 255]));
    atelier_shared::domain::imaging::encode_png(&image).unwrap_or_else(|e| panic!("{e}"))
}

/// Captured log lines, for tests that assert an event was logged.
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut g) = self.0.lock() {
            g.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;
    fn make_writer(&'a self) -> LogCapture {
        self.clone()
    }
}

/// Captures JSON log lines for the current thread until the guard drops (use with a
/// current-thread runtime).
pub fn capture_logs() -> (LogCapture, tracing::subscriber::DefaultGuard) {
    let capture = LogCapture::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(capture.clone())
        .finish();
    (capture, tracing::subscriber::set_default(subscriber))
}

/// The stand-in model server, started in-process on a free port for one test.
pub struct StandIn {
    pub base_url: String,
    http: reqwest::Client,
    _server: atelier_model_server::ServerHandle,
}

/// Calls of each kind that one job made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobCalls {
    pub check: u64,
    pub edit: u64,
    pub review: u64,
    pub compare: u64,
}

impl StandIn {
    pub async fn start() -> StandIn {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let (_, server) = atelier_model_server::spawn(addr)
            .await
            .unwrap_or_else(|e| panic!("stand-in: {e}"));
        StandIn {
            base_url: server.base_url(),
            http: reqwest::Client::new(),
            _server: server,
        }
    }

    /// The calls a job made, from the server's counters. A counters request that fails or
    /// answers anything but its own shape panics: "no model call" must never be read from a
    /// failed request (a job absent from the counters made no call).
    pub async fn calls(&self, job: &str) -> JobCalls {
        let c = self.counts().await.job(job);
        JobCalls {
            check: c.check,
            edit: c.edit,
            review: c.review,
            compare: c.compare,
        }
    }

    /// Every call the server counted (`GET /_stand-in/calls`, its status checked and its body
    /// parsed strictly); panics otherwise.
    pub async fn counts(&self) -> atelier_model_server::CallCounts {
        atelier_model_server::Control::new(self.base_url.clone())
            .calls()
            .await
            .unwrap_or_else(|e| panic!("stand-in counters at {}: {e}", self.base_url))
    }

    /// Removes every scripted fault (the stand-in answers normally again).
    pub async fn clear_faults(&self) {
        let res = self
            .http
            .delete(format!("{}/_stand-in/faults", self.base_url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            res.status().is_success(),
            "faults not cleared: {}",
            res.status()
        );
    }

    /// A client of this stand-in over Gemini's wire, with the catalogue's Gemini models.
    pub fn gemini_client(&self) -> atelier_shared::adapters::model::ModelClient {
        use atelier_shared::adapters::model::catalogue::{self, find};
        let mut config = atelier_shared::adapters::model::ModelConfig::new(self.base_url.clone());
        config.image_model =
            find(catalogue::DEFAULT_GEMINI_IMAGE_MODEL).unwrap_or_else(|| panic!("row"));
        config.vision_model =
            find(catalogue::DEFAULT_GEMINI_VISION_MODEL).unwrap_or_else(|| panic!("row"));
        atelier_shared::adapters::model::ModelClient::new(config).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A client of this stand-in over OpenAI's wire whose calls time out after `timeout`.
    pub fn openai_client(
        &self,
        timeout: std::time::Duration,
    ) -> atelier_shared::adapters::model::ModelClient {
        let mut config = atelier_shared::adapters::model::ModelConfig::new(self.base_url.clone());
        config.vision_timeout = timeout;
        config.edit_timeout = timeout;
        atelier_shared::adapters::model::ModelClient::new(config).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Scripts a fault (`{"call": …, "fault": …, "job": …}`).
    pub async fn fault(&self, rule: Value) {
        let res = self
            .http
            .post(format!("{}/_stand-in/faults", self.base_url))
            .json(&Value::Array(vec![rule]))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(res.status().is_success(), "fault refused: {}", res.status());
    }
}

impl Harness {
    /// A processor (the consumer's core) talking to `model`.
    pub fn processor(&self, model: &StandIn) -> atelier_shared::services::process::Processor {
        self.processor_with_timeout(model, std::time::Duration::from_secs(60))
    }

    /// A processor whose model calls time out after `timeout`.
    pub fn processor_with_timeout(
        &self,
        model: &StandIn,
        timeout: std::time::Duration,
    ) -> atelier_shared::services::process::Processor {
        atelier_shared::services::process::Processor::new(
            self.app.clone(),
            model.openai_client(timeout),
        )
    }

    /// A processor with two providers for every call: `first` over OpenAI's wire (its calls
    /// timing out after `timeout`), then `second` over Gemini's (docs/design.md rule 15).
    pub fn processor_with_failover(
        &self,
        first: &StandIn,
        second: &StandIn,
        timeout: std::time::Duration,
    ) -> atelier_shared::services::process::Processor {
        use atelier_shared::services::process::{Processor, Providers};
        let order = vec![first.openai_client(timeout), second.gemini_client()];
        let providers = Providers::new(order.clone(), order).unwrap_or_else(|| panic!("providers"));
        Processor::with_providers(self.app.clone(), providers)
    }

    /// A harness on a stack of its own (tables, queue, bucket made from the same definition
    /// under a fresh prefix): for tests that halt the budget or read the whole queue.
    pub async fn isolated(limits: impl FnOnce(&mut atelier_shared::config::Limits)) -> Harness {
        Harness::isolated_with(|c| limits(&mut c.limits)).await
    }

    /// [`Harness::isolated`] with any change to the configuration (App Store settings, packs).
    pub async fn isolated_with(change: impl FnOnce(&mut Config)) -> Harness {
        let base = Harness::config();
        let endpoint = base
            .resources
            .queue_url
            .split("/000000000000/")
            .next()
            .unwrap_or_default()
            .to_owned();
        let prefix = format!("iso-{}", ulid::Ulid::new().to_string().to_lowercase());
        let mut config = base.clone();
        config.resources = atelier_shared::config::Resources::local(&prefix, &endpoint);
        change(&mut config);
        let h = Harness::with_config(config.clone()).await;
        atelier_shared::store::provision::ensure(&h.clients, &config.resources)
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        h
    }

    /// Uploads a sample photo and submits an edit of it; returns the job id.
    pub async fn submit_photo(
        &self,
        user: &UserId,
        key: &str,
        photo: Vec<u8>,
        mut body: Value,
    ) -> String {
        let original = self.upload(user, "original", photo).await;
        body["original_asset_id"] = json!(original);
        let res = self.submit(user, Some(key), &body).await;
        assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
        res.str("id")
    }

    /// The job as its owner sees it.
    pub async fn job(&self, user: &UserId, id: &str) -> Reply {
        self.get(user, &format!("/v1/edits/{id}")).await
    }

    /// `GET /v1/edits/{id}{query}` with request headers (`Prefer`, `If-None-Match`): the
    /// long-poll and the conditional read.
    pub async fn job_with(
        &self,
        user: &UserId,
        id: &str,
        query: &str,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut req = Request::get(format!("/v1/edits/{id}{query}"));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// The job with its result's `url` serving `format` (`GET /v1/edits/{id}?format=`).
    pub async fn job_in(&self, user: &UserId, id: &str, format: &str) -> Reply {
        self.get(user, &format!("/v1/edits/{id}?format={format}"))
            .await
    }
}

/// The bytes behind a presigned download URL (a result), asserting `200`.
pub async fn download(url: &str) -> Vec<u8> {
    let res = reqwest::get(url)
        .await
        .unwrap_or_else(|e| panic!("download: {e}"));
    assert_eq!(res.status(), 200, "download of {url}");
    res.bytes()
        .await
        .unwrap_or_else(|e| panic!("download body: {e}"))
        .to_vec()
}

impl Harness {
    /// `POST /v1/edits/{id}/repairs` with a key and a JSON body.
    pub async fn repair(&self, user: &UserId, id: &str, key: &str, body: &Value) -> Reply {
        let req = Harness::json_request("POST", &format!("/v1/edits/{id}/repairs"))
            .header("idempotency-key", key)
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// `POST /v1/edits/{id}/cancel`.
    pub async fn cancel(&self, user: &UserId, id: &str) -> Reply {
        let req = Request::post(format!("/v1/edits/{id}/cancel"))
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// `POST /v1/edits/{id}/adopt`: choose a repair's rejected candidate.
    pub async fn adopt(&self, user: &UserId, id: &str) -> Reply {
        let req = Request::post(format!("/v1/edits/{id}/adopt"))
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }
}

impl Harness {
    /// A DELETE of `uri` as `user`.
    pub async fn delete(&self, user: &UserId, uri: &str) -> Reply {
        let req = Request::delete(uri)
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// `DELETE /v1/assets/{id}`.
    pub async fn delete_asset(&self, user: &UserId, id: &str) -> Reply {
        self.delete(user, &format!("/v1/assets/{id}")).await
    }

    /// `DELETE /v1/edits/{id}/images`.
    pub async fn delete_edit_images(&self, user: &UserId, id: &str) -> Reply {
        self.delete(user, &format!("/v1/edits/{id}/images")).await
    }

    /// `PUT /v1/devices/{id}` with a JSON body.
    pub async fn put_device(&self, user: &UserId, id: &str, body: &Value) -> Reply {
        let req = Harness::json_request("PUT", &format!("/v1/devices/{id}"))
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// The ids of `user`'s registered devices, as `GET /v1/devices` lists them, sorted.
    pub async fn device_ids(&self, user: &UserId) -> Vec<String> {
        let res = self.get(user, "/v1/devices").await;
        assert_eq!(res.status, http::StatusCode::OK, "{res:?}");
        let mut ids: Vec<String> = res.body["items"]
            .as_array()
            .unwrap_or_else(|| panic!("no items: {res:?}"))
            .iter()
            .filter_map(|d| d["id"].as_str().map(str::to_owned))
            .collect();
        ids.sort();
        ids
    }

    /// `DELETE /v1/account`.
    pub async fn delete_account(&self, user: &UserId) -> Reply {
        self.delete(user, "/v1/account").await
    }

    /// `GET /v1/account/export` with a query string (`""`, `"limit=2&cursor=..."`).
    pub async fn export(&self, user: &UserId, query: &str) -> Reply {
        self.get(user, &format!("/v1/account/export?{query}")).await
    }

    /// The bytes of an edit's kept input of `kind` (read through the S3 API), `None` while
    /// there is none.
    pub async fn kept_input(
        &self,
        user: &UserId,
        job: &atelier_shared::domain::JobId,
        kind: atelier_shared::domain::AssetKind,
    ) -> Option<Vec<u8>> {
        let key = atelier_shared::adapters::assets::Assets::kept_input_key(user, job, kind);
        self.app
            .assets
            .get_limited(&key, kind.max_bytes())
            .await
            .unwrap_or_else(|e| panic!("reading {key}: {e:?}"))
    }

    /// Every object key under the user's prefixes, listed through the S3 API.
    pub async fn objects_of(&self, user: &UserId) -> Vec<String> {
        let mut keys = Vec::new();
        for prefix in atelier_shared::adapters::assets::Assets::user_prefixes(user) {
            let out = self
                .clients
                .s3
                .list_objects_v2()
                .bucket(self.app.assets.bucket())
                .prefix(&prefix)
                .send()
                .await
                .unwrap_or_else(|e| panic!("listing {prefix}: {e:?}"));
            keys.extend(
                out.contents
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|o| o.key),
            );
        }
        keys
    }
}

/// Writes jobs straight into the jobs table (BatchWriteItem, 25 at a time, 8 requests in
/// flight): bulk data for scale tests, through the real DynamoDB protocol.
pub async fn put_jobs(h: &Harness, jobs: &[atelier_shared::store::schema::JobItem]) {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    let table = h.app.config.resources.jobs_table.clone();
    let batches: Vec<Vec<WriteRequest>> = jobs
        .chunks(25)
        .map(|chunk| {
            chunk
                .iter()
                .map(|j| {
                    let item = serde_dynamo::to_item(j).unwrap_or_else(|e| panic!("{e}"));
                    let put = PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .unwrap_or_else(|e| panic!("{e}"));
                    WriteRequest::builder().put_request(put).build()
                })
                .collect()
        })
        .collect();
    for group in batches.chunks(8) {
        let sends = group.iter().map(|batch| {
            let (ddb, table) = (h.clients.dynamodb.clone(), table.clone());
            let mut pending = batch.clone();
            async move {
                while !pending.is_empty() {
                    let out = ddb
                        .batch_write_item()
                        .request_items(&table, pending.clone())
                        .send()
                        .await
                        .unwrap_or_else(|e| panic!("{e:?}"));
                    pending = out
                        .unprocessed_items
                        .and_then(|mut m| m.remove(&table))
                        .unwrap_or_default();
                }
            }
        });
        futures::future::join_all(sends).await;
    }
}

/// Builds a binary of the workspace with the same profile as the running tests (so the tests
/// drive the real program) and returns its path, as cargo reports it.
pub fn build_binary(package: &str, bin: &str) -> std::path::PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_owned());
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--package", package, "--bin", bin])
        .args([
            "--message-format",
            "json-render-diagnostics",
            "--manifest-path",
        ])
        .arg(&manifest)
        .stderr(std::process::Stdio::inherit());
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running cargo: {e}"));
    assert!(out.status.success(), "cargo build -p {package} failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == bin)
        .find_map(|m| m["executable"].as_str().map(std::path::PathBuf::from))
        .unwrap_or_else(|| panic!("cargo reported no `{bin}` executable"))
}

/// The EMF metric documents this process recorded since the last call (the recorder is
/// installed on first use, as the functions install it in Lambda, under `function`). The
/// recorder is process-wide: a test file that reads it runs one test that records metrics.
pub fn flushed_metrics(function: &str) -> Vec<Value> {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(|| {
        atelier_shared::adapters::metrics::install(function).unwrap_or_else(|e| panic!("{e}"));
    });
    let mut out = Vec::new();
    atelier_shared::adapters::metrics::flush_to(&mut out).unwrap_or_else(|e| panic!("{e}"));
    String::from_utf8_lossy(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// An SQS event for `job` exactly as the event source mapping delivers it to the consumer.
pub fn sqs_event(job: &str) -> aws_lambda_events::sqs::SqsEvent {
    let mut m = aws_lambda_events::sqs::SqsMessage::default();
    m.message_id = Some(format!("msg-{job}"));
    m.body = Some(json!({ "jobId": job }).to_string());
    let mut e = aws_lambda_events::sqs::SqsEvent::default();
    e.records = vec![m];
    e
}

/// What one run of `atelier-admin` printed and how it exited.
pub struct AdminRun {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl std::fmt::Debug for AdminRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?}\nstdout: {}\nstderr: {}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl AdminRun {
    /// Stdout as JSON (the look-up commands print one document).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// Runs the real `atelier-admin ARGS` (built for this profile once per test binary) with
/// `env` added and no operator inherited from the shell, against the tables this process's
/// environment names.
pub async fn admin(args: &[&str], env: &[(&str, &str)]) -> AdminRun {
    static BINARY: OnceCell<std::path::PathBuf> = OnceCell::const_new();
    let binary = BINARY
        .get_or_init(|| async {
            tokio::task::spawn_blocking(|| build_binary("atelier-admin", "atelier-admin"))
                .await
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .await;
    let out = tokio::process::Command::new(binary)
        .args(args)
        .env_remove("ATELIER_OPERATOR")
        .envs(env.iter().copied())
        .output()
        .await
        .unwrap_or_else(|e| panic!("running atelier-admin: {e}"));
    AdminRun {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The SHA-256 of `bytes`, in hex: how tests compare images byte for byte.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The local API over HTTP on an ephemeral port, as `atelier-local serve` fronts it: the dev
/// issuer (its JWKS and OpenID Connect flow) beside the router, the authorizer in front.
pub struct LocalApi {
    pub base: String,
    pub issuer: atelier_local::issuer::DevIssuer,
    pub http: reqwest::Client,
}

impl LocalApi {
    pub async fn start(app: App) -> LocalApi {
        use atelier_local::serve::ISSUER_PATH;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let base = format!("http://{addr}");
        let issuer_url = format!("{base}{ISSUER_PATH}");
        let issuer = atelier_local::issuer::DevIssuer::ephemeral(&issuer_url)
            .unwrap_or_else(|e| panic!("{e}"));
        let router = atelier_local::serve::app(
            app,
            atelier_local::authorizer::Authorizer::new(&issuer_url, atelier_local::AUDIENCE),
            Some(issuer.clone()),
        );
        tokio::spawn(async move { axum::serve(listener, router).await });
        LocalApi {
            base,
            issuer,
            http: reqwest::Client::new(),
        }
    }

    /// `GET /v1/account` with this bearer token (`None`: none); the status and the body.
    pub async fn account(&self, token: Option<&str>) -> (u16, Value) {
        let mut req = self.http.get(format!("{}/v1/account", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let res = req.send().await.unwrap_or_else(|e| panic!("{e}"));
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }
}

/// The webhook delivery queue, read by tests that drive delivery by hand.
impl Harness {
    /// Takes (receives and deletes) every message visible on the delivery queue now.
    pub async fn take_hook_messages(
        &self,
    ) -> Vec<atelier_shared::domain::webhooks::DeliveryMessage> {
        let mut out = Vec::new();
        loop {
            let got = self
                .clients
                .sqs
                .receive_message()
                .queue_url(self.app.hooks_queue.url())
                .max_number_of_messages(10)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let messages = got.messages.unwrap_or_default();
            if messages.is_empty() {
                return out;
            }
            for m in messages {
                if let Some(handle) = m.receipt_handle {
                    self.delete_hook_message(handle).await;
                }
                let body = m.body.unwrap_or_default();
                out.push(serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}")));
            }
        }
    }

    /// Deletes one delivery message (a deliverer finished with it); a failure is ignored, as
    /// the queue would redeliver it.
    pub async fn delete_hook_message(&self, handle: String) {
        let _ = self
            .clients
            .sqs
            .delete_message()
            .queue_url(self.app.hooks_queue.url())
            .receipt_handle(handle)
            .send()
            .await;
    }
}
