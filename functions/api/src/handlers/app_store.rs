//! Buying credits in the iOS app: the app posts StoreKit 2's signed transaction
//! (authenticated), and Apple posts App Store Server Notifications v2 (no authorizer; Apple's
//! signature is the authentication).

use atelier_shared::adapters::payments::apple::{MAX_JWS_LEN, MAX_TRANSACTION_LEN};
use atelier_shared::domain::validation::{FieldCode, FieldErrors};
use atelier_shared::services::App;
use atelier_shared::services::app_store::{self, AppStoreError};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use crate::auth::Caller;
use crate::dto::{
    AppleNotificationRequest, ApplePurchaseView, AppleTransactionRequest, WebhookReceipt,
};
use crate::error::{ApiError, Problem, ProblemCode};
use crate::extract::JsonBody;

/// Largest notification body accepted: a signed payload carries two certificate chains and a
/// signed transaction inside it (~10 KiB).
pub const MAX_NOTIFICATION_BYTES: usize = 64 * 1024;

/// Grants the pack an App Store transaction bought, once per `transactionId`. Send
/// `Transaction.jwsRepresentation` after StoreKit 2 reports a verified purchase, then
/// `finish()` the transaction once this answers `201` or `200`.
#[utoipa::path(post, path = "/v1/purchases/apple", tag = "account", request_body = AppleTransactionRequest,
    security(("bearer" = [])),
    responses(
        (status = 201, body = ApplePurchaseView, description = "granted: the pack's credits were added"),
        (status = 200, body = ApplePurchaseView, description = "already granted to you: nothing changed"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "APP_STORE_DATA_INVALID (not Apple's signed data for this app and store) or MALFORMED_JSON: nothing written"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "TRANSACTION_OTHER_ACCOUNT: bought for another account (appAccountToken); ACCOUNT_CLOSED: a closed account takes no money (the purchase stays unfinished, for the store to refund); PURCHASE_NOT_BOUND: no appAccountToken, and the deployment refuses unbound purchases: nothing written"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "TRANSACTION_OTHER_ACCOUNT: already granted to another account"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "UNKNOWN_PRODUCT, TRANSACTION_REVOKED (refunded or revoked, also when the refund reached us first), TRANSACTION_STALE (signed more than 72 h ago and the App Store Server API is not configured: post it again as StoreKit gives it now) or VALIDATION_FAILED: nothing written"),
        (status = 502, body = Problem, content_type = "application/problem+json", description = "PAYMENT_PROVIDER_ERROR: the App Store Server API did not answer for a transaction signed more than 72 h ago; send it again"),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "PAYMENTS_NOT_CONFIGURED: App Store purchases are not configured"),
    ))]
pub async fn create_apple_purchase(
    State(app): State<App>,
    Caller(user): Caller,
    JsonBody(req): JsonBody<AppleTransactionRequest>,
) -> Result<Response, ApiError> {
    let signed = required_jws(
        req.signed_transaction.as_deref(),
        "signedTransaction",
        MAX_TRANSACTION_LEN,
    )?;
    let now = atelier_shared::clock::now().unix_timestamp();
    let purchase = app_store::purchase(&app, &user, signed, now)
        .await
        .map_err(app_store_error)?;
    let status = if purchase.granted {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(ApplePurchaseView::from(purchase))).into_response())
}

/// App Store Server Notifications v2. Believed only when the signed payload (and the
/// transaction in it) is Apple's for this app; then `REFUND` and `REVOKE` take the pack back
/// once (never below zero; a shortfall puts the account on hold), and a `CONSUMPTION_REQUEST`
/// is answered to Apple when the operator configured it and the buyer consented
/// (`PUT /v1/account/consumption-consent`). Other types: `200`, ignored.
#[utoipa::path(post, path = "/v1/webhooks/apple", tag = "webhooks", request_body = AppleNotificationRequest,
    responses(
        (status = 200, body = WebhookReceipt, description = "applied, already applied, ignored, or a reversal of a transaction not granted yet recorded (`reversed_first`: it never grants)"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "APP_STORE_DATA_INVALID or MALFORMED_JSON: nothing written"),
        (status = 502, body = Problem, content_type = "application/problem+json", description = "PAYMENT_PROVIDER_ERROR: the App Store Server API did not take the consumption answer; Apple retries"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "VALIDATION_FAILED: signedPayload over its length limit; nothing written"),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "PAYMENTS_NOT_CONFIGURED"),
    ))]
