//! Checkout Sessions: `POST /v1/checkout/sessions` (with its idempotency keys),
//! `GET /v1/checkout/sessions` and `GET /v1/checkout/sessions/{id}`.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::books::{Session, Shared};
use crate::wire::{
    authorized, list, metadata_of, new_id, now, params_map, stripe_error, unauthorized,
};

pub(crate) async fn create_session(
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
pub(crate) async fn list_sessions(State(shared): State<Shared>, headers: HeaderMap) -> Response {
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

pub(crate) async fn get_session(
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
