//! Errors at the HTTP edge: every failure becomes RFC 9457 problem details with a stable
//! `code`. A 500 is opaque to the client; its full error chain is logged once, when the
//! response is made (`From<Error>` only translates; it never logs).

use atelier_shared::Error;
use atelier_shared::domain::FailureCode;
use atelier_shared::domain::validation::{FieldCode, FieldError, FieldErrors};
use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

/// The catalogue of the API's problem codes (`Problem::code`): one variant per stable code, so
/// a handler cannot answer a code that is not in it, and a rename happens in one place.
/// In the OpenAPI document as a string enum (`schema.d.ts` gives the web app the union).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProblemCode {
    AccountClosed,
    AccountOnHold,
    /// App Store signed data that is not Apple's for this app (chain, signature, bundle, store).
    AppStoreDataInvalid,
    AssetInUse,
    AssetNotFound,
    /// `POST /v1/edits/{id}/adopt` on a job with no rejected candidate, or whose lineage moved on.
    CandidateNotAdoptable,
    IdempotencyConflict,
    IdempotencyKeyInvalid,
    IdempotencyKeyRequired,
    ImagesDeleted,
    ImagesInUse,
    InsufficientCredits,
    Internal,
    InvalidCursor,
    InvalidWait,
    MalformedEvent,
    MalformedJson,
    MethodNotAllowed,
    NotCancelable,
    NotFound,
    NotRepairable,
    PayloadTooLarge,
    PaymentsNotConfigured,
    PaymentNotRecorded,
    PaymentProviderError,
    RepairsStopped,
    RepairInProgress,
    RepairLimitReached,
    SignatureInvalid,
    TooManyInFlight,
    /// A signed-in caller past its request budget for the window (`Retry-After`: its end).
    TooManyRequests,
    /// An App Store transaction bound (`appAccountToken`) or already granted to another account.
    TransactionOtherAccount,
    /// An App Store transaction that was refunded or revoked.
    TransactionRevoked,
    /// A store purchase older than the bound that cannot be checked online (rule 13).
    TransactionStale,
    TryAgain,
    Unauthenticated,
    /// An App Store product that no pack is sold as.
    UnknownProduct,
    UnsupportedMediaType,
    UploadLimitReached,
    ValidationFailed,
    /// The job failure code of the same name: one spelling for both.
    DailyLimitReached,
    /// `PUT /v1/devices/{id}` of a new device when the user has the most already.
    DeviceLimitReached,
    /// A Google Play purchase token Google does not vouch for (unknown, another app's or
    /// product's, unusable).
    GooglePurchaseInvalid,
    /// A Google Play purchase that is pending (not paid yet).
    PurchasePending,
    /// A Pub/Sub push whose OIDC token is not Google's for this subscription.
    PubsubTokenInvalid,
    /// An App Store or Google Play purchase bought without the account's
    /// `app_account_token`, where the deployment refuses unbound purchases.
    PurchaseNotBound,
    /// A preview past the user's previews of the UTC day.
    PreviewLimitReached,
}

