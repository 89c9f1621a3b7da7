//! The stores' notifications (Apple, Google Pub/Sub) and what a webhook did with an event.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /v1/webhooks/apple` body: an App Store Server Notification v2.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppleNotificationRequest {
    /// The notification's JWS, as Apple sent it.
    #[schema(value_type = String, required = true, max_length = 32768)]
    pub signed_payload: Option<String>,
}

/// `POST /v1/webhooks/google` body: a Pub/Sub push (`PushRequest`) of a Real-time Developer
/// Notification.
#[derive(Debug, Deserialize, ToSchema)]
pub struct GooglePushRequest {
    pub message: GooglePushMessage,
    /// The push subscription's name.
    pub subscription: Option<String>,
}

/// The Pub/Sub message of a push.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GooglePushMessage {
    /// The `DeveloperNotification` JSON, base64.
    pub data: String,
    pub message_id: String,
    #[schema(format = DateTime)]
    pub publish_time: Option<String>,
}

/// What the webhook did with an event.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookReceipt {
    /// `granted`, `already_granted`, `reversed`, `already_reversed`, `restored`,
    /// `already_restored`, `ignored`, `consumption_sent` (an App Store `CONSUMPTION_REQUEST`
    /// answered), `reversed_first` (a reversal of a purchase not granted yet, recorded: that
    /// purchase never grants), `purchase_reversed_first` (a Stripe purchase whose reversal
    /// came first: nothing granted) or `refunded` (a payment for a closed account, given back
    /// at once: nothing granted).
    pub outcome: &'static str,
    /// Credits added (negative: taken back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credits: Option<i64>,
    /// A reversal: credits it could not take back (the account is then on hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<i64>,
}

impl From<atelier_shared::services::payments::WebhookOutcome> for WebhookReceipt {
    fn from(o: atelier_shared::services::payments::WebhookOutcome) -> WebhookReceipt {
        use atelier_shared::services::payments::WebhookOutcome as W;
        let (outcome, credits, shortfall) = match o {
            W::Granted { credits } => ("granted", Some(credits.get()), None),
            W::AlreadyGranted => ("already_granted", None, None),
            W::Reversed { taken, shortfall } => {
                ("reversed", Some(-taken.get()), Some(shortfall.get()))
            }
            W::AlreadyReversed => ("already_reversed", None, None),
            W::ReversedFirst => ("reversed_first", None, None),
            W::PurchaseReversedFirst => ("purchase_reversed_first", None, None),
            W::Restored { credits } => ("restored", Some(credits.get()), None),
            W::AlreadyRestored => ("already_restored", None, None),
            W::Ignored { .. } => ("ignored", None, None),
            W::ConsumptionSent { .. } => ("consumption_sent", None, None),
            W::Refunded { .. } => ("refunded", None, None),
        };
        WebhookReceipt {
            outcome,
            credits,
            shortfall,
        }
    }
}
