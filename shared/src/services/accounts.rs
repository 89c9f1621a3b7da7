//! Accounts as the user sees them. The first authenticated call that needs the account
//! creates it. The signup grant goes only to a caller whose ID token carries a verified
//! address, once per user and once per address: such a first call creates the account with
//! it (one conditional transaction); an account created from a token without one starts at
//! 0, marked `signup_pending`, and its first call with a verified address gives the grant.
//! Either way the grant's ledger row is `grant:signup` (`attribute_not_exists`) and, in the
//! same transaction, the address's keyed hash is claimed in the signups table
//! (`attribute_not_exists`), so however many calls race, and whichever accounts they come
//! from (a user who deleted theirs and signed up again), each user and each address gets
//! the grant at most once. An account whose address had it is marked so: a state, not an
//! error.

use super::App;
use crate::clock;
use crate::domain::pricing::SIGNUP_GRANT;
use crate::domain::{Credits, EmailStatus, GrantReason, LedgerKind, Operator, UserId};
use crate::error::Error;
use crate::store::accounts::{Created, GrantOutcome, Opening, SignupGrant};
use crate::store::schema::{AccountItem, LedgerItem, reference};

/// The account, created on first use; with the signup grant when (or once) `email` is
/// verified and its address has not had it. One read when the account exists and owes
/// nothing.
pub async fn ensure_account(
    app: &App,
    user: &UserId,
    email: EmailStatus,
) -> Result<AccountItem, Error> {
    let grant = email.may_grant().then_some(SignupGrant {
        credits: SIGNUP_GRANT,
        address: email.address(),
        legacy: email.legacy_address(),
    });
    let account = match app.store.get_account(user).await? {
        Some(a) => a,
        None => {
            open_account(app, user, grant).await?;
            read_account(app, user).await?
        }
    };
    // A closed account is the record of a deletion: it never gets a grant again.
    let owed = account.signup_pending && account.closed_at.is_none();
    let Some(grant) = grant.filter(|_| owed) else {
        return Ok(account);
    };
    let now = clock::format(clock::now());
    match app.store.grant_pending_signup(user, grant, &now).await? {
        Created::Created => {
            tracing::info!(user_id = %user, credits = SIGNUP_GRANT.get(), "signup_granted");
        }
        Created::AddressUsed => {
            app.store.refuse_pending_signup(user).await?;
            tracing::info!(user_id = %user, "signup_address_used");
        }
        Created::Exists => {}
    }
    read_account(app, user).await
}

/// Creates the account: with the grant when it may have one, without (and not owing it) when
/// its address had it already.
async fn open_account(
    app: &App,
    user: &UserId,
    grant: Option<SignupGrant<'_>>,
) -> Result<(), Error> {
    let now = clock::format(clock::now());
    let opening = grant.map_or(Opening::Pending, Opening::WithGrant);
    let first = app.store.create_account(user, opening, &now).await?;
    let (created, credits) = if first == Created::AddressUsed {
        tracing::info!(user_id = %user, "signup_address_used");
        let again = app.store.create_account(user, Opening::AddressUsed, &now);
        (again.await?, 0)
    } else {
        (first, grant.map_or(0, |g| g.credits.get()))
    };
    if created == Created::Created {
        tracing::info!(user_id = %user, credits, "account_created");
    }
    Ok(())
}

/// Gives (`true`) or withdraws the owner's consent to tell the App Store, when they ask Apple
/// for a refund, how much of that purchase they used (docs/mobile.md); the account as it is
/// after. A closed account takes no new consent.
pub async fn set_consumption_consent(
    app: &App,
    user: &UserId,
    email: EmailStatus,
    consent: bool,
) -> Result<AccountItem, Error> {
    ensure_account(app, user, email).await?;
    let now = clock::format(clock::now());
    let since = consent.then_some(now.as_str());
    if !app.store.set_consumption_consent(user, since).await? {
        return Err(Error::AccountClosed);
    }
    tracing::info!(user_id = %user, consent, "consumption_consent_set");
    read_account(app, user).await
}

async fn read_account(app: &App, user: &UserId) -> Result<AccountItem, Error> {
    app.store
        .get_account(user)
        .await?
        .ok_or(Error::NotFound { what: "account" })
}

/// One page of the ledger, newest first.
pub async fn ledger_page(
    app: &App,
    user: &UserId,
    email: EmailStatus,
    limit: u16,
    cursor: Option<&str>,
) -> Result<(Vec<LedgerItem>, Option<String>), Error> {
    ensure_account(app, user, email).await?;
    app.store.ledger_page(user, limit, cursor).await
}

/// An operator's grant of credits.
#[derive(Debug, Clone)]
pub struct GrantRequest {
    pub credits: Credits,
    /// Names the grant: one ledger row per user and reason, ever.
    pub reason: GrantReason,
    /// Recorded on the ledger row.
    pub operator: Operator,
    /// Create the account (with its signup grant: the operator vouches for the user) when
    /// the user has none; otherwise an unknown user is refused, so a mistyped id does not
    /// become an account.
    pub create_account: bool,
}

/// What an operator's grant did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantResult {
    Granted,
    /// This grant (same reason, same amount) was made before: nothing changed.
    AlreadyGranted {
        operator: Option<String>,
    },
    /// A grant with this reason was made with another amount: refused, nothing changed.
    AmountDiffers {
        existing: Credits,
        operator: Option<String>,
    },
    /// No account for this user and `create_account` not asked: nothing written.
    UnknownUser,
}

/// An operator's grant, at most once per (user, reason): the ledger row's conditional put
/// decides, so a rerun, even a concurrent one, grants nothing more; a rerun asking for another
/// amount is refused with the amount that was granted.
pub async fn grant(app: &App, user: &UserId, req: &GrantRequest) -> Result<GrantResult, Error> {
    if req.create_account {
        ensure_account(app, user, EmailStatus::Vouched).await?;
    } else if app.store.get_account(user).await?.is_none() {
        return Ok(GrantResult::UnknownUser);
    }
    let mut row = LedgerItem::new(
        user,
        reference::grant(req.reason.as_str()),
        req.credits,
        LedgerKind::Grant,
        &clock::format(clock::now()),
    );
    row.reason = Some(req.reason.as_str().to_owned());
    row.operator = Some(req.operator.as_str().to_owned());
    let result = match app.store.grant(&row).await? {
        GrantOutcome::Granted => GrantResult::Granted,
        GrantOutcome::Exists(old) if old.amount == row.amount => GrantResult::AlreadyGranted {
            operator: old.operator,
        },
        GrantOutcome::Exists(old) => GrantResult::AmountDiffers {
            existing: old.amount,
            operator: old.operator,
        },
        GrantOutcome::AccountMissing => return Err(Error::NotFound { what: "account" }),
    };
    tracing::info!(user_id = %user, reason = %req.reason, operator = %req.operator, credits = row.amount.get(), outcome = ?result, "admin_grant");
    Ok(result)
}
