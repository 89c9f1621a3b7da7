//! Buying credits in tests: the stand-in Stripe in-process (events returned, not forwarded,
//! so a test delivers them itself: once, twenty times, out of order), and one helper per
//! payments endpoint.

use atelier_shared::adapters::payments::signature;
use atelier_shared::domain::UserId;
use axum::body::Body;
use http::Request;
use serde_json::Value;

use crate::{Harness, Reply};

/// The signing secret the tests' Stripe shares with the API.
pub const WEBHOOK_SECRET: &str = "whsec_atelier_tests";
const SECRET_KEY: &str = "sk_test_atelier_tests";

/// The stand-in Stripe for one test.
pub struct StripeStandIn {
    pub base_url: String,
    http: reqwest::Client,
    _server: atelier_stripe_server::ServerHandle,
}

/// One event the stand-in made: the exact body Stripe would send.
#[derive(Debug, Clone)]
pub struct Event {
    pub payload: String,
    pub json: Value,
}

impl Event {
    /// A field of the event's object.
    pub fn object(&self, field: &str) -> String {
        self.json["data"]["object"][field]
            .as_str()
            .unwrap_or_else(|| panic!("no {field} in {}", self.payload))
            .to_owned()
    }
}

impl StripeStandIn {
    /// A stand-in whose events are only returned (the test delivers them).
    pub async fn start() -> StripeStandIn {
        StripeStandIn::forwarding(None).await
    }

    /// A stand-in that also delivers each event to `forward_to`, like `stripe listen`.
    pub async fn forwarding(forward_to: Option<String>) -> StripeStandIn {
        let server = atelier_stripe_server::spawn(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            atelier_stripe_server::Options {
                webhook_secret: WEBHOOK_SECRET.to_owned(),
                forward_to,
            },
        )
        .await
        .unwrap_or_else(|e| panic!("stand-in Stripe: {e}"));
        StripeStandIn {
            base_url: server.base_url(),
            http: reqwest::Client::new(),
            _server: server,
        }
    }

