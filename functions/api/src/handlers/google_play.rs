//! Buying credits in the Android app: the app posts Google Play Billing's purchase token
//! (authenticated), and Google posts Real-time Developer Notifications through a Pub/Sub push
//! subscription (no authorizer; Pub/Sub's OIDC token is the authentication).

use atelier_shared::adapters::payments::google::purchase_ids;
use atelier_shared::services::App;
use atelier_shared::services::google_play::{self, GooglePlayError};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};

use crate::auth::Caller;
use crate::dto::{GooglePurchaseRequest, GooglePurchaseView, GooglePushRequest, WebhookReceipt};
use crate::error::{ApiError, Problem, ProblemCode};
use crate::extract::{JsonBody, RawBody};

/// Grants the pack a Google Play purchase bought, once per `orderId`, and consumes it. Send
/// the purchase's product id and token when Google Play Billing reports it `PURCHASED`; do
/// not consume it yourself (this does, after granting).
#[utoipa::path(post, path = "/v1/purchases/google", tag = "account", request_body = GooglePurchaseRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, body = GooglePurchaseView, description = "granted: the pack's credits were added, and the purchase consumed"),
        (status = 200, body = GooglePurchaseView, description = "already granted to you: nothing changed (the purchase is consumed if it was not)"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "GOOGLE_PURCHASE_INVALID (Google Play does not vouch for this token of this product and app) or MALFORMED_JSON: nothing written"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "TRANSACTION_OTHER_ACCOUNT: bought for another account (obfuscatedAccountId); ACCOUNT_CLOSED: a closed account takes no money (the purchase stays unconsumed, for Google to refund); PURCHASE_NOT_BOUND: no obfuscatedAccountId, and the deployment refuses unbound purchases: nothing written"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "TRANSACTION_OTHER_ACCOUNT: already granted to another account"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "UNKNOWN_PRODUCT, PURCHASE_PENDING, TRANSACTION_REVOKED (cancelled or voided, also when the void reached us first), TRANSACTION_STALE (bought before Google's voided purchases reach back, 30 days) or VALIDATION_FAILED: nothing written"),
        (status = 502, body = Problem, content_type = "application/problem+json", description = "PAYMENT_PROVIDER_ERROR: Google Play did not answer; send the same purchase again (a grant already made is not repeated)"),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "PAYMENTS_NOT_CONFIGURED: Google Play purchases are not configured"),
    ))]
pub async fn create_google_purchase(
    State(app): State<App>,
    Caller(user): Caller,
    JsonBody(req): JsonBody<GooglePurchaseRequest>,
) -> Result<Response, ApiError> {
    let (product_id, token) = parse(&req)?;
    let purchase = google_play::purchase(&app, &user, product_id, token)
        .await
        .map_err(google_play_error)?;
    let status = if purchase.granted {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(GooglePurchaseView::from(purchase))).into_response())
}

/// The product id and token as typed values, or the fields' errors (rules in `shared/`).
fn parse(req: &GooglePurchaseRequest) -> Result<(&str, &str), ApiError> {
    purchase_ids(req.product_id.as_deref(), req.purchase_token.as_deref())
        .map_err(|errors| atelier_shared::Error::Validation(errors).into())
}

/// Real-time Developer Notifications, pushed by Pub/Sub. Believed only with the push's OIDC
/// token (Google's signature, issuer, the subscription's audience and service account, not
/// expired); then a voided one-time purchase takes its pack back once (never below zero; a
/// shortfall puts the account on hold). Other notifications: `200`, ignored.
#[utoipa::path(post, path = "/v1/webhooks/google", tag = "webhooks", request_body = GooglePushRequest,
    params(("Authorization" = String, Header, description = "Bearer <the push's OIDC token>")),
    responses(
        (status = 200, body = WebhookReceipt, description = "applied, already applied, ignored (also a void Google's voided purchases do not confirm: nothing changed), or a void of an order not granted yet recorded (`reversed_first`: it never grants)"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "MALFORMED_EVENT: not a notification for this app: nothing written"),
        (status = 502, body = Problem, content_type = "application/problem+json", description = "PAYMENT_PROVIDER_ERROR: Google's voided purchases did not answer, so the void is not confirmed yet; Pub/Sub retries"),
        (status = 401, body = Problem, content_type = "application/problem+json", description = "PUBSUB_TOKEN_INVALID: no OIDC token, or not Pub/Sub's for this subscription: nothing read, nothing written"),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "PAYMENTS_NOT_CONFIGURED"),
    ))]
