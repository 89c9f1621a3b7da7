//! Buying credits: the pack catalogue (public), a Checkout Session (authenticated, paid
//! semantics of `Idempotency-Key`), and Stripe's webhook (no authorizer; the signature is
//! the authentication).

use atelier_shared::services::App;
use atelier_shared::services::payments::{self, CheckoutSpec, WebhookError};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::auth::Caller;
use crate::dto::{CheckoutRequest, CheckoutView, PackList, PackView, WebhookReceipt};
use crate::error::{ApiError, Problem, ProblemCode};
use crate::extract::{IdempotencyKeyHeader, JsonBody, RawBody};

/// Largest webhook body accepted: Stripe's events are a few KiB; this leaves room for
/// sessions with many fields without letting anyone post megabytes.
pub const MAX_WEBHOOK_BYTES: usize = 256 * 1024;

/// The credit packs for sale, with their prices in minor units.
#[utoipa::path(get, path = "/v1/packs", tag = "public", responses((status = 200, body = PackList, description = "the packs for sale")))]
pub async fn list_packs(State(app): State<App>) -> Json<PackList> {
    Json(PackList {
        items: app
            .config
            .payments
            .packs
            .all()
            .iter()
            .map(PackView::from)
            .collect(),
    })
}

/// Starts buying a pack: a Stripe Checkout Session in `payment` mode. Open `url` to pay; the
/// credits arrive when Stripe confirms the payment to the webhook. A retry with the same key
/// and body answers the same session (`200`, `Idempotent-Replayed: true`); the same key with
/// another body is `409 IDEMPOTENCY_CONFLICT`.
#[utoipa::path(post, path = "/v1/checkout", tag = "account", request_body = CheckoutRequest,
    security(("bearer" = [])),
    params(("Idempotency-Key" = String, Header, description = "1-255 visible ASCII characters; reuse it when retrying the same request")),
    responses(
        (status = 201, body = CheckoutView, description = "a new Checkout Session"),
        (status = 200, body = CheckoutView, description = "replay: the same session", headers(("Idempotent-Replayed" = String, description = "`true`: this answers an earlier request with the same key"))),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "IDEMPOTENCY_KEY_REQUIRED, IDEMPOTENCY_KEY_INVALID or MALFORMED_JSON"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "ACCOUNT_CLOSED: a closed account takes no money; no session is opened"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "IDEMPOTENCY_CONFLICT: the key was used with another body"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "VALIDATION_FAILED: unknown pack or a return URL outside the allow-list"),
        (status = 502, body = Problem, content_type = "application/problem+json", description = "PAYMENT_PROVIDER_ERROR"),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "PAYMENTS_NOT_CONFIGURED"),
    ))]
pub async fn create_checkout(
    State(app): State<App>,
    Caller(user): Caller,
    IdempotencyKeyHeader(key): IdempotencyKeyHeader,
    JsonBody(req): JsonBody<CheckoutRequest>,
) -> Result<Response, ApiError> {
    let spec = CheckoutSpec::parse(
        &app,
        req.pack.as_deref(),
        req.success_url.as_deref(),
        req.cancel_url.as_deref(),
    )?;
    let checkout = payments::checkout(&app, &user, &key, &spec).await?;
    let status = if checkout.replayed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let replayed = checkout.replayed;
    let mut res = (status, Json(CheckoutView::from(checkout))).into_response();
    if replayed {
        res.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(res)
}

/// Stripe's webhook. Believed only with a valid `Stripe-Signature` over the raw body (any
/// `v1`, at most 300 s old); then `checkout.session.completed` (paid) and
/// `checkout.session.async_payment_succeeded` grant the pack once, `charge.refunded` and
/// `charge.dispute.created` take it back once (never below zero; a shortfall puts the account
/// on hold), `charge.dispute.closed` won gives it back. A payment for a closed account grants
/// nothing: it is refunded through Stripe at once (`refunded`). Other types: `200`, ignored.
#[utoipa::path(post, path = "/v1/webhooks/stripe", tag = "webhooks",
    request_body(content = Object, content_type = "application/json", description = "a Stripe event, exactly as Stripe sent it"),
    params(("Stripe-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"t.body\">")),
    responses(
        (status = 200, body = WebhookReceipt, description = "applied, already applied, or ignored"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "SIGNATURE_INVALID or MALFORMED_EVENT: nothing written"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "PAYMENT_NOT_RECORDED: a won dispute arrived before its reversal; Stripe retries (a refund or dispute before its purchase is recorded: `200 reversed_first`)"),
        (status = 502, body = Problem, content_type = "application/problem+json", description = "PAYMENT_PROVIDER_ERROR: a payment for a closed account whose refund Stripe did not take; Stripe retries"),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "PAYMENTS_NOT_CONFIGURED"),
    ))]
pub async fn stripe_webhook(
    State(app): State<App>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Result<Json<WebhookReceipt>, ApiError> {
    let signature = headers
        .get(atelier_shared::adapters::payments::signature::HEADER)
        .and_then(|v| v.to_str().ok());
    let now = atelier_shared::clock::now().unix_timestamp();
    match payments::webhook(&app, &body, signature, now).await {
        Ok(outcome) => Ok(Json(WebhookReceipt::from(outcome))),
        Err(e) => Err(webhook_error(e)),
    }
}

fn webhook_error(e: WebhookError) -> ApiError {
    match e {
        WebhookError::NotConfigured => atelier_shared::Error::PaymentsNotConfigured.into(),
        WebhookError::Signature(e) => {
            tracing::warn!(reason = %e, "webhook_signature_refused");
            ApiError::bad_request(ProblemCode::SignatureInvalid, e.to_string())
        }
        WebhookError::Malformed(e) => {
            tracing::warn!(error = %atelier_shared::error::chain(&e), "webhook_malformed");
            ApiError::bad_request(
                ProblemCode::MalformedEvent,
                "the body is not a Stripe event",
            )
        }
        WebhookError::NotYetRecorded { payment_id } => {
            tracing::info!(payment_id = %payment_id, "webhook_payment_not_recorded");
            ApiError::new(
                StatusCode::CONFLICT,
                ProblemCode::PaymentNotRecorded,
                "Payment not recorded yet",
            )
            .detail("this event names a payment whose purchase has not arrived yet; it is applied when Stripe delivers it again")
            .retry_after(60)
        }
        e @ WebhookError::Refund { .. } => {
            tracing::warn!(error = %atelier_shared::error::chain(&e), "webhook_refund_failed");
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                ProblemCode::PaymentProviderError,
                "Payment provider error",
            )
            .detail("this payment is for a closed account and Stripe did not take its refund; it is refunded when Stripe delivers the event again")
            .retry_after(60)
        }
        WebhookError::Store(e) => e.into(),
    }
}
