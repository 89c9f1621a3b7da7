//! The fault harness's App Store class: iPhone purchases among the jobs, through the wire
//! faults. Each signed transaction is submitted two to five times at once and once more later
//! (an app relaunched before it finished the transaction), and its `REFUND` notification, when
//! Apple sends one, comes before the purchase is recorded (out of order: answered 409 until
//! it is, and redelivered), with it, or after it, and twice. At rest each transaction granted
//! its pack once, each refund reversed it once, never below zero.

use std::collections::BTreeMap;
use std::time::Duration;

use atelier_shared::domain::{LedgerKind, UserId};
use atelier_shared::services::app_store::app_account_token;
use atelier_shared::store::schema::LedgerItem;
use atelier_tests::app_store::{self, AppStoreStandIn, STARTER, transaction_payload};
use atelier_tests::{Harness, Reply};
use futures::future::join_all;
use http::StatusCode;
use rand::Rng;
use rand::rngs::StdRng;

use super::Tally;

/// When Apple's `REFUND` notification for a purchase comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refund {
    Kept,
    /// Before the transaction is recorded (then with it), and once more after.
    Before,
    /// At the same time as the submissions, and once more after.
    With,
    /// After the submissions, twice at once.
    After,
}

/// One iPhone purchase of the schedule.
#[derive(Debug, Clone)]
pub struct AppleBuy {
    pub user: UserId,
    pub transaction_id: String,
    signed: String,
    refund_notification: Option<String>,
    pub refund: Refund,
    copies: usize,
    /// Replies that said "granted" (201), over every submission.
    granted_replies: usize,
    submissions: u64,
    deliveries: u64,
    early_conflict: bool,
}

impl AppleBuy {
    pub fn draw(rng: &mut StdRng, store: &AppStoreStandIn, users: &[UserId]) -> AppleBuy {
        let user = users[rng.gen_range(0..users.len())].clone();
        let transaction_id = app_store::transaction_id();
        let token = app_account_token(&user);
        let signed =
            store.transaction(&transaction_payload(&transaction_id, STARTER, Some(&token)));
        let refund = match rng.gen_range(0..10) {
            0..3 => Refund::Kept,
            3..6 => Refund::Before,
            6..8 => Refund::With,
            _ => Refund::After,
        };
        let refund_notification =
            (refund != Refund::Kept).then(|| store.notification("REFUND", &signed));
        AppleBuy {
            user,
            transaction_id,
            signed,
            refund_notification,
            refund,
            copies: rng.gen_range(2..=5),
            granted_replies: 0,
            submissions: 0,
            deliveries: 0,
            early_conflict: false,
        }
    }

    /// What this purchase did, into the run's tally.
    pub fn tally(&self, tally: &mut Tally) {
        tally.add("apple_purchases");
        tally.add(match self.refund {
            Refund::Kept => "apple_purchases_kept",
            Refund::Before => "apple_refund_before_purchase",
            Refund::With => "apple_refund_with_purchase",
            Refund::After => "apple_refund_after_purchase_twice",
        });
        if self.early_conflict {
            tally.add("apple_refund_answered_409_before_its_purchase");
        }
        tally.add_n("apple_submissions", self.submissions);
        tally.add_n("apple_notification_deliveries", self.deliveries);
    }
}

/// A submission retried as the app does while its transaction is unfinished (a 5xx from a
/// wire fault, `503 TRY_AGAIN`); the last reply and how many it took.
async fn submit_as_app(h: &Harness, buy: &AppleBuy) -> (Reply, u64) {
    let mut sent = 1;
    let mut last = app_store::submit(h, &buy.user, &buy.signed).await;
    while last.status.is_server_error() && sent < 40 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        last = app_store::submit(h, &buy.user, &buy.signed).await;
        sent += 1;
    }
    (last, sent)
}

/// A notification redelivered as Apple does until it is taken (a 5xx, or `409` while its
/// transaction is not recorded); the last reply and how many deliveries it took.
async fn notify_as_apple(h: &Harness, signed: &str) -> (Reply, u64) {
    let mut sent = 1;
    let mut last = app_store::notify(h, signed).await;
    while (last.status.is_server_error() || last.status == StatusCode::CONFLICT) && sent < 60 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        last = app_store::notify(h, signed).await;
        sent += 1;
    }
    (last, sent)
}

