//! What the fault harness's App Store and Google Play classes share: when a store's refund
//! comes, sending as the app and the store do (again until taken), and the books of one store
//! purchase at rest. Each class says only how its purchase is posted and its refund delivered.
//! A refund that reaches us before its purchase is kept (a tombstone, `200 reversed_first`),
//! so the purchase, posted whenever, grants nothing (rule 13): the attack "hold the app's post
//! back until the store stops resending the refund" is one of the plans.

use std::collections::BTreeMap;
use std::time::Duration;

use atelier_shared::domain::{LedgerKind, UserId};
use atelier_shared::store::schema::LedgerItem;
use atelier_tests::{Harness, Reply};

use super::Tally;
use futures::future::join_all;
use http::StatusCode;
use rand::Rng;
use rand::rngs::StdRng;

/// When the store's refund (Apple's `REFUND`, Google's voided purchase) for a purchase comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refund {
    Kept,
    /// Before the purchase is recorded (then with it), and once more after.
    Before,
    /// Before the purchase, redelivered until taken; then the store gives up (sends nothing
    /// more) and only then does the app post the purchase it held back.
    BeforeGaveUp,
    /// At the same time as the submissions, and once more after.
    With,
    /// After the submissions, twice at once.
    After,
}

impl Refund {
    pub fn draw(rng: &mut StdRng) -> Refund {
        match rng.gen_range(0..10) {
            0..3 => Refund::Kept,
            3..5 => Refund::Before,
            5..7 => Refund::BeforeGaveUp,
            7..9 => Refund::With,
            _ => Refund::After,
        }
    }
}

/// What the schedule plans for a store purchase, and what was sent for it.
#[derive(Debug, Clone)]
pub struct Plan {
    pub refund: Refund,
    /// How many submissions the app makes at once.
    pub copies: usize,
    pub sent: Sent,
}

impl Plan {
    pub fn draw(rng: &mut StdRng) -> Plan {
        Plan {
            refund: Refund::draw(rng),
            copies: rng.gen_range(2..=5),
            sent: Sent::default(),
        }
    }

    /// What this purchase did, into the run's tally under `names`.
    pub fn tally(&self, names: &Names, tally: &mut Tally) {
        tally.add(names.purchases);
        tally.add(match self.refund {
            Refund::Kept => names.kept,
            Refund::Before => names.before,
            Refund::BeforeGaveUp => names.gave_up,
            Refund::With => names.with,
            Refund::After => names.after,
        });
        if self.sent.early_recorded {
            tally.add(names.early_recorded);
        }
        tally.add_n(names.revoked_replies, self.sent.revoked_replies);
        tally.add_n(names.submissions, self.sent.submissions);
        tally.add_n(names.deliveries, self.sent.deliveries);
    }
}

/// One store's names in the run's tally.
pub struct Names {
    pub purchases: &'static str,
    pub kept: &'static str,
    pub before: &'static str,
    pub gave_up: &'static str,
    pub with: &'static str,
    pub after: &'static str,
    pub early_recorded: &'static str,
    /// Submissions answered `422 TRANSACTION_REVOKED` (the refund was there first).
    pub revoked_replies: &'static str,
    pub submissions: &'static str,
    pub deliveries: &'static str,
}

/// A store purchase of the schedule: how the app posts it and the store delivers its refund.
pub trait StoreBuy {
    async fn submit(&self, h: &Harness) -> Reply;
    async fn notify(&self, h: &Harness) -> Reply;
}

/// What the app and the store sent for one purchase.
#[derive(Debug, Clone, Default)]
pub struct Sent {
    /// Replies that said "granted" (201), over every submission.
    pub granted_replies: usize,
    pub submissions: u64,
    pub deliveries: u64,
    /// The refund that came first was recorded ahead of its purchase (`reversed_first`).
    pub early_recorded: bool,
    /// Submissions whose last answer was `422 TRANSACTION_REVOKED`.
    pub revoked_replies: u64,
}

/// A submission retried as the app does while its purchase is unfinished (a 5xx from a wire
/// fault, `503 TRY_AGAIN`, `502` from the store); the last reply and how many it took.
async fn submit_as_app(h: &Harness, buy: &impl StoreBuy) -> (Reply, u64) {
    let mut sent = 1;
    let mut last = buy.submit(h).await;
    while last.status.is_server_error() && sent < 40 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        last = buy.submit(h).await;
        sent += 1;
    }
    (last, sent)
}

/// A refund redelivered as the store does until it is taken (a 5xx; a `409` is no longer an
/// answer for a refund ahead of its purchase, so it ends the retries and shows at rest); the
/// last reply and how many deliveries it took.
async fn notify_as_store(h: &Harness, buy: &impl StoreBuy) -> (Reply, u64) {
    let mut sent = 1;
    let mut last = buy.notify(h).await;
    while last.status.is_server_error() && sent < 60 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        last = buy.notify(h).await;
        sent += 1;
    }
    (last, sent)
}

