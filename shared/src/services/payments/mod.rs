//! Buying credits (the money rules of docs/design.md, "Purchases"):
//!
//! - A checkout creates a Stripe Checkout Session bound to the user and the pack's credits;
//!   our Idempotency-Key, made unique per user, is Stripe's, so a retry gets the same session
//!   (`replayed`) and a different request under the same key is a conflict.
//! - A webhook is believed only with a valid signature. A paid session grants its credits in
//!   one transaction with the row `purchase:<session>` and the payment record, once.
//! - A refund or dispute takes the credits back in one transaction with the row
//!   `purchase_reversal:<payment>` (once per payment, whichever comes first), never below a
//!   zero balance: what was already spent is recorded as the row's `shortfall` and the
//!   account is put on hold (new submits refused) until an operator releases it.
//! - A won dispute gives back what its reversal took (`reversal_restored:<payment>`) and
//!   lifts the hold that reversal set, unless another reversal's shortfall is still owed.
//! - A refund or dispute that names a payment not recorded yet (Stripe does not order its
//!   events) is recorded as a tombstone of that payment and answered `200`; the purchase,
//!   when it lands, grants nothing (rule 13, "A reversal that arrives first"). A won dispute
//!   ahead of its reversal is refused as retryable: Stripe delivers it again later.

mod checkout;
mod purchase;
mod reversal;
mod webhook;

pub use super::payment_outcome::{WebhookError, WebhookOutcome};
pub use checkout::{Checkout, CheckoutSpec, MAX_URL_LEN, checkout};
pub(crate) use purchase::{
    MAX_STORE_QUANTITY, StoreGrant, grant_store_purchase, store_id_ok, store_notification_label,
};
pub(crate) use reversal::reverse_or_tombstone;
pub use reversal::{release_hold, reversal_split};
pub use webhook::webhook;
