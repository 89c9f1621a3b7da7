//! Store purchases belong to the account that made them (rule 13 of docs/design.md). Each
//! account has an app account token (`GET /v1/account`'s `app_account_token`): a random
//! UUID stored on the account when it is created, so nothing about the user tells it. The app
//! buys with it (StoreKit's `appAccountToken`, Play Billing's `obfuscatedAccountId`), the
//! store signs it into the purchase, and only the account whose token it is may claim it.
//!
//! A purchase that names no account could be claimed by anyone who holds it (a leaked JWS
//! or purchase token is granted to whoever posts it first), so it is refused unless the
//! deployment accepts such purchases ([`UnboundPurchases::Accept`], for an app that cannot set
//! the token). Accounts created before tokens were stored keep the token they were given,
//! derived from their user id, so their purchases in flight stay theirs.

use sha2::{Digest, Sha256};

use super::App;
use crate::config::UnboundPurchases;
use crate::domain::UserId;
use crate::error::Error;
use crate::store::schema::AccountItem;

/// Whether the caller may claim a purchase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Bought with the caller's token, or unbound where the deployment accepts that.
    Allowed,
    /// Bought with another account's token.
    OtherAccount,
    /// Bought with no token, and the deployment refuses that.
    NotBound,
}

/// The token of `account`: the one stored at its creation, or, for an account created before
/// tokens were stored, the one it was given then ([`legacy_token`]).
pub fn app_account_token(account: &AccountItem) -> String {
    account
        .app_account_token
        .clone()
        .unwrap_or_else(|| legacy_token(&account.user_id))
}

/// The token accounts were given before tokens were stored: a UUID (version 8, RFC 9562)
/// from the SHA-256 of the user id.
fn legacy_token(user: &UserId) -> String {
    let digest = Sha256::digest(format!("atelier-app-account-token\n{user}"));
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Whether `user` may claim a purchase the store says was bought with `bound` (as given:
/// Apple's `appAccountToken`, Google's `obfuscatedExternalAccountId`).
pub(crate) async fn claim(app: &App, user: &UserId, bound: Option<&str>) -> Result<Claim, Error> {
    let Some(bound) = bound.filter(|b| !b.is_empty()) else {
        return Ok(match app.config.payments.unbound_store_purchases {
            UnboundPurchases::Accept => Claim::Allowed,
            UnboundPurchases::Refuse => Claim::NotBound,
        });
    };
    // An account that does not exist yet has given no token out: the purchase is another's.
    let account = app.store.get_account(user).await?;
    Ok(match account {
        Some(a) if bound.eq_ignore_ascii_case(&app_account_token(&a)) => Claim::Allowed,
        _ => Claim::OtherAccount,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_created_before_tokens_were_stored_keeps_its_derived_token() {
        let user = UserId::parse("user-a").unwrap_or_else(|| panic!("id"));
        let mut account = AccountItem {
            user_id: user.clone(),
            credits: crate::domain::Credits::new(0),
            in_flight: 0,
            rev: 1,
            created_at: "2026-01-01T00:00:00Z".to_owned(),
            signup_pending: false,
            signup_address_used: false,
            hold: None,
            closed_at: None,
            closed_by: None,
            deleted_at: None,
            consumption_consent_at: None,
            app_account_token: None,
        };
        let legacy = app_account_token(&account);
        assert_eq!(legacy, "ddd7a299-71a3-81ac-903b-405d9370af36");
        account.app_account_token = Some("4a1c4b0e-2f55-4d0c-9a43-0d1f3b6f7e21".to_owned());
        assert_eq!(
            app_account_token(&account),
            "4a1c4b0e-2f55-4d0c-9a43-0d1f3b6f7e21"
        );
    }
}
