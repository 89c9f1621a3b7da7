//! A payment that lands on a closed account (rule 14 of docs/design.md): a Stripe checkout
//! opened before the close and paid after it. A closed account takes no money, and its
//! credits could never be spent, so the payment is given back at once through Stripe's refund
//! API and recorded once, with the balance unmoved:
//!
//! - the refund's Idempotency-Key is derived from the payment alone, so a retried or replayed
//!   delivery that calls Stripe again gets the same refund, never a second one (after Stripe's
//!   keys expire, Stripe refuses a second refund of a charge refunded in full);
//! - the refund comes first and the record second: a delivery that fails between them is
//!   answered with an error, Stripe delivers it again, and that delivery finds the same refund
//!   and records it; once recorded, a delivery finds the payment record and calls no one;
//! - the record is the payment record, the row `purchase:<session>` (+credits) and the row
//!   `purchase_reversal:<payment>` (−credits, reason `account_closed_refund:<re_…>`) in one
//!   transaction that leaves the balance where it was, so Σ ledger = balance holds, and the
//!   `charge.refunded` our own refund makes finds the reversal made (`already_reversed`).

use sha2::{Digest, Sha256};

use super::App;
use super::payment_outcome::{WebhookError, WebhookOutcome};
use crate::adapters::payments::Stripe;
use crate::adapters::payments::event::PaidSession;
use crate::adapters::payments::stripe::Refunded;
use crate::clock;
use crate::domain::{Credits, LedgerKind};
use crate::store::closed_payments::RefundRecord;
use crate::store::schema::{LedgerItem, PaymentItem, reference};

/// The reason of the reversal row of a payment refunded because its account was closed.
pub const REASON_PREFIX: &str = "account_closed_refund:";

/// What the reversal row names when Stripe had refunded the charge already (no refund id).
const ALREADY_REFUNDED: &str = "already_refunded";

/// Stripe's Idempotency-Key of the refund of `payment_id`: the same for every delivery.
pub fn refund_key(payment_id: &str) -> String {
    let digest = Sha256::digest(format!("refund\n{payment_id}"));
    format!("atelier-refund-{}", hex::encode(digest))
}

/// Refunds `paid`, whose account is closed, and records it once.
pub(crate) async fn refund(
    app: &App,
    stripe: &Stripe,
    paid: &PaidSession,
) -> Result<WebhookOutcome, WebhookError> {
    let key = refund_key(&paid.payment_id);
    let refunded = stripe
        .client
        .refund(&paid.payment_id, paid.user.as_str(), &key)
        .await
        .map_err(|source| WebhookError::Refund {
            payment_id: paid.payment_id.clone(),
            source,
        })?;
    let refund = match refunded {
        Refunded::Now(r) => r.id,
        Refunded::Already => ALREADY_REFUNDED.to_owned(),
    };
    let now = clock::format(clock::now());
    let payment = PaymentItem {
        payment_id: paid.payment_id.clone(),
        user_id: paid.user.clone(),
        session_id: paid.session_id.clone(),
        pack: paid.pack.clone(),
        credits: paid.credits,
        created_at: now.clone(),
    };
    let mut bought = LedgerItem::new(
        &paid.user,
        reference::purchase(&paid.session_id),
        paid.credits,
        LedgerKind::Purchase,
        &now,
    );
    bought.reason = Some(format!("pack:{}", paid.pack));
    let mut given_back = LedgerItem::new(
        &paid.user,
        reference::purchase_reversal(&paid.payment_id),
        Credits::new(-paid.credits.get()),
        LedgerKind::PurchaseReversal,
        &now,
    );
    given_back.reason = Some(format!("{REASON_PREFIX}{refund}"));
    let record = app
        .store
        .record_refunded_payment(&payment, &bought, &given_back);
    match record.await? {
        RefundRecord::Recorded => {
            tracing::warn!(user_id = %paid.user, session_id = %paid.session_id, payment_id = %paid.payment_id, refund = %refund, credits = paid.credits.get(), "closed_account_payment_refunded");
            Ok(WebhookOutcome::Refunded { refund })
        }
        RefundRecord::AlreadyRecorded => Ok(WebhookOutcome::AlreadyGranted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refund_key_is_the_payments_own_and_fits_stripes_limit() {
        let a = refund_key("pi_test_a");
        assert_eq!(a, refund_key("pi_test_a"));
        assert_ne!(a, refund_key("pi_test_b"));
        assert!(a.len() <= 255, "{a}");
    }
}