/// One purchase as planned, through `h` (the wire faults): submitted `copies` times at once
/// and once more later, its refund before, with or after it.
pub async fn with_faults(h: &Harness, plan: &Plan, buy: &impl StoreBuy) -> Sent {
    let mut out = Sent::default();
    match plan.refund {
        Refund::Before => {
            let early = buy.notify(h).await;
            out.deliveries += 1;
            out.early_recorded = early.body["outcome"] == "reversed_first";
        }
        Refund::BeforeGaveUp => {
            let (early, n) = notify_as_store(h, buy).await;
            out.deliveries += n;
            out.early_recorded = early.body["outcome"] == "reversed_first";
        }
        _ => {}
    }
    let submissions = join_all((0..plan.copies).map(|_| submit_as_app(h, buy)));
    let with = async {
        match plan.refund {
            Refund::Before | Refund::With => vec![notify_as_store(h, buy).await],
            _ => Vec::new(),
        }
    };
    let (mut replies, mut notified) = futures::join!(submissions, with);
    replies.push(submit_as_app(h, buy).await);
    match plan.refund {
        Refund::Kept | Refund::BeforeGaveUp => {}
        Refund::After => {
            let (a, b) = futures::join!(notify_as_store(h, buy), notify_as_store(h, buy));
            notified.extend([a, b]);
        }
        Refund::Before | Refund::With => notified.push(notify_as_store(h, buy).await),
    }
    out.granted_replies = replies
        .iter()
        .filter(|(r, _)| r.status == StatusCode::CREATED)
        .count();
    out.revoked_replies = replies.iter().filter(|(r, _)| revoked(r)).count() as u64;
    out.submissions = replies.iter().map(|(_, n)| n).sum();
    out.deliveries += notified.iter().map(|(_, n)| n).sum::<u64>();
    out
}

/// A submission refused because its refund was there first.
fn revoked(r: &Reply) -> bool {
    r.status == StatusCode::UNPROCESSABLE_ENTITY && r.code() == "TRANSACTION_REVOKED"
}

/// The app resubmits and the store redelivers until each is taken (after the faults, on the
/// clean stack): nothing planned is left undone by a wire fault. A store that gave up sends
/// nothing more.
pub async fn settle<'a, B: StoreBuy + std::fmt::Debug + 'a>(
    h: &Harness,
    buys: impl IntoIterator<Item = (&'a Plan, &'a B)>,
) {
    for (plan, buy) in buys {
        let (r, _) = submit_as_app(h, buy).await;
        let refused_as_refunded = plan.refund != Refund::Kept && revoked(&r);
        assert!(
            r.status.is_success() || refused_as_refunded,
            "never taken: {r:?} {buy:?}"
        );
        if !matches!(plan.refund, Refund::Kept | Refund::BeforeGaveUp) {
            let (r, _) = notify_as_store(h, buy).await;
            assert!(r.status.is_success(), "refund never taken: {r:?} {buy:?}");
        }
    }
}

/// One store purchase at rest, as the books show it.
pub struct AtRest<'a> {
    /// `apple:<transactionId>`, `google:<orderId>`: the payment id.
    pub payment: String,
    pub user: &'a UserId,
    pub plan: &'a Plan,
}

/// Kept: one `purchase:<payment>` row of the pack's 50 credits. Refunded: no credits kept,
/// either granted and reversed once (taking what the balance had, the rest recorded as
/// shortfall) or, when the refund came first, never granted at all (no row of either kind,
/// no reply that said "granted"): always so when the store gave up before the app posted.
/// Never more than one "granted" reply. A shortfall's user goes into `held`. Whether it was
/// granted.
pub fn books_check(
    p: &AtRest,
    ledgers: &BTreeMap<UserId, Vec<LedgerItem>>,
    held: &mut BTreeMap<UserId, String>,
    violations: &mut Vec<String>,
) -> bool {
    let id = &p.payment;
    let rows = ledgers.get(p.user).map(Vec::as_slice).unwrap_or(&[]);
    let find = |reference: String, kind: LedgerKind| -> Vec<&LedgerItem> {
        rows.iter()
            .filter(|r| r.reference == reference && r.kind == kind)
            .collect()
    };
    let bought = find(format!("purchase:{id}"), LedgerKind::Purchase);
    let reversed = find(
        format!("purchase_reversal:{id}"),
        LedgerKind::PurchaseReversal,
    );
    let refunded = p.plan.refund != Refund::Kept;
    let granted = !bought.is_empty();
    let must_grant = !refunded;
    let must_not_grant = p.plan.refund == Refund::BeforeGaveUp || p.plan.sent.early_recorded;
    if (must_grant && !granted) || (must_not_grant && granted) {
        violations.push(format!(
            "{id}: {:?} {:?} but purchase rows {bought:?}",
            p.plan.refund, p.plan.sent
        ));
    }
    if bought.len() > 1 || bought.iter().any(|b| b.amount.get() != 50) {
        violations.push(format!("{id}: purchase rows {bought:?}"));
    }
    if p.plan.sent.granted_replies > bought.len() {
        violations.push(format!(
            "{id}: {} replies said granted, {} rows",
            p.plan.sent.granted_replies,
            bought.len()
        ));
    }
    let want = usize::from(refunded && granted);
    if reversed.len() != want {
        violations.push(format!(
            "{id}: {:?} but reversals {reversed:?}",
            p.plan.refund
        ));
    }
    if let Some(r) = reversed.first() {
        let shortfall = r.shortfall.map_or(0, |s| s.get());
        if -r.amount.get() + shortfall != 50 || r.amount.get() > 0 || shortfall < 0 {
            violations.push(format!("{id}: reversal does not add up to the pack: {r:?}"));
        }
        if shortfall > 0 {
            held.insert(p.user.clone(), id.clone());
        }
    }
    granted
}

/// Each refund that never met its purchase left its tombstone, with the store's own word.
pub async fn tombstones_check(h: &Harness, payments: &[String], violations: &mut Vec<String>) {
    for id in payments {
        match h.app.store.get_tombstone(id).await {
            Ok(Some(t)) if t.reverses == *id => {}
            other => violations.push(format!("{id}: refunded first, but tombstone {other:?}")),
        }
    }
}

/// Every account a shortfall was recorded for is on hold.
pub async fn holds_check(
    h: &Harness,
    held: &BTreeMap<UserId, String>,
    violations: &mut Vec<String>,
) {
    for (user, id) in held {
        if h.account(user).await.body["on_hold"] != true {
            violations.push(format!("{id}: a shortfall but {user} is not on hold"));
        }
    }
}
