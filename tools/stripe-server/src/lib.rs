//! The stand-in Stripe: the subset of Stripe's API Atelier uses, over real HTTP, so the real
//! [`atelier_shared::adapters::payments::stripe::StripeClient`] (and Stripe's official library) talk
//! to it as to Stripe. It is the payment provider of `cargo xtask dev` and of the tests.
//!
//! - `POST /v1/checkout/sessions` (form-encoded, `Authorization: Bearer sk_test_…`,
//!   `Idempotency-Key` honoured as Stripe does: the same key and parameters answer the same
//!   session with `Idempotent-Replayed: true`, other parameters a 400 `idempotency_error`)
//!   and `GET /v1/checkout/sessions/{id}`.
//!   `GET /v1/checkout/sessions` lists them (newest first, one page).
//! - `POST /v1/refunds` (a whole PaymentIntent, `Idempotency-Key` honoured as for sessions; a
//!   second refund of a refunded charge is Stripe's `charge_already_refunded`) and
//!   `GET /v1/refunds?payment_intent=…` ([`refunds`]); each refund makes `charge.refunded`.
//! - `GET /checkout/{id}`: the page a session's `url` opens, with a Pay button;
//!   `POST /checkout/{id}/pay` pays it (a PaymentIntent `pi_…` and a Charge `ch_…`).
//! - `POST /_stand-in/payments/{pi}/refund`, `POST /_stand-in/payments/{pi}/dispute`,
//!   `POST /_stand-in/disputes/{dp}/close?status=won|lost`: refunds and disputes on demand.
//! - Every payment, refund and dispute makes a Stripe event, signed with the webhook secret
//!   exactly as Stripe signs (`Stripe-Signature: t=…,v1=…`) and, with a forward URL,
//!   delivered there once, as `stripe listen --forward-to` does. Each control call answers
//!   `{"event": …, "payload": "<the exact body>", "delivered": <status or null>}`, so a test
//!   can deliver the same event again itself. `GET /_stand-in/events` lists them all.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

mod refunds;

/// The API version the stand-in answers in (the one the client pins).
pub const API_VERSION: &str = atelier_shared::adapters::payments::stripe::STRIPE_VERSION;

/// Server options.
#[derive(Debug, Clone)]
pub struct Options {
    /// The signing secret of the forwarded events (`whsec_…`).
    pub webhook_secret: String,
    /// Where events are delivered (the API's `/v1/webhooks/stripe`); `None`: not delivered.
    pub forward_to: Option<String>,
}

/// One stored Checkout Session and what paying it made.
#[derive(Debug, Clone)]
struct Session {
    json: Value,
    charge: Option<String>,
}

#[derive(Default)]
struct Books {
    sessions: HashMap<String, Session>,
    /// Idempotency-Key → (the request's parameters, the session it made).
    idempotency: HashMap<String, (Vec<(String, String)>, String)>,
    /// PaymentIntent → its session.
    payments: HashMap<String, String>,
    /// Dispute → PaymentIntent.
    disputes: HashMap<String, String>,
    /// Refunds made through `POST /v1/refunds`, oldest first.
    refunds: Vec<Value>,
    /// Idempotency-Key → (the refund request's parameters, the refund's index in `refunds`).
    refund_keys: HashMap<String, (Vec<(String, String)>, usize)>,
    events: Vec<Value>,
}

#[derive(Clone)]
struct Shared {
    options: Arc<Options>,
    base_url: Arc<String>,
    books: Arc<Mutex<Books>>,
    http: reqwest::Client,
}

impl Shared {
    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running server. Dropping it stops the server.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl ServerHandle {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits until the server stops by itself; used by the binary.
    pub async fn wait(mut self) -> std::io::Result<()> {
        match (&mut self.task).await {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a server on `addr` (port 0: any free port).
pub async fn spawn(addr: SocketAddr, options: Options) -> std::io::Result<ServerHandle> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let shared = Shared {
        options: Arc::new(options),
        base_url: Arc::new(format!("http://{addr}")),
        books: Arc::default(),
        http: reqwest::Client::new(),
    };
    let app = router(shared);
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(ServerHandle { addr, task })
}

fn router(shared: Shared) -> Router {
    Router::new()
        .route(
            "/v1/checkout/sessions",
            post(create_session).get(list_sessions),
        )
        .route(
            "/v1/refunds",
            post(refunds::create_refund).get(refunds::list_refunds),
        )
        .route("/v1/checkout/sessions/{id}", get(get_session))
        .route("/checkout/{id}", get(checkout_page))
        .route("/checkout/{id}/pay", post(pay))
        .route("/_stand-in/payments/{pi}/refund", post(refund))
        .route("/_stand-in/payments/{pi}/dispute", post(dispute))
        .route("/_stand-in/disputes/{dp}/close", post(close_dispute))
        .route("/_stand-in/events", get(events))
        .with_state(shared)
}

/// Stripe's error body.
fn stripe_error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"type": kind, "message": message}})),
    )
        .into_response()
}

