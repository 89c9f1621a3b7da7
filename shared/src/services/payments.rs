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

use crate::domain::validation::FieldCode;
use sha2::{Digest, Sha256};

use super::App;
use super::accounts::ensure_account;
use super::closed_payments;
pub use super::payment_outcome::{WebhookError, WebhookOutcome};
use crate::adapters::metrics;
use crate::adapters::payments::Stripe;
use crate::adapters::payments::event::{PaidSession, PaymentEvent, ReversalCause};
use crate::adapters::payments::signature;
use crate::adapters::payments::stripe::{NewSession, StripeError};
use crate::clock;
use crate::domain::validation::FieldErrors;
use crate::domain::{Credits, EmailStatus, IdempotencyKey, LedgerKind, Operator, Pack, UserId};
use crate::error::Error;
use crate::store::payments::{
    HoldChange, MoveOutcome, PurchaseOutcome, ReleaseOutcome, TombstoneOutcome,
};
use crate::store::schema::{
    AccountItem, LedgerItem, PaymentItem, TombstoneItem, reference, tombstone_id,
};

/// A checkout request, validated: the pack and where Stripe sends the user back.
#[derive(Debug, Clone)]
pub struct CheckoutSpec {
    pub pack: Pack,
    pub success_url: String,
    pub cancel_url: String,
}

/// Longest return URL accepted.
const MAX_URL_LEN: usize = 2048;

impl CheckoutSpec {
    /// Validates a request against the catalogue and the return-URL allow-list.
    pub fn parse(
        app: &App,
        pack: Option<&str>,
        success_url: Option<&str>,
        cancel_url: Option<&str>,
    ) -> Result<CheckoutSpec, Error> {
        let settings = &app.config.payments;
        let mut errors = FieldErrors::default();
        let pack = match pack {
            None => {
                errors.push(
                    "pack",
                    FieldCode::Required,
                    "name a pack from GET /v1/packs",
                );
                None
            }
            Some(p) => match settings.packs.get(p) {
                Some(p) => Some(p.clone()),
                None => {
                    errors.push(
                        "pack",
                        FieldCode::UnknownPack,
                        "no such pack; see GET /v1/packs",
                    );
                    None
                }
            },
        };
        let first = settings
            .return_urls
            .first()
            .map(|u| u.as_str())
            .unwrap_or("");
        let mut url = |field: &'static str, given: Option<&str>, default: String| match given {
            None => Some(default),
            Some(u) if allowed(&settings.return_urls, u) => Some(u.to_owned()),
            Some(_) => {
                errors.push(
                    field,
                    FieldCode::NotAllowed,
                    "must start with one of the configured return URLs",
                );
                None
            }
        };
        let success = url(
            "success_url",
            success_url,
            format!("{first}?checkout=success"),
        );
        let cancel = url("cancel_url", cancel_url, format!("{first}?checkout=cancel"));
        match (pack, success, cancel) {
            (Some(pack), Some(success_url), Some(cancel_url)) if errors.0.is_empty() => {
                Ok(CheckoutSpec {
                    pack,
                    success_url,
                    cancel_url,
                })
            }
            _ => Err(Error::Validation(errors)),
        }
    }
}

/// Whether `url` is under one of the allowed prefixes: same scheme, host and port, and a
/// path that starts with the prefix's path (compared parsed, so `https://app.example.com.evil`
/// or `https://app.example.com@evil` never pass).
fn allowed(prefixes: &[reqwest::Url], url: &str) -> bool {
    if url.len() > MAX_URL_LEN {
        return false;
    }
    let Ok(u) = reqwest::Url::parse(url) else {
        return false;
    };
    u.username().is_empty()
        && u.password().is_none()
        && prefixes.iter().any(|p| {
            p.scheme() == u.scheme()
                && p.host_str() == u.host_str()
                && p.port_or_known_default() == u.port_or_known_default()
                && u.path().starts_with(p.path())
        })
}

/// A created (or replayed) checkout.
#[derive(Debug, Clone)]
pub struct Checkout {
    pub id: String,
    pub url: String,
    pub replayed: bool,
}

fn stripe(app: &App) -> Result<&Stripe, Error> {
    app.stripe.as_ref().ok_or(Error::PaymentsNotConfigured)
}

/// Creates a Checkout Session for `spec` on behalf of `user`.
pub async fn checkout(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    spec: &CheckoutSpec,
) -> Result<Checkout, Error> {
    let stripe = stripe(app)?;
    // The purchase lands on an existing account. Created here, it owes its signup grant until
    // the user's first call with a verified e-mail (payment is not e-mail verification).
    let account = ensure_account(app, user, EmailStatus::Unverified).await?;
    // A closed account takes no money (rule 14): no session is opened.
    if account.closed_at.is_some() {
        return Err(Error::AccountClosed);
    }
    let new = NewSession {
        user_id: user.as_str(),
        pack: spec.pack.id.as_str(),
        credits: spec.pack.credits.get(),
        amount: spec.pack.amount,
        currency: &spec.pack.currency,
        product_name: format!(
            "Atelier {} pack ({} credits)",
            spec.pack.id, spec.pack.credits
        ),
        success_url: &spec.success_url,
        cancel_url: &spec.cancel_url,
    };
    // Stripe's keys are per account, ours per user: two users' keys must not meet.
    let digest = Sha256::digest(format!("checkout\n{user}\n{}", key.as_str()));
    let stripe_key = format!("atelier-checkout-{}", hex::encode(digest));
    let created = stripe
        .client
        .create_session(&new, &stripe_key)
        .await
        .map_err(|e| match e {
            StripeError::IdempotencyConflict => Error::IdempotencyConflict,
            e => Error::PaymentProvider(e),
        })?;
    let url = created.session.url.ok_or_else(|| {
        Error::PaymentProvider(StripeError::Refused {
            status: 200,
            message: "the session has no url".to_owned(),
        })
    })?;
    tracing::info!(user_id = %user, pack = %spec.pack.id, session_id = %created.session.id, replayed = created.replayed, "checkout_created");
    Ok(Checkout {
        id: created.session.id,
        url,
        replayed: created.replayed,
    })
}

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

async fn restore(
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

    #[test]
    fn return_urls_must_share_scheme_host_port_and_path_prefix() {
        let prefixes = [reqwest::Url::parse("https://app.example.com/billing/")
            .unwrap_or_else(|e| panic!("{e}"))];
        for (url, ok) in [
            ("https://app.example.com/billing/done?x=1", true),
            ("https://app.example.com:443/billing/", true),
            ("https://app.example.com/other", false),
            ("http://app.example.com/billing/", false),
            ("https://app.example.com.evil.com/billing/", false),
            ("https://app.example.com@evil.com/billing/", false),
            ("https://evil.com/?https://app.example.com/billing/", false),
            ("https://app.example.com:8443/billing/", false),
            ("javascript:alert(1)", false),
            ("not a url", false),
        ] {
            assert_eq!(allowed(&prefixes, url), ok, "{url}");
        }
    }
}
