//! Buying credits: the packs, a Stripe Checkout, and the purchases the apps submit from the
//! App Store and Google Play.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A credit pack for sale.
#[derive(Debug, Serialize, ToSchema)]
pub struct PackView {
    pub id: String,
    pub credits: i64,
    /// The price in the currency's minor unit (e.g. cents).
    pub amount: i64,
    /// ISO 4217, lower case.
    pub currency: String,
    /// The App Store consumable that sells this pack in the iOS app, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_store_product_id: Option<String>,
    /// The Google Play one-time product that sells this pack in the Android app, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub google_play_product_id: Option<String>,
}

impl From<&atelier_shared::domain::Pack> for PackView {
    fn from(p: &atelier_shared::domain::Pack) -> PackView {
        PackView {
            id: p.id.to_string(),
            credits: p.credits.get(),
            amount: p.amount,
            currency: p.currency.clone(),
            app_store_product_id: p.app_store_product_id.clone(),
            google_play_product_id: p.google_play_product_id.clone(),
        }
    }
}

/// `POST /v1/purchases/apple` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AppleTransactionRequest {
    /// StoreKit 2's `Transaction.jwsRepresentation` (the `signedTransactionInfo` JWS), as is.
    #[schema(value_type = String, required = true, max_length = 12288)]
    pub signed_transaction: Option<String>,
}

/// A granted (or already granted) App Store transaction.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApplePurchaseView {
    /// The App Store's `transactionId`.
    pub transaction_id: String,
    /// The pack it bought.
    pub pack: String,
    /// The credits it granted.
    pub credits: i64,
    /// `granted`, or `already_granted` (submitted before by this user; nothing changed).
    pub outcome: &'static str,
}

impl From<atelier_shared::services::app_store::AppStorePurchase> for ApplePurchaseView {
    fn from(p: atelier_shared::services::app_store::AppStorePurchase) -> ApplePurchaseView {
        ApplePurchaseView {
            transaction_id: p.transaction_id,
            pack: p.pack,
            credits: p.credits.get(),
            outcome: grant_outcome(p.granted),
        }
    }
}

/// A store purchase's `outcome`.
fn grant_outcome(granted: bool) -> &'static str {
    if granted {
        "granted"
    } else {
        "already_granted"
    }
}

/// `POST /v1/purchases/google` body: what Google Play Billing's `Purchase` says.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GooglePurchaseRequest {
    /// The product bought (`Purchase.getProducts()`, one item): a pack's
    /// `google_play_product_id`.
    #[schema(value_type = String, required = true, max_length = 139, example = "starter_pack")]
    pub product_id: Option<String>,
    /// `Purchase.getPurchaseToken()`, as is.
    #[schema(value_type = String, required = true, max_length = 1024)]
    pub purchase_token: Option<String>,
}

/// A granted (or already granted) Google Play purchase.
#[derive(Debug, Serialize, ToSchema)]
pub struct GooglePurchaseView {
    /// Google Play's `orderId` (`GPA.…`).
    pub order_id: String,
    /// The pack it bought.
    pub pack: String,
    /// The credits it granted.
    pub credits: i64,
    /// `granted`, or `already_granted` (submitted before by this user; nothing changed).
    pub outcome: &'static str,
}

impl From<atelier_shared::services::google_play::GooglePlayPurchase> for GooglePurchaseView {
    fn from(p: atelier_shared::services::google_play::GooglePlayPurchase) -> GooglePurchaseView {
        GooglePurchaseView {
            order_id: p.order_id,
            pack: p.pack,
            credits: p.credits.get(),
            outcome: grant_outcome(p.granted),
        }
    }
}

/// The catalogue.
#[derive(Debug, Serialize, ToSchema)]
pub struct PackList {
    pub items: Vec<PackView>,
}

/// `POST /v1/checkout` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckoutRequest {
    /// A pack id from `GET /v1/packs`.
    #[schema(value_type = String, required = true, example = "starter")]
    pub pack: Option<String>,
    /// Where Stripe sends the payer after paying; must start with a configured return URL
    /// (default: the first one, with `?checkout=success`).
    #[schema(format = "uri")]
    pub success_url: Option<String>,
    /// Where Stripe sends the payer who cancels (default: `?checkout=cancel`).
    #[schema(format = "uri")]
    pub cancel_url: Option<String>,
}

/// A Checkout Session: send the payer to `url`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckoutView {
    pub id: String,
    #[schema(format = "uri")]
    pub url: String,
}

impl From<atelier_shared::services::payments::Checkout> for CheckoutView {
    fn from(c: atelier_shared::services::payments::Checkout) -> CheckoutView {
        CheckoutView {
            id: c.id,
            url: c.url,
        }
    }
}
