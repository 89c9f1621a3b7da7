//! Buying credits in the iOS app (rule 13, "Store purchases are the same purchase"):
//!
//! - The app posts StoreKit 2's `signedTransactionInfo`. It is believed only when its chain
//!   leads to a configured Apple root and it names this app and store
//!   ([`crate::adapters::payments::apple`]); then the pack whose App Store product it is grants
//!   its credits exactly like a Stripe purchase: one transaction with the payment record
//!   `apple:<transactionId>` and the ledger row `purchase:apple:<transactionId>`, once.
//! - A transaction bound to an account (`appAccountToken`) is granted only to that account,
//!   and one bound to none is refused unless the deployment accepts it
//!   ([`super::purchase_binding`]); one already granted to another user is a conflict; a
//!   revoked one is never granted; none is granted to a closed account (the app keeps it
//!   unfinished: the user asks Apple for the refund).
//! - `REFUND` and `REVOKE` notifications take the credits back exactly like a Stripe refund
//!   (once, never below zero, a shortfall puts the account on hold). One that names a
//!   transaction not granted yet is recorded as its tombstone and answered `200`: the
//!   transaction, posted later, grants nothing (rule 13, "A reversal that arrives first").

use super::App;
use super::payments::{self, StoreGrant, WebhookOutcome};
use super::purchase_binding::{self, Claim};
use crate::adapters::metrics;
use crate::adapters::payments::apple::{AppleSettings, Transaction, VerifyError};
use crate::adapters::payments::apple_api::{self, ApiError, ConsumptionInfo, DeliveryStatus};
use crate::adapters::payments::event::ReversalCause;
use crate::domain::{Credits, UserId};
use crate::error::Error;

/// Why App Store data was not applied.
#[derive(Debug, thiserror::Error)]
pub enum AppStoreError {
    #[error("App Store purchases are not configured")]
    NotConfigured,
    #[error("the signed data was refused: {0}")]
    Verify(#[from] VerifyError),
    #[error("no pack is sold as the App Store product {product_id:?}")]
    UnknownProduct { product_id: String },
    #[error("the transaction was refunded or revoked")]
    Revoked,
    #[error("the transaction belongs to another account (appAccountToken)")]
    OtherAccount,
    /// Signed longer ago than the bound, and no App Store Server API to ask: the app posts
    /// it again as the store gives it now.
    #[error("transaction {transaction_id} was signed more than {hours} h ago")]
    Stale { transaction_id: String, hours: i64 },
    /// Get Transaction Info failed: the app posts it again.
    #[error("the App Store Server API did not answer for {transaction_id}")]
    Lookup {
        transaction_id: String,
        #[source]
        source: ApiError,
    },
    #[error("the transaction names no account (no appAccountToken)")]
    NotBound,
    #[error("the transaction was granted to another account")]
    GrantedToAnother,
    /// The App Store Server API could not take the consumption answer now: Apple resends.
    #[error("the consumption answer for {transaction_id} was not taken")]
    ConsumptionUnsent {
        transaction_id: String,
        #[source]
        source: ApiError,
    },
    #[error(transparent)]
    Store(#[from] Error),
}

/// What a submitted transaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppStorePurchase {
    pub transaction_id: String,
    pub pack: String,
    pub credits: Credits,
    /// False: this transaction was granted before (to this user); nothing changed.
    pub granted: bool,
}

fn settings(app: &App) -> Result<&AppleSettings, AppStoreError> {
    app.config
        .payments
        .apple
        .as_ref()
        .ok_or(AppStoreError::NotConfigured)
}

/// The payment id (and session id) of an App Store transaction.
fn payment_id(tx: &Transaction) -> String {
    format!("apple:{}", tx.transaction_id)
}

/// Verifies and grants one signed transaction for `user`; `now` is unix seconds.
pub async fn purchase(
    app: &App,
    user: &UserId,
    signed_transaction: &str,
    now: i64,
) -> Result<AppStorePurchase, AppStoreError> {
    let result = apply_purchase(app, user, signed_transaction, now).await;
    metrics::payment_event(purchase_label(&result));
    if matches!(result, Err(AppStoreError::Verify(_))) {
        metrics::verification_failed(metrics::Verification::AppStoreTransaction);
    }
    if let Err(e) = &result {
        tracing::warn!(user_id = %user, error = %crate::error::chain(e), "app_store_purchase_refused");
    }
    result
}

fn purchase_label(result: &Result<AppStorePurchase, AppStoreError>) -> &'static str {
    match result {
        Ok(p) if p.granted => "granted",
        Ok(_) => "duplicate",
        Err(AppStoreError::Verify(_)) => metrics::payment_outcome::APP_STORE_REFUSED,
        Err(e) => error_label(e),
    }
}

