//! The fault harness's Google Play class: Android purchases among the jobs, through the wire
//! faults. Each purchase token is posted two to five times at once and once more later (the
//! app's `onPurchasesUpdated` and its start-up `queryPurchasesAsync`), while the stand-in
//! Google answers some Publisher calls and consumes 503. Its voided-purchase notification,
//! when Google sends one (Google's voided list names it from the start), comes by Pub/Sub push
//! before the purchase is recorded (kept as a tombstone, `200`), before it with Pub/Sub giving
//! up before the app posts (the attack), with it, or after it, and twice. At rest each kept
//! order granted its pack once and was consumed once, and no voided one kept credits:
//! reversed once, never below zero, or never granted nor consumed (`chaos/stores.rs`).

use std::collections::BTreeMap;

use atelier_shared::domain::UserId;
use atelier_shared::store::schema::LedgerItem;
use atelier_tests::google_play::{self, GoogleStandIn, Purchase, PushToken, STARTER, voided};
use atelier_tests::{Harness, Reply};
use rand::Rng;
use rand::rngs::StdRng;

use super::Tally;
use super::stores::{self, AtRest, Names, Plan, Refund, StoreBuy};

/// One Android purchase of the schedule.
#[derive(Debug, Clone)]
pub struct GoogleBuy {
    pub user: UserId,
    pub order_id: String,
    token: String,
    pub plan: Plan,
}

impl StoreBuy for GoogleBuy {
    async fn submit(&self, h: &Harness) -> Reply {
        google_play::submit(h, &self.user, STARTER, &self.token).await
    }

    /// Each delivery carries a new OIDC token, as Pub/Sub signs one per push.
    async fn notify(&self, h: &Harness) -> Reply {
        let oidc = PushToken::default().sign();
        google_play::push(h, Some(&oidc), &voided(&self.order_id, &self.token)).await
    }
}

impl GoogleBuy {
    /// A purchase Google Play holds for one of `buyers` (a user and their account's token),
    /// bound to the account by its `obfuscatedAccountId` four times in five, as the app
    /// launches it (the run accepts unbound purchases, so the fifth races to be granted).
    pub fn draw(
        rng: &mut StdRng,
        google: &GoogleStandIn,
        buyers: &[(UserId, String)],
    ) -> GoogleBuy {
        let (user, token) = buyers[rng.gen_range(0..buyers.len())].clone();
        let mut purchase = Purchase::new(STARTER);
        purchase.account = rng.gen_bool(0.8).then_some(token);
        let order_id = purchase.order_id.clone();
        let token = google.buy(purchase);
        let plan = Plan::draw(rng);
        if plan.refund != Refund::Kept {
            // Voided at Google before anything is sent: its push is confirmed whenever it comes.
            google.void(&token);
        }
        GoogleBuy {
            user,
            order_id,
            token,
            plan,
        }
    }

    /// What this purchase did, into the run's tally.
    pub fn tally(&self, tally: &mut Tally) {
        self.plan.tally(&NAMES, tally);
    }
}

const NAMES: Names = Names {
    purchases: "google_purchases",
    kept: "google_purchases_kept",
    before: "google_void_before_purchase",
    gave_up: "google_void_first_then_purchase_after_pubsub_gave_up",
    with: "google_void_with_purchase",
    after: "google_void_after_purchase_twice",
    early_recorded: "google_void_recorded_before_its_purchase",
    revoked_replies: "google_submissions_refused_as_voided",
    submissions: "google_submissions",
    deliveries: "google_push_deliveries",
};

/// Google Play's own faults for a batch: sometimes the next Publisher call or the next
/// consume (after the grant: the app's next post consumes it) is answered 503.
pub fn google_faults(rng: &mut StdRng, google: &GoogleStandIn, tally: &mut Tally) {
    if rng.gen_bool(0.3) {
        google.fail_next(1);
        tally.add("google_publisher_503");
    }
    if rng.gen_bool(0.3) {
        google.fail_next_consumes(1);
        tally.add("google_consume_503");
    }
}

/// One purchase as planned, through `h` (the wire faults).
pub async fn google_play_with_faults(h: &Harness, mut buy: GoogleBuy) -> GoogleBuy {
    buy.plan.sent = stores::with_faults(h, &buy.plan, &buy).await;
    buy
}

/// Each order at rest: its pack granted once and consumed at Google once, and when voided
/// reversed once (never below zero; a shortfall leaves the account on hold) or never granted
/// nor consumed, its tombstone kept.
pub async fn google_play_checks(
    h: &Harness,
    google: &GoogleStandIn,
    buys: &[GoogleBuy],
    ledgers: &BTreeMap<UserId, Vec<LedgerItem>>,
    violations: &mut Vec<String>,
) {
    let mut held = BTreeMap::new();
    let mut never_granted = Vec::new();
    for buy in buys {
        let at_rest = AtRest {
            payment: format!("google:{}", buy.order_id),
            user: &buy.user,
            plan: &buy.plan,
        };
        let granted = stores::books_check(&at_rest, ledgers, &mut held, violations);
        let consumed = google.purchase(&buy.token).map(|p| p.consumption_state);
        if consumed != Some(i32::from(granted)) {
            violations.push(format!(
                "google:{}: granted {granted} but consumed at Google {consumed:?}",
                buy.order_id
            ));
        }
        if !granted {
            never_granted.push(at_rest.payment);
        }
    }
    let granted = buys.len() - never_granted.len();
    if google.consumed() as usize != granted {
        violations.push(format!(
            "google: {} consumes for {granted} purchases granted",
            google.consumed(),
        ));
    }
    stores::tombstones_check(h, &never_granted, violations).await;
    stores::holds_check(h, &held, violations).await;
    println!(
        "chaos: {} Google Play purchases, {} voided ({} voided first, never granted), {} accounts held by a shortfall",
        buys.len(),
        buys.iter()
            .filter(|b| b.plan.refund != Refund::Kept)
            .count(),
        never_granted.len(),
        held.len()
    );
}
