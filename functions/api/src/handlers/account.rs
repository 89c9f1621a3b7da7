//! The caller's account and ledger.

use atelier_shared::services::{App, accounts};
use axum::Json;
use axum::extract::State;

use crate::auth::{Caller, Email};
use crate::dto::{AccountView, LedgerEntryView, LedgerPage};
use crate::error::ApiError;
use crate::extract::Pagination;

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
