//! Refunds, as Stripe's API makes them: `POST /v1/refunds` of a whole PaymentIntent
//! (form-encoded, `Idempotency-Key` honoured: the same key and parameters answer the same
//! refund with `Idempotent-Replayed: true`, other parameters a 400 `idempotency_error`; a
//! charge refunded in full already is a 400 `charge_already_refunded`; an unknown
//! PaymentIntent a 400 `resource_missing`), and `GET /v1/refunds?payment_intent=…`. Each refund
//! made emits `charge.refunded`, delivered after the answer as Stripe does.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::books::{Books, Shared};
use crate::events::emit_later;
use crate::payments::charge_of;
use crate::wire::{
    authorized, list, metadata_of, new_id, now, params_map, stripe_error, stripe_error_code,
    unauthorized,
};

pub(super) async fn create_refund(
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
    let (refund, charge) = {
        let mut books = shared.books();
        if let Some(k) = key.as_deref()
            && let Some(replayed) = replay(&books, k, &sorted)
        {
            return replayed;
        }
        let made = match new_refund(&books, &params) {
            Ok(made) => made,
            Err(refused) => return *refused,
        };
        books.refunds.push(made.0.clone());
        let at = books.refunds.len() - 1;
        if let Some(k) = key {
            books.refund_keys.insert(k, (sorted, at));
        }
        made
    };
    emit_later(&shared, "charge.refunded", charge);
    axum::Json(refund).into_response()
}

/// The refund a key made before (marked replayed), or Stripe's error when the parameters
/// differ; `None` for a new key.
fn replay(books: &Books, key: &str, sorted: &[(String, String)]) -> Option<Response> {
    let (old_params, at) = books.refund_keys.get(key)?;
    if old_params.as_slice() != sorted {
        return Some(stripe_error(
            StatusCode::BAD_REQUEST,
            "idempotency_error",
            "Keys for idempotent requests can only be used with the same parameters they were first used with.",
        ));
    }
    let mut res = axum::Json(books.refunds.get(*at)?.clone()).into_response();
    res.headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    Some(res)
}

/// A refund of the whole payment the parameters name, and its charge as refunded; or
/// Stripe's refusal.
fn new_refund(books: &Books, params: &[(String, String)]) -> Result<(Value, Value), Box<Response>> {
    let p = params_map(params);
    let Some(pi) = p.get("payment_intent").copied() else {
        return Err(Box::new(stripe_error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "The stand-in refunds by payment_intent only.",
        )));
    };
    let Some(mut charge) = charge_of(books, pi) else {
        let message = format!("No such payment_intent: '{pi}'");
        return Err(Box::new(stripe_error_code(
            StatusCode::BAD_REQUEST,
            "resource_missing",
            &message,
        )));
    };
    if books.refunds.iter().any(|r| r["payment_intent"] == pi) {
        let message = format!("Charge {} has already been refunded.", charge["id"]);
        return Err(Box::new(stripe_error_code(
            StatusCode::BAD_REQUEST,
            "charge_already_refunded",
            &message,
        )));
    }
    let metadata = metadata_of(params);
    let refund = json!({
        "id": new_id("re"),
        "object": "refund",
        "amount": charge["amount"],
        "charge": charge["id"],
        "created": now(),
        "currency": charge["currency"],
        "metadata": metadata,
        "payment_intent": pi,
        "reason": p.get("reason"),
        "status": "succeeded",
    });
    charge["refunded"] = json!(true);
    charge["amount_refunded"] = charge["amount"].clone();
    Ok((refund, charge))
}

#[derive(serde::Deserialize)]
pub(super) struct RefundQuery {
    payment_intent: Option<String>,
}

/// `GET /v1/refunds`: the refunds made, newest first, of one PaymentIntent when named.
pub(super) async fn list_refunds(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Query(q): Query<RefundQuery>,
) -> Response {
    if !authorized(&headers) {
        return unauthorized();
    }
    let data: Vec<Value> = shared
        .books()
        .refunds
        .iter()
        .rev()
        .filter(|r| {
            q.payment_intent
                .as_deref()
                .is_none_or(|pi| r["payment_intent"] == pi)
        })
        .cloned()
        .collect();
    list("/v1/refunds", data)
}
