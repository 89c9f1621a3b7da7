//! Taking a purchase back (a refund, a dispute, a store's revocation) never below a zero
//! balance, giving it back when a dispute is won, and the hold that a shortfall leaves.

use crate::adapters::payments::event::ReversalCause;
use crate::clock;
use crate::domain::{Credits, LedgerKind, Operator, UserId};
use crate::error::Error;
use crate::services::App;
use crate::services::payment_outcome::{WebhookError, WebhookOutcome};
use crate::store::payments::{HoldChange, MoveOutcome, ReleaseOutcome, TombstoneOutcome};
use crate::store::schema::{AccountItem, LedgerItem, TombstoneItem, reference, tombstone_id};

/// Takes a purchase back (a refund, a dispute, a store's refund or revocation). One not
/// recorded yet gets its tombstone instead, with `evidence` (the notification's verified
/// data), so it is never granted; should the purchase land between the two, it is reversed
/// as usual.
pub(crate) async fn reverse_or_tombstone(
    app: &App,
    payment_id: &str,
    cause: &ReversalCause,
    evidence: &serde_json::Value,
) -> Result<WebhookOutcome, Error> {
    for _ in 0..2 {
        match reverse(app, payment_id, cause).await {
            Ok(outcome) => return Ok(outcome),
            Err(WebhookError::NotYetRecorded { .. }) => {}
            Err(WebhookError::Store(e)) => return Err(e),
            Err(other) => return Err(Error::corrupt(other.to_string())),
        }
        let tombstone = TombstoneItem {
            payment_id: tombstone_id(payment_id),
            reverses: payment_id.to_owned(),
            reason: cause.reason(),
            evidence: evidence.to_string(),
            created_at: clock::format(clock::now()),
        };
        match app.store.put_tombstone(&tombstone).await? {
            TombstoneOutcome::Written => {
                tracing::warn!(payment_id, reason = %tombstone.reason, "reversal_before_purchase");
                return Ok(WebhookOutcome::ReversedFirst);
            }
            TombstoneOutcome::Exists => return Ok(WebhookOutcome::AlreadyReversed),
            TombstoneOutcome::Purchased => {}
        }
    }
    Err(Error::Contention { attempts: 2 })
}

/// Attempts at a guarded move before giving up as contended (Stripe retries the event).
const MOVE_ATTEMPTS: u32 = 8;

/// Runs a guarded move: `plan` says, from the account as read and what `context` read after
/// it, which row to write and what to do with the hold; a concurrent change makes it read and
/// plan again. `context` runs after the account is read, so anything that changed the account
/// before `context` read is seen, and anything after makes the move stale.
async fn move_balance<C, Fut>(
    app: &App,
    user: &UserId,
    context: impl Fn() -> Fut,
    plan: impl Fn(&AccountItem, &C) -> (LedgerItem, HoldChange),
) -> Result<(MoveOutcome, LedgerItem), Error>
where
    Fut: std::future::Future<Output = Result<C, Error>>,
{
    for _ in 0..MOVE_ATTEMPTS {
        let account = app.store.get_account(user).await?.ok_or_else(|| {
            Error::corrupt(format!("the account of a payment ({user}) is missing"))
        })?;
        let read = context().await?;
        let (row, hold) = plan(&account, &read);
        match app.store.guarded_move(&account, &row, &hold).await? {
            MoveOutcome::Stale => {
                // The row may exist already (a concurrent delivery of the same event).
                if let Some(old) = app.store.get_ledger_row(user, &row.reference).await? {
                    return Ok((MoveOutcome::Exists(Box::new(old)), row));
                }
            }
            done => return Ok((done, row)),
        }
    }
    Err(Error::Contention {
        attempts: MOVE_ATTEMPTS,
    })
}

/// Nothing to read besides the account.
async fn nothing() -> Result<(), Error> {
    Ok(())
}

/// The user's reversals whose shortfall is still owed (not given back by a won dispute),
/// other than `except`: what keeps an account on hold.
async fn owed_reversals(app: &App, user: &UserId, except: &str) -> Result<Vec<String>, Error> {
    let reversals = app
        .store
        .ledger_rows_from(user, reference::PURCHASE_REVERSAL_PREFIX)
        .await?;
    let restored = app
        .store
        .ledger_rows_from(user, reference::REVERSAL_RESTORED_PREFIX)
        .await?;
    Ok(reversals
        .into_iter()
        .filter(|r| r.reference != except && r.shortfall.is_some_and(|s| s > Credits::ZERO))
        .filter(|r| {
            let payment = r
                .reference
                .strip_prefix(reference::PURCHASE_REVERSAL_PREFIX)
                .unwrap_or_default();
            !restored
                .iter()
                .any(|b| b.reference == reference::reversal_restored(payment))
        })
        .map(|r| r.reference)
        .collect())
}