    async fn control(&self, path: &str) -> Event {
        let res = self
            .http
            .post(format!("{}{path}", self.base_url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(res.status().is_success(), "{path}: {}", res.status());
        let v: Value = res.json().await.unwrap_or_else(|e| panic!("{e}"));
        Event {
            payload: v["payload"]
                .as_str()
                .unwrap_or_else(|| panic!("{path}: no payload in {v}"))
                .to_owned(),
            json: v["event"].clone(),
        }
    }

    /// Pays a session: `checkout.session.completed`.
    pub async fn pay(&self, session_id: &str) -> Event {
        self.control(&format!("/checkout/{session_id}/pay")).await
    }

    /// Refunds a payment: `charge.refunded`.
    pub async fn refund(&self, payment_id: &str) -> Event {
        self.control(&format!("/_stand-in/payments/{payment_id}/refund"))
            .await
    }

    /// Disputes a payment: `charge.dispute.created`.
    pub async fn dispute(&self, payment_id: &str) -> Event {
        self.control(&format!("/_stand-in/payments/{payment_id}/dispute"))
            .await
    }

    /// A Stripe list the stand-in answers at `path` (Stripe's own API, read with a key).
    async fn list(&self, path: &str) -> Vec<Value> {
        let res = self
            .http
            .get(format!("{}{path}", self.base_url))
            .bearer_auth(SECRET_KEY)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(res.status().is_success(), "{path}: {}", res.status());
        let v: Value = res.json().await.unwrap_or_else(|e| panic!("{e}"));
        v["data"].as_array().cloned().unwrap_or_default()
    }

    /// Every Checkout Session made (`GET /v1/checkout/sessions`).
    pub async fn sessions(&self) -> Vec<Value> {
        self.list("/v1/checkout/sessions").await
    }

    /// The refunds of a payment (`GET /v1/refunds?payment_intent=…`).
    pub async fn refunds(&self, payment_id: &str) -> Vec<Value> {
        self.list(&format!("/v1/refunds?payment_intent={payment_id}"))
            .await
    }

    /// The events of `kind` the stand-in made, oldest first, as Stripe would send them.
    pub async fn events_of(&self, kind: &str) -> Vec<Event> {
        let res = self
            .http
            .get(format!("{}/_stand-in/events", self.base_url))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let v: Value = res.json().await.unwrap_or_else(|e| panic!("{e}"));
        v["data"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|e| e["type"] == kind)
            .map(|json| Event {
                payload: json.to_string(),
                json,
            })
            .collect()
    }

    /// Closes a dispute `won` or `lost`: `charge.dispute.closed`.
    pub async fn close_dispute(&self, dispute_id: &str, status: &str) -> Event {
        self.control(&format!(
            "/_stand-in/disputes/{dispute_id}/close?status={status}"
        ))
        .await
    }
}

impl Harness {
    /// The same harness with Stripe configured to talk to `stripe`.
    pub fn with_stripe(mut self, stripe: &StripeStandIn) -> Harness {
        let client = atelier_shared::adapters::payments::stripe::StripeClient::new(
            &stripe.base_url,
            SECRET_KEY.to_owned(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        self.app = self
            .app
            .with_stripe(Some(atelier_shared::adapters::payments::Stripe::new(
                client,
                WEBHOOK_SECRET.to_owned(),
            )));
        self
    }

    /// `GET /v1/packs` (public).
    pub async fn packs(&self) -> Reply {
        let req = Request::get("/v1/packs")
            .body(Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(None, req).await
    }

    /// `POST /v1/checkout` with a key and a JSON body.
    pub async fn checkout(&self, user: &UserId, key: &str, body: &Value) -> Reply {
        let req = Request::post("/v1/checkout")
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(Body::from(body.to_string()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(Some(user), req).await
    }

    /// `POST /v1/webhooks/stripe` with exactly these bytes and this signature header.
    pub async fn webhook_raw(&self, payload: impl Into<Vec<u8>>, signature: Option<&str>) -> Reply {
        let mut b = Request::post("/v1/webhooks/stripe")
            .header("content-type", "application/json; charset=utf-8");
        if let Some(s) = signature {
            b = b.header("stripe-signature", s);
        }
        let req = b
            .body(Body::from(payload.into()))
            .unwrap_or_else(|e| panic!("request: {e}"));
        self.call(None, req).await
    }

    /// Delivers `event` as Stripe does: signed now with the shared secret.
    pub async fn deliver(&self, event: &Event) -> Reply {
        let header = signature::header(event.payload.as_bytes(), WEBHOOK_SECRET, unix_now());
        self.webhook_raw(event.payload.clone(), Some(&header)).await
    }

    /// Delivers `event` until the API takes it (`2xx`), as Stripe retries a refused delivery;
    /// at most `tries` times.
    pub async fn deliver_until_taken(&self, event: &Event, tries: u32) -> Reply {
        let mut last = self.deliver(event).await;
        for _ in 1..tries {
            if last.status.is_success() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            last = self.deliver(event).await;
        }
        last
    }

    /// Buys `pack` for `user` on `stripe`: checkout, pay, one delivery of the payment event.
    /// Returns the payment event (its object is the session, with the payment id).
    pub async fn buy(&self, stripe: &StripeStandIn, user: &UserId, pack: &str) -> Event {
        let key = format!("buy-{}", ulid::Ulid::new());
        let checkout = self
            .checkout(user, &key, &serde_json::json!({ "pack": pack }))
            .await;
        assert_eq!(checkout.status, http::StatusCode::CREATED, "{checkout:?}");
        let paid = stripe.pay(&checkout.str("id")).await;
        let res = self.deliver(&paid).await;
        assert_eq!(res.status, http::StatusCode::OK, "{res:?}");
        paid
    }
}

/// Unix seconds now.
pub fn unix_now() -> i64 {
    atelier_shared::clock::now().unix_timestamp()
}