/// Stripe's error body with its `code` (e.g. `charge_already_refunded`).
fn stripe_error_code(status: StatusCode, code: &str, message: &str) -> Response {
    let error = json!({"type": "invalid_request_error", "code": code, "message": message});
    (status, axum::Json(json!({ "error": error }))).into_response()
}

/// Stripe's answer to a request without a valid secret key.
fn unauthorized() -> Response {
    stripe_error(
        StatusCode::UNAUTHORIZED,
        "invalid_request_error",
        "Invalid API Key provided",
    )
}

/// A Stripe list object of `data` (one page, nothing more).
fn list(url: &str, data: Vec<Value>) -> Response {
    axum::Json(json!({"object": "list", "data": data, "has_more": false, "url": url}))
        .into_response()
}

fn new_id(prefix: &str) -> String {
    format!(
        "{prefix}_test_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    )
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Secret keys look like Stripe's test keys; anything else is refused as Stripe does.
fn authorized(headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|k| k.starts_with("sk_test_") && k.len() > 8)
}

/// `a[b][c]` form keys into the fields a session is made of.
fn params_map(params: &[(String, String)]) -> HashMap<&str, &str> {
    params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

async fn create_session(
    State(shared): State<Shared>,
    headers: HeaderMap,
    axum::Form(params): axum::Form<Vec<(String, String)>>,
) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut sorted = params.clone();
    sorted.sort();
    if let Some(replayed) = key.as_deref().and_then(|k| replay(&shared, k, &sorted)) {
        return replayed;
    }
    let (session_id, json) = match new_session(&params, &shared.base_url) {
        Ok(session) => session,
        Err(message) => {
            return stripe_error(StatusCode::BAD_REQUEST, "invalid_request_error", &message);
        }
    };
    let mut books = shared.books();
    books.sessions.insert(
        session_id.clone(),
        Session {
            json: json.clone(),
            charge: None,
        },
    );
    if let Some(key) = key {
        books.idempotency.insert(key, (sorted, session_id));
    }
    axum::Json(json).into_response()
}

/// Stripe's answer to an idempotency key seen before: the same session (marked replayed),
/// or an error when the parameters differ. `None` for a new key.
fn replay(shared: &Shared, key: &str, sorted: &[(String, String)]) -> Option<Response> {
    let books = shared.books();
    let (old_params, session_id) = books.idempotency.get(key)?;
    if old_params.as_slice() != sorted {
        return Some(stripe_error(
            StatusCode::BAD_REQUEST,
            "idempotency_error",
            "Keys for idempotent requests can only be used with the same parameters they were first used with.",
        ));
    }
    let s = books.sessions.get(session_id)?;
    let mut res = axum::Json(s.json.clone()).into_response();
    res.headers_mut().insert(
        "idempotent-replayed",
        axum::http::HeaderValue::from_static("true"),
    );
    Some(res)
}

/// The `metadata[…]` parameters as Stripe's `metadata` object.
fn metadata_of(params: &[(String, String)]) -> serde_json::Map<String, Value> {
    params
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("metadata[")
                .and_then(|k| k.strip_suffix(']'))
                .map(|k| (k.to_owned(), Value::String(v.clone())))
        })
        .collect()
}

