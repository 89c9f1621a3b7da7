//! What the stand-in remembers (sessions, payments, disputes, refunds, events) and the state
//! every handler shares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

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
pub(crate) struct Session {
    pub(crate) json: Value,
    pub(crate) charge: Option<String>,
}

#[derive(Default)]
pub(crate) struct Books {
    pub(crate) sessions: HashMap<String, Session>,
    /// Idempotency-Key → (the request's parameters, the session it made).
    pub(crate) idempotency: HashMap<String, (Vec<(String, String)>, String)>,
    /// PaymentIntent → its session.
    pub(crate) payments: HashMap<String, String>,
    /// Dispute → PaymentIntent.
    pub(crate) disputes: HashMap<String, String>,
    /// Refunds made through `POST /v1/refunds`, oldest first.
    pub(crate) refunds: Vec<Value>,
    /// Idempotency-Key → (the refund request's parameters, the refund's index in `refunds`).
    pub(crate) refund_keys: HashMap<String, (Vec<(String, String)>, usize)>,
    pub(crate) events: Vec<Value>,
}

#[derive(Clone)]
pub(crate) struct Shared {
    pub(crate) options: Arc<Options>,
    pub(crate) base_url: Arc<String>,
    pub(crate) books: Arc<Mutex<Books>>,
    pub(crate) http: reqwest::Client,
}

impl Shared {
    pub(crate) fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(|e| e.into_inner())
    }
}
