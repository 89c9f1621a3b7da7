//! The caller's account and ledger; deleting and exporting it.

use atelier_shared::domain::validation::{FieldCode, FieldErrors};
use atelier_shared::services::privacy::{self, AccountDeletion, DeletedBy};
use atelier_shared::services::{App, accounts};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};

use crate::auth::{Caller, Email};
use crate::dto::{
    AccountDeletionView, AccountView, ConsumptionConsentRequest, ExportPageView, JobView,
    LedgerEntryView, LedgerPage,
};
use crate::error::{ApiError, Problem};
use crate::extract::{JsonBody, Pagination};

/// Balance and in-flight count. The first call creates the account, with its signup grant
/// when the token carries a verified e-mail (else the grant waits for the first call that does).
#[utoipa::path(get, path = "/v1/account", tag = "account", security(("bearer" = [])),
    responses((status = 200, body = AccountView, description = "the account, created on the first call")))]
pub async fn get_account(
    State(app): State<App>,
    Caller(user): Caller,
    Email(email): Email,
) -> Result<Json<AccountView>, ApiError> {
    let account = accounts::ensure_account(&app, &user, email).await?;
    Ok(Json(AccountView::new(
        account,
        app.config.limits.max_in_flight,
    )))
}

/// Gives or withdraws the consent Apple asks for before an app may tell it, when the user
/// asks Apple to refund an App Store purchase, how much of that purchase they used. Without
/// it no `CONSUMPTION_REQUEST` is answered for this account. Idempotent; a consent already
/// given keeps its date.
#[utoipa::path(put, path = "/v1/account/consumption-consent", tag = "account", request_body = ConsumptionConsentRequest, security(("bearer" = [])),
    responses((status = 200, body = AccountView, description = "the account with its consent as asked"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "ACCOUNT_CLOSED: the account was deleted; nothing changed"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "VALIDATION_FAILED: consented missing; nothing changed")))]
pub async fn put_consumption_consent(
    State(app): State<App>,
    Caller(user): Caller,
    Email(email): Email,
    JsonBody(req): JsonBody<ConsumptionConsentRequest>,
) -> Result<Json<AccountView>, ApiError> {
    let Some(consent) = req.consented else {
        let mut errors = FieldErrors::default();
        errors.push("consented", FieldCode::Required, "true or false");
        return Err(atelier_shared::Error::Validation(errors).into());
    };
    let account = accounts::set_consumption_consent(&app, &user, email, consent).await?;
    Ok(Json(AccountView::new(
        account,
        app.config.limits.max_in_flight,
    )))
}

/// Ledger rows, newest first.
#[utoipa::path(get, path = "/v1/account/ledger", tag = "account", security(("bearer" = [])),
    params(("limit" = Option<u16>, Query, description = "1-100, default 20"), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = LedgerPage, description = "a page of ledger rows")))]
pub async fn get_ledger(
    State(app): State<App>,
    Caller(user): Caller,
    Email(email): Email,
    page: Pagination,
) -> Result<Json<LedgerPage>, ApiError> {
    let (rows, next_cursor) =
        accounts::ledger_page(&app, &user, email, page.limit, page.cursor.as_deref()).await?;
    Ok(Json(LedgerPage {
        items: rows.into_iter().map(LedgerEntryView::from).collect(),
        next_cursor,
    }))
}

/// Seconds a client waits before sending a pending deletion again.
const DELETION_RETRY_SECS: u32 = 30;

/// Deletes the caller's account: it is closed at once (no new uploads or edits, also for a
/// new token of the same subject), queued edits are canceled and refunded, and once no edit
/// is processing every image is deleted and every edit's personal text cleared. The ledger
/// stays (the financial record); the remaining balance stays on the closed account.
/// Idempotent: send it again after a `202` (or after any failure) to finish.
#[utoipa::path(delete, path = "/v1/account", tag = "account", security(("bearer" = [])),
    responses(
        (status = 200, body = AccountDeletionView, description = "deleted"),
        (status = 202, body = AccountDeletionView, description = "closed; edits still processing: send it again after Retry-After",
            headers(("Retry-After" = u32, description = "seconds"))),
    ))]
pub async fn delete_account(
    State(app): State<App>,
    Caller(user): Caller,
) -> Result<Response, ApiError> {
    let max_in_flight = app.config.limits.max_in_flight;
    Ok(
        match privacy::delete_account(&app, &user, &DeletedBy::User).await? {
            AccountDeletion::Finished {
                account, canceled, ..
            } => Json(AccountDeletionView {
                status: "deleted".to_owned(),
                canceled,
                processing: 0,
                account: Some(AccountView::new(*account, max_in_flight)),
            })
            .into_response(),
            AccountDeletion::Pending {
                processing,
                canceled,
            } => (
                StatusCode::ACCEPTED,
                [(header::RETRY_AFTER, DELETION_RETRY_SECS.to_string())],
                Json(AccountDeletionView {
                    status: "pending".to_owned(),
                    canceled,
                    processing,
                    account: None,
                }),
            )
                .into_response(),
        },
    )
}

/// Everything kept about the caller, as JSON, a page at a time: the account (first page),
/// the ledger, then every edit and repair with short-lived links to the images that still
/// exist. Follow `next_cursor` until it is absent.
#[utoipa::path(get, path = "/v1/account/export", tag = "account", security(("bearer" = [])),
    params(("limit" = Option<u16>, Query, description = "rows a page, 1-100, default 20"), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = ExportPageView, description = "one page of the export; `next_cursor` leads to the next"),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "INVALID_CURSOR: the cursor was not one this API gave")))]
pub async fn export_account(
    State(app): State<App>,
    Caller(user): Caller,
    Email(email): Email,
    page: Pagination,
) -> Result<Json<ExportPageView>, ApiError> {
    let p = privacy::export_page(&app, &user, email, page.limit, page.cursor.as_deref()).await?;
    let max_in_flight = app.config.limits.max_in_flight;
    let retention_days = app.config.limits.result_retention_days;
    Ok(Json(ExportPageView {
        account: p.account.map(|a| AccountView::new(a, max_in_flight)),
        ledger: p.ledger.into_iter().map(LedgerEntryView::from).collect(),
        jobs: p
            .jobs
            .into_iter()
            .map(|(job, links)| JobView::detailed(job, links, None, retention_days))
            .collect(),
        next_cursor: p.next_cursor,
    }))
}
