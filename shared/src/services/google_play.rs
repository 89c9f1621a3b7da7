//! Buying credits in the Android app (rule 13, "Store purchases are the same purchase"):
//!
//! - The app posts the product id and purchase token Google Play Billing gave it. Only what
//!   the Android Publisher API says of that token is believed
//!   ([`crate::adapters::payments::google`]): a purchased (not pending, not cancelled) one-time
//!   product of this app, sold as a pack, grants its credits exactly like a Stripe purchase:
//!   one transaction with the payment record `google:<orderId>` and the ledger row
//!   `purchase:google:<orderId>`, once. Then the purchase is consumed (which acknowledges it:
//!   Google refunds one unacknowledged for three days), so the pack can be bought again.
//! - A purchase bound to an account (`obfuscatedAccountId`, the same token as the App Store's
//!   `appAccountToken`) is granted only to that account, and one bound to none is refused
//!   unless the deployment accepts it ([`super::purchase_binding`]); one granted to another
//!   user is a conflict. None is granted to a closed account, and a refused purchase is never
//!   consumed: Google refunds it, unacknowledged, after three days.
//! - A Real-time Developer Notification is believed only with Pub/Sub's OIDC token; a voided
//!   one-time purchase takes the credits back exactly like a Stripe refund (once, never below
//!   zero, a shortfall puts the account on hold) once Google confirms it voided. One that
//!   names an order not granted yet is recorded as its tombstone and answered `200`: the
//!   purchase, posted later, grants nothing (rule 13, "A reversal that arrives first").

use super::App;
use super::payments::{self, StoreGrant, WebhookOutcome};
use super::purchase_binding::{self, Claim};
use crate::adapters::metrics;
use crate::adapters::payments::event::ReversalCause;
use crate::adapters::payments::google::{
    GooglePlay, NotificationError, ONE_TIME_PRODUCT, ProductPurchase, PublisherError,
    PushAuthError, PushRequest, VOIDED_WINDOW_MILLIS,
};
use crate::clock;
use crate::domain::{Credits, UserId};
use crate::error::Error;

/// How long before a notification's event time a void is looked for in Google's list.
const CONFIRM_LOOKBACK_MILLIS: i64 = 86_400_000;

