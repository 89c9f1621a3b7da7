//! Granting a paid purchase once, from Stripe or an app store, and the app stores' own checks.

use crate::adapters::metrics;
use crate::adapters::payments::event::PaidSession;
use crate::clock;
use crate::domain::{Credits, EmailStatus, LedgerKind, Pack, UserId};
use crate::error::Error;
use crate::services::App;
use crate::services::accounts::ensure_account;
use crate::services::payment_outcome::WebhookOutcome;
use crate::store::payments::PurchaseOutcome;
use crate::store::schema::{LedgerItem, PaymentItem, reference};

pub(crate) async fn purchase(app: &App, paid: &PaidSession) -> Result<WebhookOutcome, Error> {
    let now = clock::format(clock::now());
    let payment = PaymentItem {
        payment_id: paid.payment_id.clone(),
        user_id: paid.user.clone(),
        session_id: paid.session_id.clone(),
        pack: paid.pack.clone(),
        credits: paid.credits,
        created_at: now.clone(),
    };
    let mut row = LedgerItem::new(
        &paid.user,
        reference::purchase(&paid.session_id),
        paid.credits,
        LedgerKind::Purchase,
        &now,
    );
    row.reason = Some(format!("pack:{}", paid.pack));
    // At most two rounds: the second only after creating a missing account.
    for _ in 0..2 {
        match app.store.purchase(&payment, &row).await? {
            PurchaseOutcome::Granted => {
                tracing::info!(user_id = %paid.user, session_id = %paid.session_id, payment_id = %paid.payment_id, credits = paid.credits.get(), "purchase_granted");
                if let Some(pack) = app.config.payments.packs.get(&paid.pack) {
                    metrics::purchased(&paid.pack, paid.credits, pack.amount, &pack.currency);
                }
                return Ok(WebhookOutcome::Granted {
                    credits: paid.credits,
                });
            }
            PurchaseOutcome::AlreadyGranted => return Ok(WebhookOutcome::AlreadyGranted),
            PurchaseOutcome::Reversed => {
                tracing::warn!(user_id = %paid.user, payment_id = %paid.payment_id, "purchase_reversed_first");
                return Ok(WebhookOutcome::PurchaseReversedFirst);
            }
            PurchaseOutcome::AccountClosed => return Err(Error::AccountClosed),
            PurchaseOutcome::AccountMissing => {
                ensure_account(app, &paid.user, EmailStatus::Unverified).await?;
            }
        }
    }
    Err(Error::NotFound { what: "account" })
}

/// Most items one store purchase may carry (StoreKit's and Google Play's `quantity`).
pub(crate) const MAX_STORE_QUANTITY: i64 = 10;

/// What granting a purchase an app store vouched for (App Store, Google Play) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreGrant {
    Granted,
    /// Granted before to the same user: nothing changed.
    AlreadyYours,
    /// Granted before to another user: nothing changed.
    Another,
    /// Its reversal arrived first (a tombstone): nothing granted.
    Reversed,
}

/// Grants `quantity` of `pack` to `user` as the payment `payment_id` (`apple:…`, `google:…`),
/// once: the Stripe path with the payment id as the session id, then whose it was when it
/// was granted before.
pub(crate) async fn grant_store_purchase(
    app: &App,
    user: &UserId,
    payment_id: &str,
    pack: &Pack,
    quantity: i64,
) -> Result<(StoreGrant, Credits), Error> {
    let credits = Credits::new(pack.credits.get() * quantity);
    let paid = PaidSession {
        session_id: payment_id.to_owned(),
        payment_id: payment_id.to_owned(),
        user: user.clone(),
        pack: pack.id.to_string(),
        credits,
    };
    let grant = match purchase(app, &paid).await? {
        WebhookOutcome::Granted { .. } => StoreGrant::Granted,
        WebhookOutcome::PurchaseReversedFirst => StoreGrant::Reversed,
        _ => {
            let owner = app.store.get_payment(payment_id).await?.map(|p| p.user_id);
            if owner.as_ref() == Some(user) {
                StoreGrant::AlreadyYours
            } else {
                StoreGrant::Another
            }
        }
    };
    Ok((grant, credits))
}

/// The `Outcome` dimension of a store's notification applied (App Store, Google Play).
pub(crate) fn store_notification_label(outcome: &WebhookOutcome) -> &'static str {
    match outcome {
        WebhookOutcome::Reversed { .. } => metrics::payment_outcome::REVERSED,
        WebhookOutcome::ReversedFirst => metrics::payment_outcome::REVERSED_FIRST,
        WebhookOutcome::Ignored { .. } => "ignored",
        WebhookOutcome::ConsumptionSent { .. } => "consumption_sent",
        _ => "duplicate",
    }
}

/// Whether a store's id may become part of a key: 1-64 letters, digits, `-`, `_`, `.`.
pub(crate) fn store_id_ok(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}