fn error_label(e: &AppStoreError) -> &'static str {
    match e {
        AppStoreError::NotConfigured => "not_configured",
        AppStoreError::Verify(_) => metrics::payment_outcome::APP_STORE_REFUSED,
        AppStoreError::UnknownProduct { .. } => "unknown_product",
        AppStoreError::Revoked
        | AppStoreError::OtherAccount
        | AppStoreError::NotBound
        | AppStoreError::Stale { .. } => "refused",
        AppStoreError::Lookup { .. } => "failed",
        AppStoreError::GrantedToAnother => "conflict",
        AppStoreError::ConsumptionUnsent { .. } => "consumption_unsent",
        AppStoreError::Store(_) => "failed",
    }
}

async fn apply_purchase(
    app: &App,
    user: &UserId,
    signed_transaction: &str,
    now: i64,
) -> Result<AppStorePurchase, AppStoreError> {
    let tx = settings(app)?.verify_transaction(signed_transaction, now)?;
    check_ids(&tx)?;
    let tx = fresh(app, tx, now).await?;
    if tx.revocation_date.is_some() {
        return Err(AppStoreError::Revoked);
    }
    match purchase_binding::claim(app, user, tx.app_account_token.as_deref()).await? {
        Claim::Allowed => {}
        Claim::OtherAccount => return Err(AppStoreError::OtherAccount),
        Claim::NotBound => return Err(AppStoreError::NotBound),
    }
    let pack = app
        .config
        .payments
        .packs
        .by_app_store_product(&tx.product_id)
        .ok_or_else(|| AppStoreError::UnknownProduct {
            product_id: tx.product_id.clone(),
        })?;
    let (grant, credits) =
        payments::grant_store_purchase(app, user, &payment_id(&tx), pack, tx.quantity).await?;
    let granted = match grant {
        StoreGrant::Granted => true,
        StoreGrant::AlreadyYours => false,
        StoreGrant::Another => return Err(AppStoreError::GrantedToAnother),
        StoreGrant::Reversed => return Err(AppStoreError::Revoked),
    };
    tracing::info!(user_id = %user, transaction_id = %tx.transaction_id, pack = %pack.id, granted, "app_store_purchase");
    Ok(AppStorePurchase {
        transaction_id: tx.transaction_id,
        pack: pack.id.to_string(),
        credits,
        granted,
    })
}

/// Apple's word on `tx` no older than the bound (rule 13): a transaction signed longer ago
/// (kept back while its refund came and went) is asked of the App Store Server API, whose
/// answer (freshly signed, a refund in it) replaces it; without the API it is refused.
async fn fresh(app: &App, tx: Transaction, now: i64) -> Result<Transaction, AppStoreError> {
    let max_age = app.config.payments.store_max_age_secs;
    if now - tx.signed_date.div_euclid(1000) <= max_age {
        return Ok(tx);
    }
    let id = tx.transaction_id;
    let Some(api) = app.app_store_api.as_ref() else {
        return Err(AppStoreError::Stale {
            transaction_id: id,
            hours: max_age / 3600,
        });
    };
    let signed = api
        .transaction_info(&id)
        .await
        .map_err(|source| AppStoreError::Lookup {
            transaction_id: id.clone(),
            source,
        })?
        .ok_or_else(|| VerifyError::Payload(format!("the App Store knows no transaction {id}")))?;
    let now_tx = settings(app)?.verify_transaction(&signed, now)?;
    if now_tx.transaction_id != id {
        return Err(VerifyError::Payload(
            "Get Transaction Info named another transaction".to_owned(),
        )
        .into());
    }
    tracing::info!(transaction_id = %id, revoked = now_tx.revocation_date.is_some(), "app_store_transaction_looked_up");
    Ok(now_tx)
}

/// The transaction id becomes a key: digits and a few separators, bounded; a sane quantity.
fn check_ids(tx: &Transaction) -> Result<(), AppStoreError> {
    if !payments::store_id_ok(&tx.transaction_id) {
        return Err(VerifyError::Payload("transactionId is not an id".to_owned()).into());
    }
    if !(1..=payments::MAX_STORE_QUANTITY).contains(&tx.quantity) {
        return Err(VerifyError::Payload(format!("quantity {} out of range", tx.quantity)).into());
    }
    Ok(())
}

/// Verifies and applies one App Store Server Notification v2; `now` is unix seconds.
pub async fn notification(
    app: &App,
    signed_payload: &str,
    now: i64,
) -> Result<WebhookOutcome, AppStoreError> {
    let result = apply_notification(app, signed_payload, now).await;
    metrics::payment_event(match &result {
        Ok(outcome) => payments::store_notification_label(outcome),
        Err(e) => error_label(e),
    });
    if matches!(result, Err(AppStoreError::Verify(_))) {
        metrics::verification_failed(metrics::Verification::AppStoreNotification);
    }
    if let Err(e) = &result {
        tracing::warn!(error = %crate::error::chain(e), "app_store_notification_refused");
    }
    result
}

