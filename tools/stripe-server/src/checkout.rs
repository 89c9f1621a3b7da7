//! The page a session's `url` opens, and paying it: a PaymentIntent, a Charge and
//! `checkout.session.completed`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde_json::json;

use crate::books::Shared;
use crate::events::emit;
use crate::wire::{new_id, stripe_error};

pub(crate) async fn checkout_page(
    State(shared): State<Shared>,
    Path(id): Path<String>,
) -> Response {
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
pub(crate) async fn pay(
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
