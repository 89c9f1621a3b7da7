//! The fault harness's App Store class: iPhone purchases among the jobs, through the wire
//! faults. Each signed transaction is submitted two to five times at once and once more later
//! (an app relaunched before it finished the transaction), and its `REFUND` notification, when
//! Apple sends one, comes before the purchase is recorded (kept as a tombstone, `200`), before
//! it with Apple giving up before the app posts (the attack), with it, or after it, and twice.
//! At rest each kept transaction granted its pack once, and no refunded one kept credits:
//! reversed once, never below zero, or never granted (`chaos/stores.rs`).

use std::collections::BTreeMap;

use atelier_shared::domain::UserId;
use atelier_shared::store::schema::LedgerItem;
use atelier_tests::app_store::{self, AppStoreStandIn, STARTER, transaction_payload};
use atelier_tests::{Harness, Reply};
use rand::Rng;
use rand::rngs::StdRng;

use super::Tally;
use super::stores::{self, AtRest, Names, Plan, Refund, StoreBuy};

/// One iPhone purchase of the schedule.
#[derive(Debug, Clone)]
pub struct AppleBuy {
    pub user: UserId,
    pub transaction_id: String,
    signed: String,
    refund_notification: String,
    pub plan: Plan,
}

impl StoreBuy for AppleBuy {
    async fn submit(&self, h: &Harness) -> Reply {
        app_store::submit(h, &self.user, &self.signed).await
    }

    async fn notify(&self, h: &Harness) -> Reply {
        app_store::notify(h, &self.refund_notification).await
    }
}

impl AppleBuy {
    /// A transaction of one of `buyers` (a user and their account's token), bound to it.
    pub fn draw(
        rng: &mut StdRng,
        store: &AppStoreStandIn,
        buyers: &[(UserId, String)],
    ) -> AppleBuy {
        let (user, token) = buyers[rng.gen_range(0..buyers.len())].clone();
        let transaction_id = app_store::transaction_id();
        let signed =
            store.transaction(&transaction_payload(&transaction_id, STARTER, Some(&token)));
        let refund_notification = store.notification("REFUND", &signed);
        AppleBuy {
            user,
            transaction_id,
            signed,
            refund_notification,
            plan: Plan::draw(rng),
        }
    }

    /// What this purchase did, into the run's tally.
    pub fn tally(&self, tally: &mut Tally) {
        self.plan.tally(&NAMES, tally);
    }
}

const NAMES: Names = Names {
    purchases: "apple_purchases",
    kept: "apple_purchases_kept",
    before: "apple_refund_before_purchase",
    gave_up: "apple_refund_first_then_purchase_after_apple_gave_up",
    with: "apple_refund_with_purchase",
    after: "apple_refund_after_purchase_twice",
    early_recorded: "apple_refund_recorded_before_its_purchase",
    revoked_replies: "apple_submissions_refused_as_refunded",
    submissions: "apple_submissions",
    deliveries: "apple_notification_deliveries",
};

/// One purchase as planned, through `h` (the wire faults).
pub async fn app_store_with_faults(h: &Harness, mut buy: AppleBuy) -> AppleBuy {
    buy.plan.sent = stores::with_faults(h, &buy.plan, &buy).await;
    buy
}

/// Each transaction at rest: its pack granted once, and when refunded reversed once (never
/// below zero; a shortfall leaves the account on hold) or never granted, its tombstone kept.
pub async fn app_store_checks(
    h: &Harness,
    buys: &[AppleBuy],
    ledgers: &BTreeMap<UserId, Vec<LedgerItem>>,
    violations: &mut Vec<String>,
) {
    let mut held = BTreeMap::new();
    let mut never_granted = Vec::new();
    for buy in buys {
        let at_rest = AtRest {
            payment: format!("apple:{}", buy.transaction_id),
            user: &buy.user,
            plan: &buy.plan,
        };
        if !stores::books_check(&at_rest, ledgers, &mut held, violations) {
            never_granted.push(at_rest.payment);
        }
    }
    stores::holds_check(h, &held, violations).await;
    stores::tombstones_check(h, &never_granted, violations).await;
    println!(
        "chaos: {} App Store purchases, {} refunded ({} refunded first, never granted), {} accounts held by a shortfall",
        buys.len(),
        buys.iter()
            .filter(|b| b.plan.refund != Refund::Kept)
            .count(),
        never_granted.len(),
        held.len()
    );
}