/// A new open Checkout Session from the form's parameters: (its id, its JSON), or Stripe's
/// message for a missing or invalid parameter (an `invalid_request_error`).
fn new_session(params: &[(String, String)], base_url: &str) -> Result<(String, Value), String> {
    let invalid = |message: &str| message.to_owned();
    let p = params_map(params);
    let required = [
        "success_url",
        "line_items[0][price_data][currency]",
        "line_items[0][price_data][unit_amount]",
    ];
    if let Some(missing) = required.iter().find(|k| !p.contains_key(**k)) {
        return Err(invalid(&format!("Missing required param: {missing}.")));
    }
    if p.get("mode").copied() != Some("payment") {
        return Err(invalid("The stand-in supports mode=payment only."));
    }
    let Some(unit) = p
        .get("line_items[0][price_data][unit_amount]")
        .and_then(|a| a.parse::<i64>().ok())
    else {
        return Err(invalid("Invalid integer: unit_amount"));
    };
    let quantity = p
        .get("line_items[0][quantity]")
        .and_then(|q| q.parse::<i64>().ok())
        .unwrap_or(1);
    let metadata = metadata_of(params);
    let session_id = new_id("cs");
    let created = now();
    let json = json!({
        "id": session_id,
        "object": "checkout.session",
        "mode": "payment",
        "status": "open",
        "payment_status": "unpaid",
        "amount_total": unit.saturating_mul(quantity),
        "currency": p.get("line_items[0][price_data][currency]"),
        "client_reference_id": p.get("client_reference_id"),
        "metadata": metadata,
        "payment_intent": null,
        "success_url": p.get("success_url"),
        "cancel_url": p.get("cancel_url"),
        "url": format!("{base_url}/checkout/{session_id}"),
        "created": created,
        "expires_at": created + 86_400,
        "livemode": false,
    });
    Ok((session_id, json))
}

/// `GET /v1/checkout/sessions`: every session, newest first.
async fn list_sessions(State(shared): State<Shared>, headers: HeaderMap) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    let mut data: Vec<Value> = shared
        .books()
        .sessions
        .values()
        .map(|s| s.json.clone())
        .collect();
    data.sort_by_key(|s| std::cmp::Reverse(s["id"].as_str().map(str::to_owned)));
    list("/v1/checkout/sessions", data)
}

async fn get_session(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    match shared.books().sessions.get(&id) {
        Some(s) => axum::Json(s.json.clone()).into_response(),
        None => stripe_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            &format!("No such checkout.session: '{id}'"),
        ),
    }
}

async fn checkout_page(State(shared): State<Shared>, Path(id): Path<String>) -> Response {
    let Some(s) = shared.books().sessions.get(&id).cloned() else {
        return (StatusCode::NOT_FOUND, "no such session").into_response();
    };
    let amount = s.json["amount_total"].as_i64().unwrap_or(0);
    let currency = s.json["currency"].as_str().unwrap_or("").to_uppercase();
    let pack = s.json["metadata"]["pack"].as_str().unwrap_or("");
    let escape = |t: &str| {
        t.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    Html(format!(
        "<!doctype html><title>Stand-in Stripe Checkout</title>\
         <h1>Stand-in Stripe Checkout</h1><p>Pack <b>{}</b>: {}.{:02} {}</p>\
         <p>Status: {}</p>\
         <form method=post action=\"/checkout/{}/pay\"><button>Pay</button></form>",
        escape(pack),
        amount / 100,
        amount % 100,
        escape(&currency),
        escape(s.json["payment_status"].as_str().unwrap_or("")),
        escape(&id),
    ))
    .into_response()
}

/// Pays a session: a PaymentIntent and a Charge, and `checkout.session.completed`. A browser
/// (the checkout page's form, `Accept: text/html`) is then sent to the session's `success_url`,
/// as Stripe Checkout does; a script gets the event as JSON.
async fn pay(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Response {
    let browser = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    let paid = charge_session(&shared, &id).await;
    let success = shared.books().sessions.get(&id).and_then(|s| {
        let url = s.json["success_url"].as_str()?;
        Some(url.replace("{CHECKOUT_SESSION_ID}", &id))
    });
    match success {
        Some(url) if browser && paid.status().is_success() => {
            axum::response::Redirect::to(&url).into_response()
        }
        _ => paid,
    }
}

/// Marks a session paid and emits its `checkout.session.completed`.
async fn charge_session(shared: &Shared, id: &str) -> Response {
    let session = {
        let mut books = shared.books();
        let Some(s) = books.sessions.get_mut(id) else {
            return stripe_error(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                "No such session",
            );
        };
        if s.json["payment_status"] == "paid" {
            return stripe_error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "This session is already paid.",
            );
        }
        let pi = new_id("pi");
        s.json["payment_intent"] = json!(pi);
        s.json["payment_status"] = json!("paid");
        s.json["status"] = json!("complete");
        s.charge = Some(new_id("ch"));
        let json = s.json.clone();
        books.payments.insert(pi, id.to_owned());
        json
    };
    emit(shared, "checkout.session.completed", session).await
}

/// The charge of a paid PaymentIntent, as Stripe shows it.
fn charge_of(books: &Books, pi: &str) -> Option<Value> {
    let session = books.sessions.get(books.payments.get(pi)?)?;
    let amount = session.json["amount_total"].clone();
    Some(json!({
        "id": session.charge.clone()?,
        "object": "charge",
        "amount": amount,
        "currency": session.json["currency"],
        "payment_intent": pi,
        "paid": true,
        "refunded": false,
        "amount_refunded": 0,
        "metadata": {},
    }))
}

async fn refund(State(shared): State<Shared>, Path(pi): Path<String>) -> Response {
    let charge = {
        let books = shared.books();
        charge_of(&books, &pi)
    };
    let Some(mut charge) = charge else {
        return stripe_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "No such payment_intent",
        );
    };
    charge["refunded"] = json!(true);
    charge["amount_refunded"] = charge["amount"].clone();
    emit(&shared, "charge.refunded", charge).await
}