impl ProblemCode {
    pub const ALL: [ProblemCode; 47] = [
        ProblemCode::AccountClosed,
        ProblemCode::AccountOnHold,
        ProblemCode::AppStoreDataInvalid,
        ProblemCode::AssetInUse,
        ProblemCode::AssetNotFound,
        ProblemCode::CandidateNotAdoptable,
        ProblemCode::IdempotencyConflict,
        ProblemCode::IdempotencyKeyInvalid,
        ProblemCode::IdempotencyKeyRequired,
        ProblemCode::ImagesDeleted,
        ProblemCode::ImagesInUse,
        ProblemCode::InsufficientCredits,
        ProblemCode::Internal,
        ProblemCode::InvalidCursor,
        ProblemCode::InvalidWait,
        ProblemCode::MalformedEvent,
        ProblemCode::MalformedJson,
        ProblemCode::MethodNotAllowed,
        ProblemCode::NotCancelable,
        ProblemCode::NotFound,
        ProblemCode::NotRepairable,
        ProblemCode::PayloadTooLarge,
        ProblemCode::PaymentsNotConfigured,
        ProblemCode::PaymentNotRecorded,
        ProblemCode::PaymentProviderError,
        ProblemCode::RepairsStopped,
        ProblemCode::RepairInProgress,
        ProblemCode::RepairLimitReached,
        ProblemCode::SignatureInvalid,
        ProblemCode::TooManyInFlight,
        ProblemCode::TooManyRequests,
        ProblemCode::TransactionOtherAccount,
        ProblemCode::TransactionRevoked,
        ProblemCode::TransactionStale,
        ProblemCode::TryAgain,
        ProblemCode::Unauthenticated,
        ProblemCode::UnknownProduct,
        ProblemCode::UnsupportedMediaType,
        ProblemCode::UploadLimitReached,
        ProblemCode::ValidationFailed,
        ProblemCode::DailyLimitReached,
        ProblemCode::DeviceLimitReached,
        ProblemCode::GooglePurchaseInvalid,
        ProblemCode::PurchasePending,
        ProblemCode::PubsubTokenInvalid,
        ProblemCode::PurchaseNotBound,
        ProblemCode::PreviewLimitReached,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ProblemCode::AccountClosed => "ACCOUNT_CLOSED",
            ProblemCode::AccountOnHold => "ACCOUNT_ON_HOLD",
            ProblemCode::AppStoreDataInvalid => "APP_STORE_DATA_INVALID",
            ProblemCode::AssetInUse => "ASSET_IN_USE",
            ProblemCode::AssetNotFound => "ASSET_NOT_FOUND",
            ProblemCode::CandidateNotAdoptable => "CANDIDATE_NOT_ADOPTABLE",
            ProblemCode::IdempotencyConflict => "IDEMPOTENCY_CONFLICT",
            ProblemCode::IdempotencyKeyInvalid => "IDEMPOTENCY_KEY_INVALID",
            ProblemCode::IdempotencyKeyRequired => "IDEMPOTENCY_KEY_REQUIRED",
            ProblemCode::ImagesDeleted => "IMAGES_DELETED",
            ProblemCode::ImagesInUse => "IMAGES_IN_USE",
            ProblemCode::InsufficientCredits => "INSUFFICIENT_CREDITS",
            ProblemCode::Internal => "INTERNAL",
            ProblemCode::InvalidCursor => "INVALID_CURSOR",
            ProblemCode::InvalidWait => "INVALID_WAIT",
            ProblemCode::MalformedEvent => "MALFORMED_EVENT",
            ProblemCode::MalformedJson => "MALFORMED_JSON",
            ProblemCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ProblemCode::NotCancelable => "NOT_CANCELABLE",
            ProblemCode::NotFound => "NOT_FOUND",
            ProblemCode::NotRepairable => "NOT_REPAIRABLE",
            ProblemCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ProblemCode::PaymentsNotConfigured => "PAYMENTS_NOT_CONFIGURED",
            ProblemCode::PaymentNotRecorded => "PAYMENT_NOT_RECORDED",
            ProblemCode::PaymentProviderError => "PAYMENT_PROVIDER_ERROR",
            ProblemCode::RepairsStopped => "REPAIRS_STOPPED",
            ProblemCode::RepairInProgress => "REPAIR_IN_PROGRESS",
            ProblemCode::RepairLimitReached => "REPAIR_LIMIT_REACHED",
            ProblemCode::SignatureInvalid => "SIGNATURE_INVALID",
            ProblemCode::TooManyInFlight => "TOO_MANY_IN_FLIGHT",
            ProblemCode::TooManyRequests => "TOO_MANY_REQUESTS",
            ProblemCode::TransactionOtherAccount => "TRANSACTION_OTHER_ACCOUNT",
            ProblemCode::TransactionRevoked => "TRANSACTION_REVOKED",
            ProblemCode::TransactionStale => "TRANSACTION_STALE",
            ProblemCode::TryAgain => "TRY_AGAIN",
            ProblemCode::Unauthenticated => "UNAUTHENTICATED",
            ProblemCode::UnknownProduct => "UNKNOWN_PRODUCT",
            ProblemCode::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ProblemCode::UploadLimitReached => "UPLOAD_LIMIT_REACHED",
            ProblemCode::ValidationFailed => "VALIDATION_FAILED",
            ProblemCode::DailyLimitReached => FailureCode::DailyLimitReached.as_str(),
            ProblemCode::DeviceLimitReached => "DEVICE_LIMIT_REACHED",
            ProblemCode::GooglePurchaseInvalid => "GOOGLE_PURCHASE_INVALID",
            ProblemCode::PurchasePending => "PURCHASE_PENDING",
            ProblemCode::PubsubTokenInvalid => "PUBSUB_TOKEN_INVALID",
            ProblemCode::PurchaseNotBound => "PURCHASE_NOT_BOUND",
            ProblemCode::PreviewLimitReached => "PREVIEW_LIMIT_REACHED",
        }
    }
}

