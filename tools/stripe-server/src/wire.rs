//! Stripe's API conventions the handlers share: error bodies, lists, ids, the clock, the
//! secret-key check and form parameters.

use std::collections::HashMap;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Stripe's error body.
pub(crate) fn stripe_error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"type": kind, "message": message}})),
    )
        .into_response()
}

/// Stripe's error body with its `code` (e.g. `charge_already_refunded`).
pub(crate) fn stripe_error_code(status: StatusCode, code: &str, message: &str) -> Response {
    let error = json!({"type": "invalid_request_error", "code": code, "message": message});
    (status, axum::Json(json!({ "error": error }))).into_response()
}

/// Stripe's answer to a request without a valid secret key.
pub(crate) fn unauthorized() -> Response {
    stripe_error(
        StatusCode::UNAUTHORIZED,
        "invalid_request_error",
        "Invalid API Key provided",
    )
}

/// A Stripe list object of `data` (one page, nothing more).
pub(crate) fn list(url: &str, data: Vec<Value>) -> Response {
    axum::Json(json!({"object": "list", "data": data, "has_more": false, "url": url}))
        .into_response()
}

pub(crate) fn new_id(prefix: &str) -> String {
    format!(
        "{prefix}_test_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    )
}

pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Secret keys look like Stripe's test keys; anything else is refused as Stripe does.
pub(crate) fn authorized(headers: &HeaderMap) -> bool {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|k| k.starts_with("sk_test_") && k.len() > 8)
}

/// `a[b][c]` form keys into the fields a session is made of.
pub(crate) fn params_map(params: &[(String, String)]) -> HashMap<&str, &str> {
    params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// The `metadata[…]` parameters as Stripe's `metadata` object.
pub(crate) fn metadata_of(params: &[(String, String)]) -> serde_json::Map<String, Value> {
    params
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("metadata[")
                .and_then(|k| k.strip_suffix(']'))
                .map(|k| (k.to_owned(), Value::String(v.clone())))
        })
        .collect()
}
