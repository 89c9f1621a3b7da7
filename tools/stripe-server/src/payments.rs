//! A paid PaymentIntent's charge, and the stand-in's controls that refund or dispute it on
//! demand (`/_stand-in/payments/…`, `/_stand-in/disputes/…`).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use crate::books::{Books, Shared};
use crate::events::emit;
use crate::wire::{new_id, stripe_error};

/// The charge of a paid PaymentIntent, as Stripe shows it.
pub(crate) fn charge_of(books: &Books, pi: &str) -> Option<Value> {
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

pub(crate) async fn refund(State(shared): State<Shared>, Path(pi): Path<String>) -> Response {
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

pub(crate) async fn dispute(State(shared): State<Shared>, Path(pi): Path<String>) -> Response {
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
pub(crate) struct CloseQuery {
    status: String,
}

pub(crate) async fn close_dispute(
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