pub async fn apple_webhook(
    State(app): State<App>,
    JsonBody(req): JsonBody<AppleNotificationRequest>,
) -> Result<Json<WebhookReceipt>, ApiError> {
    let signed = required_jws(req.signed_payload.as_deref(), "signedPayload", MAX_JWS_LEN)?;
    let now = atelier_shared::clock::now().unix_timestamp();
    match app_store::notification(&app, signed, now).await {
        Ok(outcome) => Ok(Json(WebhookReceipt::from(outcome))),
        Err(e) => Err(app_store_error(e)),
    }
}

/// The JWS field, present and within its length limit.
fn required_jws<'a>(
    value: Option<&'a str>,
    field: &'static str,
    max: usize,
) -> Result<&'a str, ApiError> {
    let mut errors = FieldErrors::default();
    match value {
        None | Some("") => errors.push(field, FieldCode::Required, "the JWS StoreKit gave you"),
        Some(v) if v.len() > max => errors.push(
            field,
            FieldCode::TooLong,
            format!("at most {max} characters"),
        ),
        Some(v) => return Ok(v),
    }
    Err(atelier_shared::Error::Validation(errors).into())
}

fn app_store_error(e: AppStoreError) -> ApiError {
    let reject = |status, code, title: &str, detail: String| {
        ApiError::new(status, code, title).detail(detail)
    };
    match e {
        AppStoreError::NotConfigured => atelier_shared::Error::PaymentsNotConfigured.into(),
        AppStoreError::Verify(e) => reject(
            StatusCode::BAD_REQUEST,
            ProblemCode::AppStoreDataInvalid,
            "Not App Store data for this app",
            e.to_string(),
        ),
        e @ AppStoreError::UnknownProduct { .. } => reject(
            StatusCode::UNPROCESSABLE_ENTITY,
            ProblemCode::UnknownProduct,
            "Unknown product",
            format!("{e}; see app_store_product_id in GET /v1/packs"),
        ),
        AppStoreError::Revoked => reject(
            StatusCode::UNPROCESSABLE_ENTITY,
            ProblemCode::TransactionRevoked,
            "Transaction revoked",
            "the App Store refunded or revoked this transaction; it grants nothing".to_owned(),
        ),
        e @ AppStoreError::OtherAccount => reject(
            StatusCode::FORBIDDEN,
            ProblemCode::TransactionOtherAccount,
            "Another account's transaction",
            e.to_string(),
        ),
        e @ AppStoreError::Stale { .. } => reject(
            StatusCode::UNPROCESSABLE_ENTITY,
            ProblemCode::TransactionStale,
            "Transaction signed too long ago",
            format!(
                "{e}; post it again as StoreKit gives it now (AppStore.sync(), then Transaction.unfinished)"
            ),
        ),
        e @ AppStoreError::Lookup { .. } => {
            tracing::warn!(error = %atelier_shared::error::chain(&e), "app_store_lookup_failed");
            reject(
                StatusCode::BAD_GATEWAY,
                ProblemCode::PaymentProviderError,
                "Payment provider error",
                "the App Store Server API did not answer; send the same transaction again"
                    .to_owned(),
            )
            .retry_after(5)
        }
        AppStoreError::NotBound => reject(
            StatusCode::FORBIDDEN,
            ProblemCode::PurchaseNotBound,
            "Purchase not bound to an account",
            "the transaction has no appAccountToken, so it could be anyone's; buy with Product.PurchaseOption.appAccountToken set to GET /v1/account's app_account_token (this one is left for Apple to refund)".to_owned(),
        ),
        e @ AppStoreError::GrantedToAnother => reject(
            StatusCode::CONFLICT,
            ProblemCode::TransactionOtherAccount,
            "Another account's transaction",
            e.to_string(),
        ),
        e @ AppStoreError::ConsumptionUnsent { .. } => {
            tracing::warn!(error = %atelier_shared::error::chain(&e), "app_store_consumption_unsent");
            reject(
                StatusCode::BAD_GATEWAY,
                ProblemCode::PaymentProviderError,
                "Payment provider error",
                "the App Store Server API did not take the consumption answer; Apple sends the notification again".to_owned(),
            )
            .retry_after(60)
        }
        AppStoreError::Store(e) => e.into(),
    }
}
