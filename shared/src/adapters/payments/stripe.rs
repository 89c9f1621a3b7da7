//! Stripe's HTTP API, the one call the API makes: create a Checkout Session in `payment` mode
//! (form-encoded, `Stripe-Version` pinned, our idempotency key forwarded as Stripe's own).
//! The same client talks to the stand-in (`tools/stripe-server`) with another base URL.

use std::time::Duration;

use serde::Deserialize;

use crate::adapters::tls::{self, Alpn};

/// The API version this code was written against; Stripe answers in this shape whatever the
/// account's default is.
pub const STRIPE_VERSION: &str = "2024-06-20";

/// The client and the secret key.
#[derive(Clone)]
pub struct StripeClient {
    http: reqwest::Client,
    base_url: String,
    secret_key: String,
}

impl std::fmt::Debug for StripeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeClient")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// What a new session is made of.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    pub user_id: &'a str,
    pub pack: &'a str,
    pub credits: i64,
    pub amount: i64,
    pub currency: &'a str,
    pub product_name: String,
    pub success_url: &'a str,
    pub cancel_url: &'a str,
}

/// The session as Stripe returns it (the fields used).
#[derive(Debug, Clone, Deserialize)]
pub struct Session {
    pub id: String,
    pub url: Option<String>,
}

/// A created (or replayed) session.
#[derive(Debug, Clone)]
pub struct Created {
    pub session: Session,
    /// Stripe answered from its idempotency cache (`Idempotent-Replayed: true`).
    pub replayed: bool,
}

/// Why Stripe did not create a session.
#[derive(Debug, thiserror::Error)]
pub enum StripeError {
    #[error("the idempotency key was used with other parameters")]
    IdempotencyConflict,
    #[error("stripe answered {status}: {message}")]
    Refused { status: u16, message: String },
    #[error("calling stripe")]
    Transport(#[source] reqwest::Error),
    #[error("stripe's answer is not a checkout session")]
    Malformed(#[source] reqwest::Error),
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}

impl StripeClient {
    pub fn new(base_url: &str, secret_key: String) -> Result<StripeClient, reqwest::Error> {
        let http = tls::shared(reqwest::Client::builder(), Alpn::Any)
            .timeout(Duration::from_secs(20))
            .build()?;
        Ok(StripeClient {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            secret_key,
        })
    }

    /// `POST /v1/checkout/sessions`.
    pub async fn create_session(
        &self,
        new: &NewSession<'_>,
        idempotency_key: &str,
    ) -> Result<Created, StripeError> {
        let credits = new.credits.to_string();
        let amount = new.amount.to_string();
        let form: Vec<(&str, &str)> = vec![
            ("mode", "payment"),
            ("client_reference_id", new.user_id),
            ("success_url", new.success_url),
            ("cancel_url", new.cancel_url),
            ("line_items[0][quantity]", "1"),
            ("line_items[0][price_data][currency]", new.currency),
            ("line_items[0][price_data][unit_amount]", &amount),
            (
                "line_items[0][price_data][product_data][name]",
                &new.product_name,
            ),
            ("metadata[user_id]", new.user_id),
            ("metadata[pack]", new.pack),
            ("metadata[credits]", &credits),
            // The same on the payment, so Stripe's dashboard shows whose it is.
            ("payment_intent_data[metadata][user_id]", new.user_id),
            ("payment_intent_data[metadata][pack]", new.pack),
        ];
        let res = self
            .http
            .post(format!("{}/v1/checkout/sessions", self.base_url))
            .bearer_auth(&self.secret_key)
            .header("Stripe-Version", STRIPE_VERSION)
            .header("Idempotency-Key", idempotency_key)
            .form(&form)
            .send()
            .await
            .map_err(StripeError::Transport)?;
        let status = res.status();
        let replayed = res
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
        if !status.is_success() {
            let body = res.json::<ErrorBody>().await.ok();
            return Err(match body {
                Some(b) if b.error.kind == "idempotency_error" => StripeError::IdempotencyConflict,
                Some(b) => StripeError::Refused {
                    status: status.as_u16(),
                    message: b.error.message,
                },
                None => StripeError::Refused {
                    status: status.as_u16(),
                    message: String::new(),
                },
            });
        }
        let session = res
            .json::<Session>()
            .await
            .map_err(StripeError::Malformed)?;
        Ok(Created { session, replayed })
    }
}