async fn apply_notification(
    app: &App,
    signed_payload: &str,
    now: i64,
) -> Result<WebhookOutcome, AppStoreError> {
    let n = settings(app)?.verify_notification(signed_payload, now)?;
    let kind = n.notification_type.clone();
    if kind == CONSUMPTION_REQUEST {
        let tx = n
            .transaction
            .ok_or_else(|| VerifyError::Payload(format!("{kind} without signedTransactionInfo")))?;
        check_ids(&tx)?;
        return answer_consumption(app, kind, &n.notification_uuid, &tx).await;
    }
    if !matches!(kind.as_str(), "REFUND" | "REVOKE") {
        tracing::info!(notification_uuid = %n.notification_uuid, kind = %kind, "app_store_notification_ignored");
        return Ok(WebhookOutcome::Ignored {
            kind,
            why: "not a refund or revocation",
        });
    }
    let tx = n
        .transaction
        .ok_or_else(|| VerifyError::Payload(format!("{kind} without signedTransactionInfo")))?;
    check_ids(&tx)?;
    let cause = ReversalCause::AppStore {
        kind,
        notification: n.notification_uuid.clone(),
    };
    let evidence = serde_json::json!({
        "notificationUUID": n.notification_uuid, "notificationType": n.notification_type,
        "subtype": n.subtype, "transactionId": tx.transaction_id, "productId": tx.product_id,
        "appAccountToken": tx.app_account_token, "quantity": tx.quantity,
        "revocationDate": tx.revocation_date, "signedDate": tx.signed_date,
    });
    let outcome = payments::reverse_or_tombstone(app, &payment_id(&tx), &cause, &evidence).await?;
    tracing::info!(notification_uuid = %n.notification_uuid, transaction_id = %tx.transaction_id, outcome = ?outcome, "app_store_notification_applied");
    Ok(outcome)
}

/// Apple's notification type asking what the customer did with a purchase they want refunded.
const CONSUMPTION_REQUEST: &str = "CONSUMPTION_REQUEST";

/// Answers a `CONSUMPTION_REQUEST` (the customer asked Apple to refund `tx`): when the
/// operator configured the App Store Server API and the account that got the purchase
/// consented, Apple is told the share of it that is spent; otherwise nothing is sent and
/// Apple decides without us. A failure Apple's retry can mend refuses the notification.
async fn answer_consumption(
    app: &App,
    kind: String,
    notification: &str,
    tx: &Transaction,
) -> Result<WebhookOutcome, AppStoreError> {
    let ignored = |why| Ok(WebhookOutcome::Ignored { kind, why });
    let Some(api) = app.app_store_api.as_ref() else {
        return ignored("consumption answers are not configured");
    };
    let Some(payment) = app.store.get_payment(&payment_id(tx)).await? else {
        return ignored("the transaction was never granted");
    };
    let account = app.store.get_account(&payment.user_id).await?;
    // A closed account's owner can no longer withdraw their consent: it ends with the account.
    let consented = |a: &crate::store::schema::AccountItem| {
        a.consumption_consent_at.is_some() && a.closed_at.is_none()
    };
    let Some(account) = account.filter(consented) else {
        tracing::info!(notification_uuid = %notification, transaction_id = %tx.transaction_id, "app_store_consumption_not_consented");
        return ignored("the customer did not consent to share consumption");
    };
    let info = ConsumptionInfo {
        customer_consented: true,
        consumption_percentage: apple_api::consumed_share(
            payment.credits.get(),
            account.credits.get(),
        ),
        delivery_status: DeliveryStatus::Delivered,
        sample_content_provided: true,
    };
    match api.send_consumption(&tx.transaction_id, &info).await {
        Ok(()) => {}
        Err(e) if e.retryable() => {
            return Err(AppStoreError::ConsumptionUnsent {
                transaction_id: tx.transaction_id.clone(),
                source: e,
            });
        }
        Err(e) => {
            tracing::error!(notification_uuid = %notification, transaction_id = %tx.transaction_id, error = %crate::error::chain(&e), "app_store_consumption_refused");
            return ignored("the App Store refused the consumption answer");
        }
    }
    let percentage = info.consumption_percentage;
    tracing::info!(notification_uuid = %notification, transaction_id = %tx.transaction_id, user_id = %payment.user_id, percentage, "app_store_consumption_sent");
    Ok(WebhookOutcome::ConsumptionSent { percentage })
}
