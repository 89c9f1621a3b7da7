//! What a payment webhook did, or why it was not applied: shared by the Stripe webhook
//! (`payments`) and the closed-account refund (`closed_payments`), which both answer with it.

use crate::adapters::payments::event::EventError;
use crate::adapters::payments::signature::SignatureError;
use crate::adapters::payments::stripe::StripeError;
use crate::domain::Credits;
use crate::error::Error;

/// What a verified event did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookOutcome {
    Granted {
        credits: Credits,
    },
    AlreadyGranted,
    Reversed {
        taken: Credits,
        shortfall: Credits,
    },
    AlreadyReversed,
    /// A reversal of a payment not recorded yet: its tombstone is written (or was), so the
    /// purchase grants nothing when it lands.
    ReversedFirst,
    /// A purchase whose reversal arrived first: nothing granted.
    PurchaseReversedFirst,
    Restored {
        credits: Credits,
    },
    AlreadyRestored,
    Ignored {
        kind: String,
        why: &'static str,
    },
    /// A `CONSUMPTION_REQUEST` answered: Apple was told what share of the purchase was used.
    ConsumptionSent {
        percentage: u32,
    },
    /// A payment for a closed account, refunded at once and recorded with nothing granted
    /// (rule 14); `refund` is Stripe's refund id.
    Refunded {
        refund: String,
    },
}

/// Why an event was not applied.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("buying credits is not configured")]
    NotConfigured,
    #[error("signature refused: {0}")]
    Signature(#[from] SignatureError),
    #[error(transparent)]
    Malformed(#[from] EventError),
    /// A refund or dispute of a payment whose purchase has not landed yet: retry later.
    #[error("payment {payment_id} is not recorded yet")]
    NotYetRecorded { payment_id: String },
    /// A payment for a closed account could not be refunded now: Stripe delivers it again.
    #[error("refunding payment {payment_id} failed")]
    Refund {
        payment_id: String,
        #[source]
        source: StripeError,
    },
    #[error(transparent)]
    Store(#[from] Error),
}
