//! Accounts as the user sees them. The first authenticated call that needs the account
//! creates it with the signup grant, exactly once (the conditional transaction decides).

use super::App;
use crate::clock;
use crate::domain::{Credits, UserId};
use crate::error::Error;
use crate::pricing::SIGNUP_GRANT;
use crate::store::accounts::GrantOutcome;
use crate::store::schema::{AccountItem, LedgerItem};

/// The account, created on first use.
pub async fn ensure_account(app: &App, user: &UserId) -> Result<AccountItem, Error> {
    if let Some(a) = app.store.get_account(user).await? {
        return Ok(a);
    }
    if app
        .store
        .create_account(user, SIGNUP_GRANT, &clock::format(clock::now()))
        .await?
    {
        tracing::info!(user_id = %user, credits = SIGNUP_GRANT.get(), "account_created");
    }
    app.store
        .get_account(user)
        .await?
        .ok_or(Error::NotFound { what: "account" })
}

/// One page of the ledger, newest first.
pub async fn ledger_page(
    app: &App,
    user: &UserId,
    limit: u16,
    cursor: Option<&str>,
) -> Result<(Vec<LedgerItem>, Option<String>), Error> {
    ensure_account(app, user).await?;
    app.store.ledger_page(user, limit, cursor).await
}

/// An admin grant, idempotent per reason; creates the account first if needed.
pub async fn grant(
    app: &App,
    user: &UserId,
    credits: Credits,
    reason: &str,
) -> Result<GrantOutcome, Error> {
    ensure_account(app, user).await?;
    app.store
        .grant(user, credits, reason, &clock::format(clock::now()))
        .await
}