/// Problem details (`application/problem+json`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    /// Stable machine code, e.g. `INSUFFICIENT_CREDITS`.
    #[schema(value_type = ProblemCode)]
    pub code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Field errors for `VALIDATION_FAILED` and `ASSET_NOT_FOUND`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
    /// Current balance, for `INSUFFICIENT_CREDITS`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub balance: Option<i64>,
    /// Price of the request, for `INSUFFICIENT_CREDITS`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price: Option<u32>,
    /// The job's state, for `NOT_CANCELABLE`, `NOT_REPAIRABLE`, `ASSET_IN_USE` and
    /// `IMAGES_IN_USE`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<atelier_shared::domain::JobState>,
}

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    problem: Box<Problem>,
    retry_after: Option<u32>,
    /// Our side's failure behind the response, logged once when the response is made.
    cause: Option<Cause>,
}

/// A failure of ours behind an error response: the client sees only the problem's `code`.
#[derive(Debug)]
enum Cause {
    /// Transactions kept conflicting (`503 TRY_AGAIN`).
    Contended(Error),
    /// The store or AWS failed (`500 INTERNAL`).
    Failed(Error),
}

impl Cause {
    fn log(&self) {
        match self {
            Cause::Contended(e) => tracing::warn!(error = %e, "request_contended"),
            Cause::Failed(e) => {
                tracing::error!(error = %atelier_shared::error::chain(e), "request_failed");
            }
        }
    }
}

impl ApiError {
    pub fn new(status: StatusCode, code: ProblemCode, title: &str) -> ApiError {
        let code = code.as_str();
        ApiError {
            status,
            problem: Box::new(Problem {
                kind: format!(
                    "https://atelier.dev/problems/{}",
                    code.to_ascii_lowercase().replace('_', "-")
                ),
                title: title.to_owned(),
                status: status.as_u16(),
                code,
                detail: None,
                errors: Vec::new(),
                balance: None,
                price: None,
                state: None,
            }),
            retry_after: None,
            cause: None,
        }
    }

    pub fn detail(mut self, detail: impl Into<String>) -> ApiError {
        self.problem.detail = Some(detail.into());
        self
    }

    /// Asks the client to retry after `secs`.
    pub fn retry_after(mut self, secs: u32) -> ApiError {
        self.retry_after = Some(secs);
        self
    }

    /// The job state a refusal is about.
    fn state(mut self, state: atelier_shared::domain::JobState) -> ApiError {
        self.problem.state = Some(state);
        self
    }

    /// The error behind a 5xx, logged once when the response is written.
    fn cause(mut self, cause: Cause) -> ApiError {
        self.cause = Some(cause);
        self
    }

