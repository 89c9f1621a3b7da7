//! Stripe's HTTP API, the two calls the API makes: create a Checkout Session in `payment` mode,
//! and refund a payment (a payment that landed on a closed account). Form-encoded,
//! `Stripe-Version` pinned, our idempotency key forwarded as Stripe's own. The same client
//! talks to the stand-in (`tools/stripe-server`) with another base URL.

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

/// Why Stripe did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StripeError {
    #[error("the idempotency key was used with other parameters")]
    IdempotencyConflict,
    #[error("stripe answered {status}: {message}")]
    Refused { status: u16, message: String },
    /// A refusal with Stripe's error `code`.
    #[error("stripe answered {status} {code}: {message}")]
    Code {
        status: u16,
        code: String,
        message: String,
    },
    #[error("calling stripe")]
    Transport(#[source] reqwest::Error),
    #[error("stripe's answer is not the object asked for")]
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
    /// Stripe's error code, e.g. `charge_already_refunded`.
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// A refund as Stripe returns it (the fields used).
#[derive(Debug, Clone, Deserialize)]
pub struct Refund {
    pub id: String,
    pub status: Option<String>,
}

/// How asking for a refund ended.
#[derive(Debug, Clone)]
pub enum Refunded {
    /// Stripe made the refund (or, for a retried key, answered the one it made).
    Now(Refund),
    /// Stripe says the charge was refunded in full already (`charge_already_refunded`): by an
    /// earlier call whose idempotency key has expired, or from the dashboard.
    Already,
}

/// Stripe's error code for a refund of a charge refunded in full.
const ALREADY_REFUNDED: &str = "charge_already_refunded";

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
        let replayed = res
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
        let res = refused(res).await?;
        let session = res
            .json::<Session>()
            .await
            .map_err(StripeError::Malformed)?;
        Ok(Created { session, replayed })
    }

    /// `POST /v1/refunds` of the whole of `payment_intent`. The idempotency key must be
    /// derived from the payment, so a retry answers the refund made, never a second one; a
    /// charge already refunded in full is [`Refunded::Already`].
    pub async fn refund(
        &self,
        payment_intent: &str,
        user_id: &str,
        idempotency_key: &str,
    ) -> Result<Refunded, StripeError> {
        let form = [
            ("payment_intent", payment_intent),
            ("reason", "requested_by_customer"),
            ("metadata[user_id]", user_id),
            ("metadata[atelier_reason]", "account_closed"),
        ];
        let res = self
            .http
            .post(format!("{}/v1/refunds", self.base_url))
            .bearer_auth(&self.secret_key)
            .header("Stripe-Version", STRIPE_VERSION)
            .header("Idempotency-Key", idempotency_key)
            .form(&form)
            .send()
            .await
            .map_err(StripeError::Transport)?;
        match refused(res).await {
            Ok(res) => res
                .json::<Refund>()
                .await
                .map(Refunded::Now)
                .map_err(StripeError::Malformed),
            Err(StripeError::Code { code, .. }) if code == ALREADY_REFUNDED => {
                Ok(Refunded::Already)
            }
            Err(e) => Err(e),
        }
    }
}

/// The response when Stripe succeeded; its error, parsed, when not.
async fn refused(res: reqwest::Response) -> Result<reqwest::Response, StripeError> {
    let status = res.status();
    if status.is_success() {
        return Ok(res);
    }
    let body = res.json::<ErrorBody>().await.ok();
    Err(match body {
        Some(b) if b.error.kind == "idempotency_error" => StripeError::IdempotencyConflict,
        Some(b) if !b.error.code.is_empty() => StripeError::Code {
            status: status.as_u16(),
            code: b.error.code,
            message: b.error.message,
        },
        Some(b) => StripeError::Refused {
            status: status.as_u16(),
            message: b.error.message,
        },
        None => StripeError::Refused {
            status: status.as_u16(),
            message: String::new(),
        },
    })
}