pub(crate) async fn reverse(
    app: &App,
    payment_id: &str,
    cause: &ReversalCause,
) -> Result<WebhookOutcome, WebhookError> {
    let payment =
        app.store
            .get_payment(payment_id)
            .await?
            .ok_or_else(|| WebhookError::NotYetRecorded {
                payment_id: payment_id.to_owned(),
            })?;
    let reference = reference::purchase_reversal(payment_id);
    let now = clock::format(clock::now());
    let (outcome, row) = move_balance(app, &payment.user_id, nothing, |account, ()| {
        let (take, shortfall) = reversal_split(account.credits, payment.credits);
        let mut row = LedgerItem::new(
            &payment.user_id,
            reference.clone(),
            Credits::new(-take.get()),
            LedgerKind::PurchaseReversal,
            &now,
        );
        row.reason = Some(cause.reason());
        let hold = if shortfall > Credits::ZERO {
            row.shortfall = Some(shortfall);
            HoldChange::Set(reference.clone())
        } else {
            HoldChange::Keep
        };
        (row, hold)
    })
    .await?;
    Ok(match outcome {
        MoveOutcome::Exists(_) => WebhookOutcome::AlreadyReversed,
        _ => {
            let taken = Credits::new(-row.amount.get());
            let shortfall = row.shortfall.unwrap_or(Credits::ZERO);
            tracing::info!(user_id = %payment.user_id, payment_id, reason = %cause.reason(), taken = taken.get(), shortfall = shortfall.get(), "purchase_reversed");
            if shortfall > Credits::ZERO {
                tracing::warn!(user_id = %payment.user_id, payment_id, shortfall = shortfall.get(), "account_put_on_hold");
            }
            WebhookOutcome::Reversed { taken, shortfall }
        }
    })
}

/// What a reversal of `credits` takes from `balance`, and what it cannot: never below zero.
pub fn reversal_split(balance: Credits, credits: Credits) -> (Credits, Credits) {
    let take = Credits::new(balance.get().clamp(0, credits.get()));
    (take, Credits::new(credits.get() - take.get()))
}

pub(super) async fn restore(
    app: &App,
    payment_id: &str,
    dispute_id: &str,
) -> Result<WebhookOutcome, WebhookError> {
    let not_yet = || WebhookError::NotYetRecorded {
        payment_id: payment_id.to_owned(),
    };
    let Some(payment) = app.store.get_payment(payment_id).await? else {
        if app.store.get_tombstone(payment_id).await?.is_some() {
            // Never granted, so nothing to give back: the customer's credits, if any are
            // owed, are an operator's grant (docs/operations.md).
            tracing::warn!(payment_id, dispute_id, "dispute_won_after_reversal_first");
            return Ok(WebhookOutcome::Ignored {
                kind: "charge.dispute.closed".to_owned(),
                why: "the payment's reversal arrived before it: it was never granted",
            });
        }
        return Err(not_yet());
    };
    let user = &payment.user_id;
    let reversal_ref = reference::purchase_reversal(payment_id);
    // A won dispute whose reversal has not landed yet (events out of order): retry later, or
    // the reversal arriving after it would take credits for a dispute already won.
    let reversal = app
        .store
        .get_ledger_row(user, &reversal_ref)
        .await?
        .ok_or_else(not_yet)?;
    let cause = ReversalCause::Dispute {
        dispute_id: dispute_id.to_owned(),
    };
    if reversal.reason.as_deref() != Some(cause.reason().as_str()) {
        return Ok(WebhookOutcome::Ignored {
            kind: "charge.dispute.closed".to_owned(),
            why: "the payment was reversed for another reason",
        });
    }
    let credits = Credits::new(-reversal.amount.get());
    let now = clock::format(clock::now());
    let owed = || owed_reversals(app, user, &reversal_ref);
    let (outcome, _) = move_balance(app, user, owed, |account, owed| {
        let mut row = LedgerItem::new(
            user,
            reference::reversal_restored(payment_id),
            credits,
            LedgerKind::ReversalRestored,
            &now,
        );
        row.reason = Some(cause.reason());
        // The hold names the first reversal that set it; when that one is given back,
        // another still owed keeps the account on hold under its own name.
        let hold = match owed.first() {
            _ if account.hold.as_deref() != Some(reversal_ref.as_str()) => HoldChange::Keep,
            Some(other) => HoldChange::Replace(other.clone()),
            None => HoldChange::Clear,
        };
        (row, hold)
    })
    .await?;
    Ok(match outcome {
        MoveOutcome::Exists(_) => WebhookOutcome::AlreadyRestored,
        _ => {
            tracing::info!(user_id = %user, payment_id, dispute_id, credits = credits.get(), "reversal_restored");
            WebhookOutcome::Restored { credits }
        }
    })
}

/// An operator lifts a hold.
pub async fn release_hold(
    app: &App,
    user: &UserId,
    operator: &Operator,
) -> Result<ReleaseOutcome, Error> {
    let out = app
        .store
        .release_hold(user, operator, &clock::format(clock::now()))
        .await?;
    tracing::info!(user_id = %user, operator = %operator, outcome = ?out, "hold_released");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reversal_takes_what_is_left_and_records_the_rest_as_shortfall() {
        let c = Credits::new;
        for (balance, credits, take, shortfall) in [
            (100, 50, 50, 0),
            (50, 50, 50, 0),
            (20, 50, 20, 30),
            (0, 50, 0, 50),
            (-5, 50, 0, 50),
        ] {
            assert_eq!(
                reversal_split(c(balance), c(credits)),
                (c(take), c(shortfall)),
                "balance {balance}, credits {credits}"
            );
        }
    }
}