/// Why a Google Play purchase or notification was not applied.
#[derive(Debug, thiserror::Error)]
pub enum GooglePlayError {
    #[error("Google Play purchases are not configured")]
    NotConfigured,
    #[error("no pack is sold as the Google Play product {product_id:?}")]
    UnknownProduct { product_id: String },
    #[error("Google Play does not vouch for this purchase")]
    NoSuchPurchase(#[source] PublisherError),
    #[error("Google Play's purchase is unusable: {0}")]
    Unusable(String),
    #[error("the purchase is pending (not paid yet)")]
    Pending,
    #[error("the purchase was cancelled")]
    Cancelled,
    /// Older than Google's voided purchases reach back: whether it was refunded is unknown.
    #[error("the purchase is too old to confirm it was not refunded")]
    Stale,
    #[error("the purchase belongs to another account (obfuscatedAccountId)")]
    OtherAccount,
    #[error("the purchase names no account (no obfuscatedAccountId)")]
    NotBound,
    #[error("the purchase was granted to another account")]
    GrantedToAnother,
    #[error("the Android Publisher API failed")]
    Provider(#[source] PublisherError),
    #[error("the push was refused")]
    PushAuth(#[from] PushAuthError),
    #[error("the push is not a notification for this app")]
    Notification(#[from] NotificationError),
    #[error(transparent)]
    Store(#[from] Error),
}

/// What a submitted purchase did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GooglePlayPurchase {
    pub order_id: String,
    pub pack: String,
    pub credits: Credits,
    /// False: this order was granted before (to this user); nothing changed.
    pub granted: bool,
}

fn play(app: &App) -> Result<&GooglePlay, GooglePlayError> {
    app.google_play
        .as_deref()
        .ok_or(GooglePlayError::NotConfigured)
}

/// The payment id (and session id) of a Google Play order.
fn payment_id(order_id: &str) -> String {
    format!("google:{order_id}")
}

/// Verifies `token` with Google Play, grants its pack to `user` once, and consumes it.
pub async fn purchase(
    app: &App,
    user: &UserId,
    product_id: &str,
    token: &str,
) -> Result<GooglePlayPurchase, GooglePlayError> {
    let result = apply_purchase(app, user, product_id, token).await;
    metrics::payment_event(match &result {
        Ok(p) if p.granted => "granted",
        Ok(_) => "duplicate",
        Err(e) => error_label(e),
    });
    if let Err(e) = &result {
        tracing::warn!(user_id = %user, product_id, error = %crate::error::chain(e), "google_play_purchase_refused");
    }
    result
}

fn error_label(e: &GooglePlayError) -> &'static str {
    match e {
        GooglePlayError::NotConfigured => "not_configured",
        GooglePlayError::UnknownProduct { .. } => "unknown_product",
        GooglePlayError::NoSuchPurchase(_) | GooglePlayError::Unusable(_) => {
            metrics::payment_outcome::GOOGLE_PLAY_REFUSED
        }
        GooglePlayError::Pending
        | GooglePlayError::Cancelled
        | GooglePlayError::Stale
        | GooglePlayError::OtherAccount
        | GooglePlayError::NotBound => "refused",
        GooglePlayError::GrantedToAnother => "conflict",
        GooglePlayError::PushAuth(_) => metrics::payment_outcome::SIGNATURE_INVALID,
        GooglePlayError::Notification(_) => "malformed",
        GooglePlayError::Provider(_) | GooglePlayError::Store(_) => "failed",
    }
}

/// Google's word on a purchase, with what makes it grant nothing refused.
async fn checked_purchase(
    play: &GooglePlay,
    product_id: &str,
    token: &str,
) -> Result<(ProductPurchase, String), GooglePlayError> {
    let p = play
        .product_purchase(product_id, token)
        .await
        .map_err(|e| match e {
            e @ PublisherError::NoSuchPurchase(_) => GooglePlayError::NoSuchPurchase(e),
            e => GooglePlayError::Provider(e),
        })?;
    match p.purchase_state {
        0 => {}
        1 => return Err(GooglePlayError::Cancelled),
        2 => return Err(GooglePlayError::Pending),
        s => return Err(GooglePlayError::Unusable(format!("purchaseState {s}"))),
    }
    let order_id = p
        .order_id
        .clone()
        .filter(|o| payments::store_id_ok(o))
        .ok_or_else(|| GooglePlayError::Unusable("no usable orderId".to_owned()))?;
    if !(1..=payments::MAX_STORE_QUANTITY).contains(&p.quantity) {
        return Err(GooglePlayError::Unusable(format!(
            "quantity {} out of range",
            p.quantity
        )));
    }
    Ok((p, order_id))
}

async fn apply_purchase(
    app: &App,
    user: &UserId,
    product_id: &str,
    token: &str,
) -> Result<GooglePlayPurchase, GooglePlayError> {
    let play = play(app)?;
    // Unknown products are refused before Google is asked anything.
    let pack = app
        .config
        .payments
        .packs
        .by_google_play_product(product_id)
        .ok_or_else(|| GooglePlayError::UnknownProduct {
            product_id: product_id.to_owned(),
        })?;
    let (p, order_id) = checked_purchase(play, product_id, token).await?;
    let bound = p.obfuscated_external_account_id.as_deref();
    match purchase_binding::claim(app, user, bound).await? {
        Claim::Allowed => {}
        Claim::OtherAccount => return Err(GooglePlayError::OtherAccount),
        Claim::NotBound => return Err(GooglePlayError::NotBound),
    }
    check_old_purchase(app, play, &p, &order_id).await?;
    let (grant, credits) =
        payments::grant_store_purchase(app, user, &payment_id(&order_id), pack, p.quantity).await?;
    let granted = match grant {
        StoreGrant::Granted => true,
        StoreGrant::AlreadyYours => false,
        StoreGrant::Another => return Err(GooglePlayError::GrantedToAnother),
        StoreGrant::Reversed => return Err(GooglePlayError::Cancelled),
    };
    tracing::info!(user_id = %user, order_id = %order_id, pack = %pack.id, granted, "google_play_purchase");
    if p.consumption_state != 1 {
        consume(play, product_id, token).await?;
    }
    Ok(GooglePlayPurchase {
        order_id,
        pack: pack.id.to_string(),
        credits,
        granted,
    })
}

/// A purchase older than the bound (rule 13) is looked for in Google's voided purchases
/// (`purchaseState` alone may not show a refund); one older than that list reaches back is
/// refused as stale.
async fn check_old_purchase(
    app: &App,
    play: &GooglePlay,
    p: &ProductPurchase,
    order_id: &str,
) -> Result<(), GooglePlayError> {
    let now_ms = clock::now().unix_timestamp() * 1000;
    let bought = p.purchase_time_millis.unwrap_or(0);
    let age = now_ms - bought;
    if age <= app.config.payments.store_max_age_secs * 1000 {
        return Ok(());
    }
    if age > VOIDED_WINDOW_MILLIS {
        return Err(GooglePlayError::Stale);
    }
    let voided = play
        .voided_order(order_id, bought, now_ms)
        .await
        .map_err(GooglePlayError::Provider)?;
    if voided.is_some() {
        tracing::warn!(order_id, "google_play_old_purchase_voided");
        return Err(GooglePlayError::Cancelled);
    }
    Ok(())
}

/// Consumes a granted purchase. Refused, it may have been consumed by a concurrent
/// submission of the same token: Google is asked again. Failing, the grant stands and the
/// answer is a provider error, so the app posts it again (already granted) and that consumes
/// it.
async fn consume(play: &GooglePlay, product_id: &str, token: &str) -> Result<(), GooglePlayError> {
    match play.consume(product_id, token).await {
        Ok(()) => {
            tracing::info!(product_id, "google_play_consumed");
            Ok(())
        }
        Err(PublisherError::NoSuchPurchase(status)) => {
            let again = play
                .product_purchase(product_id, token)
                .await
                .map_err(GooglePlayError::Provider)?;
            if again.consumption_state == 1 {
                Ok(())
            } else {
                Err(GooglePlayError::Provider(PublisherError::Refused(status)))
            }
        }
        Err(e) => Err(GooglePlayError::Provider(e)),
    }
}

/// Verifies and applies one Pub/Sub push of a Real-time Developer Notification.
pub async fn notification(
    app: &App,
    authorization: Option<&str>,
    body: &[u8],
) -> Result<WebhookOutcome, GooglePlayError> {
    let result = apply_notification(app, authorization, body).await;
    metrics::payment_event(match &result {
        Ok(outcome) => payments::store_notification_label(outcome),
        Err(e) => error_label(e),
    });
    if let Err(e) = &result {
        tracing::warn!(error = %crate::error::chain(e), "google_play_notification_refused");
    }
    result
}

async fn apply_notification(
    app: &App,
    authorization: Option<&str>,
    body: &[u8],
) -> Result<WebhookOutcome, GooglePlayError> {
    let play = play(app)?;
    // The token first: nothing of an unauthenticated body is read.
    play.verify_push(authorization).await?;
    let push: PushRequest = serde_json::from_slice(body).map_err(|_| NotificationError::Data)?;
    let message_id = push.message.message_id.clone();
    let n = push.message.notification(&play.settings.package_name)?;
    let voided = match n.voided_purchase_notification {
        Some(v) if v.product_type == ONE_TIME_PRODUCT => v,
        other => {
            let why = if other.is_some() {
                "a subscription (none are sold)"
            } else {
                "not a voided purchase"
            };
            tracing::info!(message_id = %message_id, why, "google_play_notification_ignored");
            return Ok(WebhookOutcome::Ignored {
                kind: "google_play".to_owned(),
                why,
            });
        }
    };
    if !payments::store_id_ok(&voided.order_id) {
        return Err(NotificationError::Data.into());
    }
    // The push token is not bound to its body: only Google's own list is believed.
    let now_ms = clock::now().unix_timestamp() * 1000;
    let since = n.event_time_millis.unwrap_or(now_ms) - CONFIRM_LOOKBACK_MILLIS;
    let Some(confirmed) = play
        .voided_order(&voided.order_id, since, now_ms)
        .await
        .map_err(GooglePlayError::Provider)?
    else {
        tracing::warn!(message_id = %message_id, order_id = %voided.order_id, "google_play_void_unconfirmed");
        return Ok(WebhookOutcome::Ignored {
            kind: "google_play".to_owned(),
            why: "Google does not report this order voided",
        });
    };
    let cause = ReversalCause::GooglePlayVoided {
        message_id: message_id.clone(),
    };
    let evidence = serde_json::json!({ "messageId": message_id, "voided": confirmed });
    let outcome =
        payments::reverse_or_tombstone(app, &payment_id(&voided.order_id), &cause, &evidence)
            .await?;
    tracing::info!(message_id = %message_id, order_id = %voided.order_id, outcome = ?outcome, "google_play_notification_applied");
    Ok(outcome)
}