pub async fn google_webhook(
    State(app): State<App>,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> Result<Json<WebhookReceipt>, ApiError> {
    let authorization = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match google_play::notification(&app, authorization, &body).await {
        Ok(outcome) => Ok(Json(WebhookReceipt::from(outcome))),
        Err(e) => Err(google_play_error(e)),
    }
}

fn google_play_error(e: GooglePlayError) -> ApiError {
    let reject = |status, code, title: &str, detail: String| {
        ApiError::new(status, code, title).detail(detail)
    };
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    match e {
        GooglePlayError::NotConfigured => atelier_shared::Error::PaymentsNotConfigured.into(),
        e @ (GooglePlayError::NoSuchPurchase(_) | GooglePlayError::Unusable(_)) => reject(
            StatusCode::BAD_REQUEST,
            ProblemCode::GooglePurchaseInvalid,
            "Not a Google Play purchase of this app",
            e.to_string(),
        ),
        e @ GooglePlayError::UnknownProduct { .. } => reject(
            unprocessable,
            ProblemCode::UnknownProduct,
            "Unknown product",
            format!("{e}; see google_play_product_id in GET /v1/packs"),
        ),
        e @ GooglePlayError::Pending => reject(
            unprocessable,
            ProblemCode::PurchasePending,
            "Purchase pending",
            format!("{e}; send it again once Google Play Billing reports it PURCHASED"),
        ),
        GooglePlayError::Cancelled => reject(
            unprocessable,
            ProblemCode::TransactionRevoked,
            "Purchase cancelled",
            "Google Play cancelled this purchase; it grants nothing".to_owned(),
        ),
        e @ GooglePlayError::Stale => reject(
            unprocessable,
            ProblemCode::TransactionStale,
            "Purchase too old",
            format!("{e}; Google Play refunds a purchase left unacknowledged for three days"),
        ),
        e @ GooglePlayError::OtherAccount => reject(
            StatusCode::FORBIDDEN,
            ProblemCode::TransactionOtherAccount,
            "Another account's purchase",
            e.to_string(),
        ),
        GooglePlayError::NotBound => reject(
            StatusCode::FORBIDDEN,
            ProblemCode::PurchaseNotBound,
            "Purchase not bound to an account",
            "the purchase has no obfuscatedAccountId, so it could be anyone's; buy with BillingFlowParams.Builder.setObfuscatedAccountId set to GET /v1/account's app_account_token (this one is not consumed: Google refunds it)".to_owned(),
        ),
        e @ GooglePlayError::GrantedToAnother => reject(
            StatusCode::CONFLICT,
            ProblemCode::TransactionOtherAccount,
            "Another account's purchase",
            e.to_string(),
        ),
        GooglePlayError::Provider(e) => {
            tracing::warn!(error = %atelier_shared::error::chain(&e), "google_play_unavailable");
            reject(
                StatusCode::BAD_GATEWAY,
                ProblemCode::PaymentProviderError,
                "Payment provider error",
                "Google Play did not answer; send the same purchase again".to_owned(),
            )
            .retry_after(5)
        }
        e => notification_error(e),
    }
}

/// The notification's own refusals (and the store's failures).
fn notification_error(e: GooglePlayError) -> ApiError {
    match e {
        GooglePlayError::PushAuth(e) => ApiError::new(
            StatusCode::UNAUTHORIZED,
            ProblemCode::PubsubTokenInvalid,
            "Not Pub/Sub's push",
        )
        .detail(e.to_string()),
        e @ GooglePlayError::Notification(_) => ApiError::bad_request(
            ProblemCode::MalformedEvent,
            atelier_shared::error::chain(&e),
        ),
        GooglePlayError::Store(e) => e.into(),
        e => ApiError::from(atelier_shared::Error::corrupt(e.to_string())),
    }
}