    pub fn code(&self) -> &'static str {
        self.problem.code
    }

    pub fn unauthenticated() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            ProblemCode::Unauthenticated,
            "Authentication required",
        )
        .detail("send a valid bearer token")
    }

    pub fn not_found() -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, ProblemCode::NotFound, "Not found")
    }

    pub fn validation(errors: FieldErrors) -> ApiError {
        let mut e = ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ProblemCode::ValidationFailed,
            "The request is not valid",
        );
        e.problem.detail = Some(errors.to_string());
        e.problem.errors = errors.0;
        e
    }

    pub fn bad_request(code: ProblemCode, detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, "Bad request").detail(detail)
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        match e {
            Error::Validation(errors) => ApiError::validation(errors),
            Error::NotFound { what } => ApiError::not_found().detail(format!("no such {what}")),
            Error::AssetNotFound { field } => {
                let mut e = ApiError::new(StatusCode::NOT_FOUND, ProblemCode::AssetNotFound, "Asset not found")
                    .detail(format!("{field} does not name an uploaded asset of yours"));
                e.problem.errors.push(FieldError {
                    field: field.to_owned(),
                    code: FieldCode::AssetNotFound,
                    message: "no uploaded asset of this kind with this id".to_owned(),
                });
                e
            }
            Error::IdempotencyConflict => {
                ApiError::new(StatusCode::CONFLICT, ProblemCode::IdempotencyConflict, "Idempotency key reused")
                    .detail("this Idempotency-Key was used for a different request; use a new key for a new request")
            }
            Error::InsufficientCredits { balance, price } => {
                let mut e = ApiError::new(StatusCode::PAYMENT_REQUIRED, ProblemCode::InsufficientCredits, "Not enough credits")
                    .detail(format!("this edit costs {price} credits and the balance is {balance}"));
                e.problem.balance = Some(balance.get());
                // A price is never negative; one that does not fit is left out, not invented.
                e.problem.price = u32::try_from(price.get()).ok();
                e
            }
            e @ (Error::TooManyInFlight { .. }
            | Error::DailyLimitReached { .. }
            | Error::PreviewLimitReached { .. }
            | Error::UploadLimitReached { .. }) => limit_refusal(e),
            Error::NotCancelable { state } => ApiError::new(StatusCode::CONFLICT, ProblemCode::NotCancelable, "Cannot cancel")
                .detail(format!("the edit is {}; only a queued edit can be canceled", state.as_str()))
                .state(state),
            Error::NotRepairable { state } => ApiError::new(StatusCode::CONFLICT, ProblemCode::NotRepairable, "Cannot repair")
                .detail(format!("the edit is {}; only a succeeded edit can be repaired", state.as_str()))
                .state(state),
            Error::RepairsStopped => ApiError::new(StatusCode::CONFLICT, ProblemCode::RepairsStopped, "Repairs stopped")
                .detail("a repair of this edit did not improve on the version you have, so you kept it and repairs stopped; start a new edit to try again"),
            Error::RepairLimitReached => ApiError::new(StatusCode::CONFLICT, ProblemCode::RepairLimitReached, "No repairs left")
                .detail("an edit can be repaired at most twice; start a new edit to try again"),
            Error::RepairInProgress => ApiError::new(StatusCode::CONFLICT, ProblemCode::RepairInProgress, "A repair is in progress")
                .detail("each repair starts from the version the previous one left; try again when it finishes")
                .retry_after(30),
            Error::CandidateNotAdoptable { why } => ApiError::new(StatusCode::CONFLICT, ProblemCode::CandidateNotAdoptable, "No candidate to choose")
                .detail(why.as_str()),
            Error::InvalidCursor => ApiError::bad_request(ProblemCode::InvalidCursor, "the cursor is not one this API returned"),
            Error::AccountOnHold => ApiError::new(StatusCode::FORBIDDEN, ProblemCode::AccountOnHold, "Account on hold")
                .detail("a refunded or disputed purchase took back credits that were already spent; new edits are refused until support releases the account"),
            e @ (Error::AccountClosed
            | Error::AssetInUse { .. }
            | Error::ImagesInUse { .. }
            | Error::ImagesDeleted) => privacy_refusal(e),
            Error::DeviceLimitReached { limit } => ApiError::new(StatusCode::CONFLICT, ProblemCode::DeviceLimitReached, "Too many devices")
                .detail(format!("{limit} devices are registered for push; unregister one (DELETE /v1/devices/{{id}}) first; nothing changed")),
            Error::PaymentsNotConfigured => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ProblemCode::PaymentsNotConfigured, "Buying credits is not available")
                .detail("this deployment has no payment provider configured"),
            Error::PaymentProvider(_) => ApiError::new(StatusCode::BAD_GATEWAY, ProblemCode::PaymentProviderError, "Payment provider error")
                .detail("the payment provider did not create the checkout; try again")
                .retry_after(5)
                .cause(Cause::Failed(e)),
            Error::Contention { .. } => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ProblemCode::TryAgain, "Busy")
                .detail("try again")
                .retry_after(1)
                .cause(Cause::Contended(e)),
            Error::Corrupt { .. } | Error::Aws(_) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ProblemCode::Internal, "Internal error").cause(Cause::Failed(e))
            }
        }
    }
}

