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

mod books;
mod checkout;
mod events;
mod payments;
mod refunds;
mod server;
mod sessions;
mod wire;

pub use books::Options;
pub use events::API_VERSION;
pub use server::{ServerHandle, spawn};
