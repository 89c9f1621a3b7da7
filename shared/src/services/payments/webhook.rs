//! Stripe's webhook: verified, then applied as a purchase, a reversal or a restore.

use crate::adapters::metrics;
use crate::adapters::payments::event::PaymentEvent;
use crate::adapters::payments::signature;
use crate::error::Error;
use crate::services::App;
use crate::services::closed_payments;
use crate::services::payment_outcome::{WebhookError, WebhookOutcome};

use super::purchase::purchase;
use super::reversal::{restore, reverse_or_tombstone};

/// Verifies and applies one webhook delivery. `now` is unix seconds. Every delivery is
/// counted by outcome, so a wrong webhook secret (paid credits that never arrive) alarms.
pub async fn webhook(
    app: &App,
    payload: &[u8],
    signature_header: Option<&str>,
    now: i64,
) -> Result<WebhookOutcome, WebhookError> {
    let result = apply_webhook(app, payload, signature_header, now).await;
    metrics::payment_event(outcome_label(&result));
    result
}

/// The `Outcome` dimension of a handled delivery.
fn outcome_label(result: &Result<WebhookOutcome, WebhookError>) -> &'static str {
    match result {
        Ok(WebhookOutcome::Granted { .. }) => "granted",
        Ok(WebhookOutcome::Reversed { .. }) => metrics::payment_outcome::REVERSED,
        Ok(WebhookOutcome::ReversedFirst) => metrics::payment_outcome::REVERSED_FIRST,
        Ok(WebhookOutcome::PurchaseReversedFirst) => "refused",
        Ok(WebhookOutcome::Restored { .. }) => "restored",
        Ok(WebhookOutcome::Ignored { .. }) => "ignored",
        Ok(WebhookOutcome::ConsumptionSent { .. }) => "consumption_sent",
        Ok(WebhookOutcome::Refunded { .. }) => "refunded_account_closed",
        Ok(
            WebhookOutcome::AlreadyGranted
            | WebhookOutcome::AlreadyReversed
            | WebhookOutcome::AlreadyRestored,
        ) => "duplicate",
        Err(WebhookError::NotConfigured) => "not_configured",
        Err(WebhookError::Signature(_)) => metrics::payment_outcome::SIGNATURE_INVALID,
        Err(WebhookError::Malformed(_)) => "malformed",
        Err(WebhookError::NotYetRecorded { .. }) => "not_yet_recorded",
        Err(WebhookError::Refund { .. } | WebhookError::Store(_)) => "failed",
    }
}

async fn apply_webhook(
    app: &App,
    payload: &[u8],
    signature_header: Option<&str>,
    now: i64,
) -> Result<WebhookOutcome, WebhookError> {
    let stripe = app.stripe.as_ref().ok_or(WebhookError::NotConfigured)?;
    signature::verify(
        payload,
        signature_header,
        stripe.webhook_secret(),
        now,
        signature::DEFAULT_TOLERANCE_SECS,
    )?;
    let (event_id, event) = PaymentEvent::parse(payload)?;
    let outcome = match event {
        PaymentEvent::Paid(paid) => match purchase(app, &paid).await {
            Err(Error::AccountClosed) => closed_payments::refund(app, stripe, &paid).await?,
            other => other?,
        },
        PaymentEvent::Reversed { payment_id, cause } => {
            let evidence = serde_json::json!({ "event": event_id, "reason": cause.reason() });
            reverse_or_tombstone(app, &payment_id, &cause, &evidence).await?
        }
        PaymentEvent::DisputeWon {
            payment_id,
            dispute_id,
        } => restore(app, &payment_id, &dispute_id).await?,
        PaymentEvent::Ignored { kind, why } => WebhookOutcome::Ignored { kind, why },
    };
    tracing::info!(event_id = %event_id, outcome = ?outcome, "webhook_applied");
    Ok(outcome)
}