/// One purchase as planned, through `h` (the wire faults).
pub async fn app_store_with_faults(h: &Harness, mut buy: AppleBuy) -> AppleBuy {
    let refund = buy.refund_notification.clone().unwrap_or_default();
    if buy.refund == Refund::Before {
        let early = app_store::notify(h, &refund).await;
        buy.deliveries += 1;
        buy.early_conflict = early.status == StatusCode::CONFLICT;
    }
    let submissions = join_all((0..buy.copies).map(|_| submit_as_app(h, &buy)));
    let with = async {
        match buy.refund {
            Refund::Before | Refund::With => vec![notify_as_apple(h, &refund).await],
            _ => Vec::new(),
        }
    };
    let (mut replies, mut notified) = futures::join!(submissions, with);
    replies.push(submit_as_app(h, &buy).await);
    match buy.refund {
        Refund::Kept => {}
        Refund::After => {
            let (a, b) = futures::join!(notify_as_apple(h, &refund), notify_as_apple(h, &refund));
            notified.extend([a, b]);
        }
        Refund::Before | Refund::With => notified.push(notify_as_apple(h, &refund).await),
    }
    buy.granted_replies = replies
        .iter()
        .filter(|(r, _)| r.status == StatusCode::CREATED)
        .count();
    buy.submissions = replies.iter().map(|(_, n)| n).sum();
    buy.deliveries += notified.iter().map(|(_, n)| n).sum::<u64>();
    buy
}

/// The app resubmits and Apple redelivers until each is taken (after the faults, on the clean
/// stack): nothing planned is left undone by a wire fault.
pub async fn settle(h: &Harness, buys: &[AppleBuy]) {
    for buy in buys {
        let (r, _) = submit_as_app(h, buy).await;
        assert!(
            r.status.is_success(),
            "{}: never taken: {r:?}",
            buy.transaction_id
        );
        if let Some(n) = &buy.refund_notification {
            let (r, _) = notify_as_apple(h, n).await;
            assert!(
                r.status.is_success(),
                "{}: refund never taken: {r:?}",
                buy.transaction_id
            );
        }
    }
}

/// Each transaction at rest: one `purchase:apple:` row of the pack's 50 credits, no more than
/// one reply that said "granted"; one reversal when refunded, taking what the balance had and
/// recording the rest as shortfall; a shortfall leaves the account on hold.
pub async fn app_store_checks(
    h: &Harness,
    buys: &[AppleBuy],
    ledgers: &BTreeMap<UserId, Vec<LedgerItem>>,
    violations: &mut Vec<String>,
) {
    let mut held = BTreeMap::new();
    for buy in buys {
        let id = &buy.transaction_id;
        let rows = ledgers.get(&buy.user).map(Vec::as_slice).unwrap_or(&[]);
        let find = |reference: String, kind: LedgerKind| -> Vec<&LedgerItem> {
            rows.iter()
                .filter(|r| r.reference == reference && r.kind == kind)
                .collect()
        };
        let bought = find(format!("purchase:apple:{id}"), LedgerKind::Purchase);
        let reversed = find(
            format!("purchase_reversal:apple:{id}"),
            LedgerKind::PurchaseReversal,
        );
        if bought.len() != 1 || bought[0].amount.get() != 50 {
            violations.push(format!("apple {id}: purchase rows {bought:?}"));
        }
        if buy.granted_replies > 1 {
            violations.push(format!(
                "apple {id}: {} replies said granted",
                buy.granted_replies
            ));
        }
        let want = usize::from(buy.refund != Refund::Kept);
        if reversed.len() != want {
            violations.push(format!(
                "apple {id}: {:?} but reversals {reversed:?}",
                buy.refund
            ));
        }
        if let Some(r) = reversed.first() {
            let shortfall = r.shortfall.map_or(0, |s| s.get());
            if -r.amount.get() + shortfall != 50 || r.amount.get() > 0 || shortfall < 0 {
                violations.push(format!(
                    "apple {id}: reversal does not add up to the pack: {r:?}"
                ));
            }
            if shortfall > 0 {
                held.insert(buy.user.clone(), id.clone());
            }
        }
    }
    for (user, id) in &held {
        if h.account(user).await.body["on_hold"] != true {
            violations.push(format!("apple {id}: a shortfall but {user} is not on hold"));
        }
    }
    println!(
        "chaos: {} App Store purchases, {} refunded, {} accounts held by a shortfall",
        buys.len(),
        buys.iter().filter(|b| b.refund != Refund::Kept).count(),
        held.len()
    );
}