/// The 429s: a per-user limit reached, with when to come back; nothing was charged or
/// presigned.
fn limit_refusal(e: Error) -> ApiError {
    let too_many = StatusCode::TOO_MANY_REQUESTS;
    match e {
        Error::TooManyInFlight { in_flight, limit } => ApiError::new(too_many, ProblemCode::TooManyInFlight, "Too many edits in flight")
            .detail(format!("{in_flight} of at most {limit} edits are queued or processing; try again when one finishes"))
            .retry_after(30),
        Error::DailyLimitReached { retry_after_secs } => ApiError::new(too_many, ProblemCode::DailyLimitReached, "Daily limit reached")
            .detail("your edits today have used your share of the day's model budget; nothing was charged; try again after midnight UTC")
            .retry_after(retry_after_secs),
        Error::PreviewLimitReached { limit, retry_after_secs } => ApiError::new(too_many, ProblemCode::PreviewLimitReached, "Preview limit reached")
            .detail(format!("you have used today's {limit} previews; nothing was charged; an edit without \"preview\" still checks the area before drawing; previews start over at 00:00 UTC"))
            .retry_after(retry_after_secs),
        Error::UploadLimitReached { slots_used, slot_limit, bytes_used, byte_limit, retry_after } => ApiError::new(too_many, ProblemCode::UploadLimitReached, "Upload limit reached")
            .detail(format!("today's uploads: {slots_used} of {slot_limit} slots, {bytes_used} of {byte_limit} bytes; this one does not fit, nothing was presigned; the limits start over at 00:00 UTC"))
            .retry_after(u32::try_from(retry_after.as_secs()).unwrap_or(86_400)),
        // Only the four above are routed here; anything else would be a bug, answered as one.
        other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ProblemCode::Internal, "Internal error")
            .cause(Cause::Failed(other)),
    }
}

/// Refusals of deletion and of what deletion closed; nothing changed.
fn privacy_refusal(e: Error) -> ApiError {
    let conflict = StatusCode::CONFLICT;
    match e {
        Error::AccountClosed => ApiError::new(StatusCode::FORBIDDEN, ProblemCode::AccountClosed, "Account closed")
            .detail("this account was deleted; it accepts no new uploads, edits or purchases"),
        Error::AssetInUse { job_id, state } => ApiError::new(conflict, ProblemCode::AssetInUse, "Asset in use")
            .detail(format!("edit {job_id} is {} and reads this upload; delete it once the edit has finished, or cancel the edit", state.as_str()))
            .state(state),
        Error::ImagesInUse { state } => ApiError::new(conflict, ProblemCode::ImagesInUse, "Edit not finished")
            .detail(format!("the edit (or a repair of it) is {}; its images can be deleted once it has finished", state.as_str()))
            .state(state),
        Error::ImagesDeleted => ApiError::new(conflict, ProblemCode::ImagesDeleted, "Images deleted")
            .detail("this edit's images were deleted, so it cannot be repaired; nothing was charged"),
        // Only the four above are routed here; anything else would be a bug, answered as one.
        other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ProblemCode::Internal, "Internal error")
            .cause(Cause::Failed(other)),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Some(cause) = &self.cause {
            cause.log();
        }
        atelier_shared::adapters::metrics::refused(self.status.as_u16(), self.problem.code);
        let mut res = (self.status, Json(*self.problem)).into_response();
        let headers = res.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document's enum (serde's names) and the codes the API answers (`as_str`) are one
    /// list: a client typed from the document knows every code it can get.
    #[test]
    fn every_problem_code_is_spelled_the_same_in_the_document_and_on_the_wire() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ProblemCode::ALL {
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::Value::from(code.as_str())),
                "{code:?}"
            );
            assert!(seen.insert(code.as_str()), "{code:?} listed twice");
        }
    }
}
