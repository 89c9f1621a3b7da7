//! Stripe events: made, kept (`GET /_stand-in/events`), signed as Stripe signs them and, with
//! a forward URL, delivered.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::books::Shared;
use crate::wire::{new_id, now};

/// The API version the stand-in answers in (the one the client pins).
pub const API_VERSION: &str = atelier_shared::adapters::payments::stripe::STRIPE_VERSION;

pub(crate) async fn events(State(shared): State<Shared>) -> axum::Json<Value> {
    axum::Json(json!({ "data": shared.books().events.clone() }))
}

/// Makes the event, delivers it when forwarding, and answers what happened.
pub(crate) async fn emit(shared: &Shared, kind: &str, object: Value) -> Response {
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
pub(crate) fn emit_later(shared: &Shared, kind: &'static str, object: Value) {
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