fn dispute_json(id: &str, books: &Books, pi: &str, status: &str) -> Option<Value> {
    let charge = charge_of(books, pi)?;
    Some(json!({
        "id": id,
        "object": "dispute",
        "amount": charge["amount"],
        "currency": charge["currency"],
        "charge": charge["id"],
        "payment_intent": pi,
        "reason": "fraudulent",
        "status": status,
    }))
}

async fn dispute(State(shared): State<Shared>, Path(pi): Path<String>) -> Response {
    let dispute = {
        let mut books = shared.books();
        let dp = new_id("dp");
        let d = dispute_json(&dp, &books, &pi, "needs_response");
        if d.is_some() {
            books.disputes.insert(dp, pi.clone());
        }
        d
    };
    match dispute {
        Some(d) => emit(&shared, "charge.dispute.created", d).await,
        None => stripe_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "No such payment_intent",
        ),
    }
}

#[derive(serde::Deserialize)]
struct CloseQuery {
    status: String,
}

async fn close_dispute(
    State(shared): State<Shared>,
    Path(dp): Path<String>,
    Query(q): Query<CloseQuery>,
) -> Response {
    if !matches!(q.status.as_str(), "won" | "lost") {
        return stripe_error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "status: won or lost",
        );
    }
    let dispute = {
        let books = shared.books();
        books
            .disputes
            .get(&dp)
            .and_then(|pi| dispute_json(&dp, &books, pi, &q.status))
    };
    match dispute {
        Some(d) => emit(&shared, "charge.dispute.closed", d).await,
        None => stripe_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "No such dispute",
        ),
    }
}

async fn events(State(shared): State<Shared>) -> axum::Json<Value> {
    axum::Json(json!({ "data": shared.books().events.clone() }))
}

/// Makes the event, delivers it when forwarding, and answers what happened.
async fn emit(shared: &Shared, kind: &str, object: Value) -> Response {
    let (event, payload) = record_event(shared, kind, object);
    let delivered = match &shared.options.forward_to {
        Some(url) => Some(deliver(shared, url, &payload).await),
        None => None,
    };
    tracing::info!(kind, delivered = ?delivered, "stand_in_event");
    axum::Json(json!({ "event": event, "payload": payload, "delivered": delivered }))
        .into_response()
}

/// Makes the event and, when forwarding, delivers it in the background, as Stripe delivers
/// the events an API call causes after answering the call.
fn emit_later(shared: &Shared, kind: &'static str, object: Value) {
    let (_, payload) = record_event(shared, kind, object);
    if let Some(url) = shared.options.forward_to.clone() {
        let shared = shared.clone();
        tokio::spawn(async move {
            let delivered = deliver(&shared, &url, &payload).await;
            tracing::info!(kind, delivered, "stand_in_event");
        });
    }
}

/// Makes an event of `kind` about `object` and keeps it: (the event, its exact body).
fn record_event(shared: &Shared, kind: &str, object: Value) -> (Value, String) {
    let event = json!({
        "id": new_id("evt"),
        "object": "event",
        "api_version": API_VERSION,
        "created": now(),
        "type": kind,
        "livemode": false,
        "pending_webhooks": 1,
        "data": { "object": object },
    });
    let payload = event.to_string();
    shared.books().events.push(event.clone());
    (event, payload)
}

/// One signed delivery; the receiver's status (0: not reached).
async fn deliver(shared: &Shared, url: &str, payload: &str) -> u16 {
    let header = atelier_shared::adapters::payments::signature::header(
        payload.as_bytes(),
        &shared.options.webhook_secret,
        now(),
    );
    shared
        .http
        .post(url)
        .header("content-type", "application/json; charset=utf-8")
        .header("stripe-signature", header)
        .body(payload.to_owned())
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
}
