//! The fault harness, in the spirit of Jepsen's bank test: many jobs through the real API,
//! consumer and sweeper on the local stack, with faults chosen by a seed, then the money
//! invariants checked over everything that happened.
//!
//! Short run (the README's test command, and CI): 60 jobs with the pinned seed
//! ([`PINNED_SEED`], chosen so that every fault class fires). Full run:
//! `CHAOS_JOBS=1000 CHAOS_SEED=7 cargo xtask test -- -p atelier-tests --test chaos -- --nocapture`
//! (`CHAOS_SEED=random` draws one). Every fault class must fire at its floor, scaled with the
//! job count ([`FAULT_CLASSES`]): a class that did not fire fails the run, which otherwise
//! proved nothing about it. The checks fail closed: a read of theirs that fails (after
//! retries) is a violation, and an injected fault that could not be injected fails the run.
//! The seed is printed; the same seed makes the same plan (each batch's submits, purchases of
//! the three stores and signup races, drawn from a stream no outcome consumes) and the same
//! faults per delivered job (model, crash, duplicates: a second stream, drawn in the order of
//! the jobs the API accepted, which timing can change). Thread interleavings and the wire
//! proxy's per-operation sequence vary with timing, so a replay is the same plan, not the
//! same trace.
//!
//! Faults: clients retrying every submit and repair with the same key (sometimes
//! concurrently) and reusing keys with another body (the other photo: every edit's kept
//! input must stay byte-identical to the photo it was created with); duplicate and concurrent deliveries;
//! queue sends that fail (the wire proxy fails SQS calls); consumers dying after each step in
//! turn; model errors, timeouts, malformed JSON, missing usage, reviewer down, ambiguous
//! photos; a halt and a cap exhausted mid-run; two sweepers at once with the clock moved
//! forward; wire faults between the code and DynamoDB/SQS/S3 (transaction conflicts,
//! throttling, 500s, connections dropped after the write reached the server, latency).
//! Purchases run among the jobs (`purchase_with_faults`): checkouts retried with their key,
//! the payment event delivered up to five times at once, refunds and disputes delivered
//! before and with it or 1-12 batches later (after spending, which holds the account),
//! disputes won or lost (a reversal recorded ahead of its payment leaves it never granted). Signup races run among them too (`signup_race_with_faults`): two or
//! three new subs with one address (written differently), each signing in several times at
//! once, some first unverified, sometimes the first deleting its account meanwhile (Cognito's
//! `DeleteUser` and a new sign-up): each address gets exactly one signup grant. Webhooks
//! (`webhooks_with_faults`, after the jobs settle): two healthy receivers, stream records
//! dropped (never fanned out) or seen twice, deliverers killed mid-batch at the AWS request
//! the seed picks (`chaos/doomed.rs`, through the wire faults of the sweeper's role), the sweeper's safety net with the clock moved on: every
//! finished job's one event reaches each healthy receiver, a duplicate only under the same
//! `webhook-id` with the same body. iPhone purchases run among the jobs (`chaos/app_store.rs`):
//! each signed transaction submitted several times at once and again later, its `REFUND`
//! delivered before it is recorded, before it with Apple giving up before the app posts it
//! (no credits may be kept), with it or after it, twice; Android purchases likewise
//! (`chaos/google_play.rs`): each purchase token posted several times at once while Google
//! answers some calls 503, its voided-purchase notification pushed by Pub/Sub before (also
//! with Pub/Sub giving up before the app posts), with or after it, twice. Pushes run in the webhook
//! phase (`chaos/push.rs`): dead tokens, a push service answering 500 and timing out.

use std::collections::BTreeMap;
use std::time::Duration;

#[path = "chaos/app_store.rs"]
mod apple;
#[path = "chaos/doomed.rs"]
mod doomed;
#[path = "chaos/google_play.rs"]
mod google;
#[path = "chaos/hook_queue.rs"]
mod hook_queue;
#[path = "chaos/push.rs"]
mod push_faults;
#[path = "chaos/stores.rs"]
mod stores;

use atelier_model_server::samples;
use atelier_shared::adapters::model::catalogue::Provider;
use atelier_shared::clock::{self, Instant};
use atelier_shared::config::UnboundPurchases;
use atelier_shared::domain::Job;
use atelier_shared::domain::breaker::{BreakerSettings, Phase};
use atelier_shared::domain::webhooks::SCHEDULE_SECS;
use atelier_shared::domain::{AssetKind, JobId, JobState, UserId};
use atelier_shared::domain::{LedgerKind, Micros};
use atelier_shared::services::process::Step;
use atelier_shared::services::{App, breaker, budget};
use atelier_shared::store::schema::WebhookEventItem;
use atelier_tests::app_store::{self, AppStoreStandIn};
use atelier_tests::google_play::{self, GoogleStandIn};
use atelier_tests::push::PushStandIn;
use atelier_tests::stripe::{Event, StripeStandIn};
use atelier_tests::{Harness, Reply, StandIn, iam, sha256};
use atelier_wire_proxy::{Attribution, FaultKind, FaultPlan, Proxy};
use futures::future::join_all;
use http::StatusCode;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

const STEPS: [Step; 6] = [
    Step::AfterClaim,
    Step::AfterReserve,
    Step::AfterCheck,
    Step::AfterEdit,
    Step::AfterStore,
    Step::AfterReview,
];

const MODEL_FAULTS: [(&str, &str); 9] = [
    ("edit", "error_500"),
    ("edit", "timeout"),
    ("edit", "missing_usage"),
    ("check", "malformed_json"),
    ("check", "not_ready"),
    ("review", "error_500"),
    ("review", "schema_violation"),
    ("compare", "error_500"),
    ("edit", "malformed_json"),
];

/// The seed of the short run: CI's, and the default of every run without `CHAOS_SEED`. Chosen
/// so that every fault class of [`FAULT_CLASSES`] fires at the default 60 jobs (the floors
/// below assert it); a change of the schedule that stops one firing fails the run, and a new
/// seed is chosen and written here and in docs/testing.md.
const PINNED_SEED: u64 = 20261204;

/// `CHAOS_SEED`, or `CHAOS_SEED=random` for a fresh one (printed), or [`PINNED_SEED`].
fn chaos_seed() -> u64 {
    match std::env::var("CHAOS_SEED").ok().as_deref() {
        Some("random") => rand::random::<u16>().into(),
        Some(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("CHAOS_SEED={s:?} is neither a number nor `random`")),
        None => PINNED_SEED,
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the schedule did, counted.
#[derive(Default, Debug)]
struct Tally(BTreeMap<&'static str, u64>);

impl Tally {
    fn add(&mut self, what: &'static str) {
        self.add_n(what, 1);
    }

    fn add_n(&mut self, what: &'static str, n: u64) {
        *self.0.entry(what).or_default() += n;
    }
}

/// A client that retries a paid request with the same key until it gets an answer that is
/// not a server error (a person's app would).
/// About two and a half check-and-edit reservations of the sample photo (≈ 142,500 µ$ each
/// at the stand-in's sizes; a delivered edit costs ≈ 69,400 µ$), so a user with several
/// jobs in flight, or five delivered edits, meets it.
const CHAOS_USER_SHARE_MICROS: i64 = 360_000;

async fn persist(send: impl Fn() -> futures::future::BoxFuture<'static, Reply>) -> Reply {
    let mut last = send().await;
    for _ in 0..8 {
        if !last.status.is_server_error() && last.status != StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        // Waiting seconds will not bring a new day: a client stops here.
        if last.code() == "DAILY_LIMIT_REACHED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        last = send().await;
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn money_invariants_hold_under_faults() {
    let seed = chaos_seed();
    let jobs = env_u64("CHAOS_JOBS", 60) as usize;
    println!("chaos: seed {seed}, {jobs} jobs");
    // Two streams: what each batch plans (submits, purchases, races) never depends on how
    // the last batch's calls came out, so a seed gives the same plan on a busy machine; the
    // faults drawn per delivered job take the other stream.
    let mut schedule = StdRng::seed_from_u64(seed);
    let mut rng = StdRng::seed_from_u64(seed.rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15);
    let mut tally = Tally::default();

    // A stack of its own; `clean` checks the books, `faulty` talks through the wire proxy.
    // The user share binds for the busier users (rule 12).
    let stripe = StripeStandIn::start().await;
    let store = AppStoreStandIn::new();
    let google = GoogleStandIn::start().await;
    let push = PushStandIn::start().await;
    let clean = Harness::isolated_with(|c| {
        c.limits.max_in_flight = 6;
        c.limits.user_daily_share_micros = Micros::new(CHAOS_USER_SHARE_MICROS);
        c.limits.breaker = CHAOS_BREAKER;
        app_store::sell_on(c, &store);
        google_play::sell_on(c, &google);
        // One Android purchase in five is unbound: accepted here, so it still races through
        // the grant under faults (the refusal writes nothing; google_purchases.rs shows it).
        c.payments.unbound_store_purchases = UnboundPurchases::Accept;
    })
    .await
    .with_stripe(&stripe)
    .with_google_play(&google);
    let endpoint = clean
        .app
        .config
        .resources
        .queue_url
        .split("/000000000000/")
        .next()
        .unwrap_or_default()
        .to_owned();
    let plan = FaultPlan::new(seed)
        .rate(FaultKind::TransactionConflict, 0.03)
        .rate(FaultKind::Throttling, 0.02)
        .rate(FaultKind::ProvisionedThroughputExceeded, 0.01)
        .rate(FaultKind::InternalError, 0.01)
        .rate(FaultKind::DropAfterForward, 0.01)
        .rate(FaultKind::Latency, 0.02);
    let proxy = Proxy::start(&endpoint, Some(plan.clone()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // The killed webhook deliverers' own wire: the same kinds, a seed of its own.
    let doomed_wire = Proxy::start(
        &endpoint,
        Some(FaultPlan {
            seed: seed ^ 0xdead,
            ..plan
        }),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    // Each function signs as itself, so the proxy records which function made each AWS call
    // (the IAM check of infra/iam evaluates them against each role's policies).
    proxy.record(Attribution::AccessKey);
    doomed_wire.record(Attribution::AccessKey);
    let mut phases = Phases::start(jobs as u64);
    let function = |name: &'static str, url: String| {
        let config = clean.app.config.clone();
        async move {
            let clients = iam::clients_as(name, &url).await;
            Harness {
                app: App::new(config, &clients),
                clients,
            }
        }
    };
    let faulty = function("api", proxy.url())
        .await
        .with_stripe(&stripe)
        .with_google_play(&google);
    let consumer = function("consumer", proxy.url()).await;
    let mut sweeper = function("sweeper", proxy.url()).await;
    sweeper.app = sweeper.app.with_pusher(Some(
        push.pusher_timing_out_after(push_faults::PUSH_TIMEOUT),
    ));
    let mut doomed = function("sweeper", doomed_wire.url()).await;
    doomed.app = doomed.app.with_pusher(Some(
        push.pusher_timing_out_after(push_faults::PUSH_TIMEOUT),
    ));
    let doomed = doomed::Doomed::new(doomed, doomed_wire);
    let wires = [&proxy, &doomed.wire];
    // Two providers for every call: `model` first (over OpenAI's wire), `second` after a
    // definite failure of the first or while its breaker is open (over Gemini's).
    let (model, second) = (StandIn::start().await, StandIn::start().await);
    // Model calls wait long enough for a busy machine; a `timeout` fault gets a consumer
    // whose calls give up after half a second (the fault holds its request for twice that).
    let processor = consumer.processor_with_failover(&model, &second, Duration::from_secs(60));
    let impatient = consumer.processor_with_failover(&model, &second, MODEL_TIMEOUT);

    // Users with balances for about three quarters of their jobs.
    let mut users: Vec<UserId> = (0..(jobs / 5).max(2)).map(|_| clean.user()).collect();
    let mut buyers = Vec::new();
    for u in &users {
        clean.fund_to(u, 14).await;
        // What the apps buy with: the account's token, as GET /v1/account gives it.
        buyers.push((u.clone(), clean.app_account_token(u).await));
    }
    // Their phones: pushes of their events, with dead tokens among them.
    let pushes = push_faults::PushFaults::start(push, &clean, &users, &mut rng, &mut tally).await;
    // Two healthy webhook receivers: every finished job's event must reach each once.
    let receivers = HookReceivers::add(&clean).await;
    let photo = samples::single_pet();
    let ambiguous = samples::two_pets();
    let mut originals = BTreeMap::new();
    // Each upload's SHA-256: what a job created with it must keep as its input.
    let mut photo_sha: BTreeMap<String, String> = BTreeMap::new();
    for u in &users {
        let (pet, two) = (
            clean.upload(u, "original", photo.clone()).await,
            clean.upload(u, "original", ambiguous.clone()).await,
        );
        photo_sha.insert(pet.clone(), sha256(&photo));
        photo_sha.insert(two.clone(), sha256(&ambiguous));
        originals.insert(u.clone(), (pet, two));
    }
    // Every edit's original as it was created (repairs edit from their root's).
    let mut created_with: BTreeMap<String, String> = BTreeMap::new();

    let day = budget::day_of(clock::now());
    let mut all_jobs: Vec<(UserId, String)> = Vec::new();
    let mut purchases: Vec<Purchase> = Vec::new();
    let mut apple_buys: Vec<apple::AppleBuy> = Vec::new();
    let mut google_buys: Vec<google::GoogleBuy> = Vec::new();
    let mut races: Vec<SignupRace> = Vec::new();
    // Purchases whose refund or dispute comes later: (purchase, batch it comes in).
    let mut awaiting_reversal: Vec<(usize, usize)> = Vec::new();
    let batch = 10usize;
    // The batch holding the middle job (`jobs / 2` itself at 250 jobs was no batch's start,
    // so the day was never halted and the class never fired).
    let middle = jobs / 2 / batch * batch;
    let mut done = 0usize;
    while done < jobs {
        let n = batch.min(jobs - done);
        // The budget: halted for one batch in the middle, exhausted near the end.
        // An injection that fails is the harness's error: tried again, then the run fails
        // (never tallied as done).
        let scope = budget::Scope::Day(day.clone());
        if done == middle {
            inject("halting the day", || {
                budget::set_halted(&clean.app, &scope, true)
            })
            .await;
            tally.add("budget_halted_batches");
        } else if done == middle + batch {
            inject("resuming the day", || {
                budget::set_halted(&clean.app, &scope, false)
            })
            .await;
        }
        if done >= jobs * 4 / 5 && !tally.0.contains_key("budget_cap_lowered") {
            let d = inject("reading the day", || budget::day(&clean.app, &day)).await;
            let cap = d
                .used_micros
                .saturating_add(d.reserved_micros)
                .saturating_add(Micros::new(40_000));
            inject("lowering the cap", || {
                budget::set_cap(&clean.app, &scope, cap)
            })
            .await;
            tally.add("budget_cap_lowered");
        }

        // Submits: retried with the same key, sometimes twice at once, sometimes a key
        // reused with another body.
        let mut submits = Vec::new();
        for i in 0..n {
            let user = users[schedule.gen_range(0..users.len())].clone();
            let (pet, two) = originals[&user].clone();
            let original = if schedule.gen_bool(0.1) { two } else { pet };
            let key = format!("chaos-{seed}-{}", done + i);
            let mut body =
                json!({ "style": "embroidery", "target": "pet", "original_asset_id": original });
            // One in eight looks first (a preview): by position, so the seeded draws stay
            // the same.
            if (done + i) % 8 == 3 {
                body["preview"] = json!(true);
            }
            let twice = schedule.gen_bool(0.3);
            let reuse = schedule.gen_bool(0.1);
            let cancel = schedule.gen_bool(0.05);
            submits.push((user, key, body, twice, reuse, cancel));
        }
        // Purchases by some of the same users, at the same time as their submits.
        let mut buys = Vec::new();
        for i in 0..n {
            if schedule.gen_bool(0.15) {
                let key = format!("chaos-buy-{seed}-{}", done + i);
                buys.push(PurchasePlan::draw(&mut schedule, &users, key));
            }
        }
        let buying = join_all(
            buys.iter()
                .map(|plan| purchase_with_faults(&faulty, &stripe, plan)),
        );
        // iPhone purchases too, their refunds out of order.
        let mut apple_plans = Vec::new();
        for _ in 0..n {
            if schedule.gen_bool(0.15) {
                apple_plans.push(apple::AppleBuy::draw(&mut schedule, &store, &buyers));
            }
        }
        let buying_apple = join_all(
            apple_plans
                .into_iter()
                .map(|b| apple::app_store_with_faults(&faulty, b)),
        );
        // Android purchases, Google failing some calls, their voids out of order.
        let mut google_plans = Vec::new();
        for _ in 0..n {
            if schedule.gen_bool(0.15) {
                google_plans.push(google::GoogleBuy::draw(&mut schedule, &google, &buyers));
            }
        }
        google::google_faults(&mut schedule, &google, &mut tally);
        let buying_google = join_all(
            google_plans
                .into_iter()
                .map(|b| google::google_play_with_faults(&faulty, b)),
        );
        // Earlier purchases refunded or disputed now, some after their credits were spent.
        let this_batch = done / batch;
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut awaiting_reversal)
            .into_iter()
            .partition(|&(_, at)| at <= this_batch);
        awaiting_reversal = later;
        let late: Vec<usize> = due.into_iter().map(|(i, _)| i).collect();
        let reversing = join_all(late.iter().map(|&i| deliver_late(&faulty, &purchases[i])));
        let submitting = join_all(submits.iter().map(|(user, key, body, twice, _, _)| {
            let (h, user, key, body) = (&faulty, user.clone(), key.clone(), body.clone());
            async move {
                let one = || {
                    let (user, key, body) = (user.clone(), key.clone(), body.clone());
                    let h = Harness {
                        app: h.app.clone(),
                        clients: h.clients.clone(),
                    };
                    Box::pin(async move { h.submit(&user, Some(&key), &body).await })
                        as futures::future::BoxFuture<'static, Reply>
                };
                if *twice {
                    let (a, b) = futures::join!(persist(one), persist(one));
                    vec![a, b]
                } else {
                    vec![persist(one).await]
                }
            }
        }));
        let race = schedule
            .gen_bool(0.4)
            .then(|| SignupRace::draw(&mut schedule, &clean, done));
        let racing = async {
            if let Some(r) = &race {
                signup_race_with_faults(&faulty, r).await;
            }
        };
        let (bought, late_sent, replies, (), (bought_apple, bought_google)) = futures::join!(
            buying,
            reversing,
            submitting,
            racing,
            futures::future::join(buying_apple, buying_google)
        );
        for b in bought_apple {
            b.tally(&mut tally);
            apple_buys.push(b);
        }
        for b in bought_google {
            b.tally(&mut tally);
            google_buys.push(b);
        }
        if let Some(r) = race {
            tally.add("signup_races");
            tally.add_n("signup_race_subs", r.users.len() as u64);
            if r.delete_first {
                tally.add("signup_race_with_deletion");
            }
            races.push(r);
        }
        tally.add_n("purchase_reversals_batches_later", late.len() as u64);
        tally.add_n("purchase_webhook_deliveries", late_sent.iter().sum());
        tally.add_n(
            "purchase_webhook_redeliveries",
            late.iter()
                .zip(&late_sent)
                .map(|(&i, n)| n.saturating_sub(purchases[i].later.len() as u64))
                .sum(),
        );
        for p in bought.into_iter().flatten() {
            if !p.plan.reversal_first && !p.later.is_empty() {
                awaiting_reversal.push((purchases.len(), this_batch + p.plan.reversal_in));
            }
            tally.add("purchases");
            tally.add(p.plan.reversal.tally());
            if p.recorded_first {
                tally.add("purchase_reversal_recorded_before_payment");
            }
            if p.plan.reversal_first {
                tally.add("purchase_reversal_delivered_first");
            }
            tally.add_n("purchase_webhook_deliveries", p.deliveries);
            tally.add_n("purchase_webhook_redeliveries", p.redeliveries);
            purchases.push(p);
        }
        let mut queued = Vec::new();
        for ((user, key, body, twice, reuse, cancel), replies) in submits.iter().zip(replies) {
            if *twice {
                tally.add("concurrent_duplicate_submits");
            }
            for r in &replies {
                tally.add(match r.status.as_u16() {
                    202 => "submit_202",
                    200 => "submit_200_replay",
                    402 => "submit_402",
                    403 if r.code() == "ACCOUNT_ON_HOLD" => "submit_403_on_hold",
                    429 if r.code() == "DAILY_LIMIT_REACHED" => "submit_429_daily_limit",
                    429 => "submit_429",
                    409 => "submit_409",
                    s if s >= 500 => "submit_5xx_after_retries",
                    _ => "submit_other",
                });
            }
            let Some(id) = replies
                .iter()
                .find(|r| r.status.is_success())
                .map(|r| r.str("id"))
            else {
                continue;
            };
            all_jobs.push((user.clone(), id.clone()));
            let original = body["original_asset_id"].as_str().unwrap_or_default();
            created_with.insert(id.clone(), photo_sha[original].clone());
            if *reuse {
                // The other photo, so a reuse that overwrote the job's inputs would show.
                let (pet, two) = &originals[user];
                let photo = if original == pet { two } else { pet };
                let other =
                    json!({ "style": "origami", "target": "pet", "original_asset_id": photo });
                let r = faulty.submit(user, Some(key), &other).await;
                if r.status.is_success() {
                    panic!("seed {seed}: key {key} reused with another body was accepted: {r:?}");
                }
                tally.add("key_reused_with_other_body");
            }
            if *cancel {
                faulty.cancel(user, &id).await;
                tally.add("cancel_attempts");
            }
            queued.push((user.clone(), id));
        }

        // Deliveries: model faults per job, consumers dying at a step, duplicates at once;
        // in some batches the first provider is down for every call (definitely or not).
        let outage = Outage::of_batch(this_batch);
        outage.start(&model, &mut tally).await;
        let mut runs = Vec::new();
        for (_, id) in &queued {
            let mut p = match outage {
                Outage::Ambiguous => impatient.clone(),
                Outage::None | Outage::Definite | Outage::Gateway => processor.clone(),
            };
            if rng.gen_bool(0.3) {
                let (call, fault) = MODEL_FAULTS[rng.gen_range(0..MODEL_FAULTS.len())];
                let mut rule = json!({ "call": call, "fault": fault, "job": id });
                if fault == "timeout" {
                    rule["ms"] = json!(MODEL_HELD_MS);
                    p = impatient.clone();
                }
                model.fault(rule).await;
                tally.add("model_faults");
            }
            if rng.gen_bool(0.12) {
                p.crash_at = Some(STEPS[rng.gen_range(0..STEPS.len())]);
                tally.add("consumer_crashes");
            }
            let copies = if rng.gen_bool(0.2) { 2 } else { 1 };
            if copies == 2 {
                tally.add("concurrent_duplicate_deliveries");
            }
            for _ in 0..copies {
                runs.push((p.clone(), id.clone()));
            }
        }
        join_all(runs.iter().map(|(p, id)| async move {
            if let Some(id) = JobId::parse(id) {
                let _ = p.process(&id).await;
            }
        }))
        .await;
        if outage != Outage::None {
            model.clear_faults().await;
        }
        tally.add(breaker_phase(&clean).await);

        // Repairs of some delivered edits, retried like submits.
        for (user, id) in &queued {
            if !rng.gen_bool(0.25) {
                continue;
            }
            let verdict =
                ["compare_improved", "compare_unchanged", "compare_worse"][rng.gen_range(0..3)];
            let key = format!("chaos-repair-{seed}-{id}");
            let reply = persist(|| {
                let (user, id, key) = (user.clone(), id.clone(), key.clone());
                let h = Harness {
                    app: faulty.app.clone(),
                    clients: faulty.clients.clone(),
                };
                Box::pin(async move {
                    h.repair(
                        &user,
                        &id,
                        &key,
                        &json!({ "instruction": "finer stitches" }),
                    )
                    .await
                }) as futures::future::BoxFuture<'static, Reply>
            })
            .await;
            tally.add(if reply.status.is_success() {
                "repairs_accepted"
            } else {
                "repairs_refused"
            });
            if reply.status.is_success() {
                let rid = reply.str("id");
                all_jobs.push((user.clone(), rid.clone()));
                model
                    .fault(json!({ "call": "compare", "fault": verdict, "job": rid }))
                    .await;
                if let Some(rid) = JobId::parse(&rid) {
                    let _ = processor.process(&rid).await;
                }
            }
        }
        done += n;
    }
    phases.mark("batches", &wires);

    // Settle: deliver what is still queued, then two sweepers at once with the clock moved
    // past the stuck threshold, until nothing is in flight.
    let scope = budget::Scope::Day(day.clone());
    inject("resuming the day", || {
        budget::set_halted(&clean.app, &scope, false)
    })
    .await;
    let mut rounds = 0;
    let mut unsettled = all_jobs.clone();
    loop {
        rounds += 1;
        let pending = unsettled_jobs(&clean, unsettled).await;
        if pending.is_empty() || rounds > 6 {
            break;
        }
        for (_, id, status) in &pending {
            if status == "queued"
                && let Some(id) = JobId::parse(id)
            {
                let _ = processor.process(&id).await;
            }
        }
        // A job that left queued and processing never comes back: only these are read again.
        unsettled = pending
            .into_iter()
            .map(|(user, id, _)| (user, id))
            .collect();
        let later = clock::now() + Duration::from_secs(16 * 60 * rounds);
        futures::join!(
            atelier_sweeper::handle(&sweeper.app, later),
            atelier_sweeper::handle(&sweeper.app, later)
        );
        tally.add("sweep_pairs");
    }
    // A last clean sweep settles reservations the faulty sweeps could not.
    atelier_sweeper::handle(
        &clean.app,
        clock::now() + Duration::from_secs(16 * 60 * (rounds + 1)),
    )
    .await;

    // One orphan for certain, whatever the random crashes left (the IAM check needs the
    // sweeper's settlement in every run, not only when a crash happened to leave one).
    let orphan_owner = clean.user();
    clean.fund_to(&orphan_owner, 14).await;
    let orphan = orphan_for_the_sweeper(
        (&clean, &sweeper, &proxy),
        &processor,
        (&scope, &day),
        &orphan_owner,
        clock::now() + Duration::from_secs(16 * 60 * (rounds + 2)),
        &mut tally,
    )
    .await;
    created_with.insert(orphan.clone(), sha256(&photo));
    all_jobs.push((orphan_owner.clone(), orphan));
    users.push(orphan_owner);

    // Stripe keeps retrying what was not taken: every event is delivered until taken.
    for p in &purchases {
        for event in p.events() {
            let taken = clean.deliver_until_taken(event, 20).await;
            if !taken.status.is_success() {
                panic!("seed {seed}: an event is never taken: {taken:?}");
            }
        }
    }

    // The apps resubmit and Apple and Pub/Sub redeliver until taken.
    stores::settle(&clean, apple_buys.iter().map(|b| (&b.plan, b))).await;
    stores::settle(&clean, google_buys.iter().map(|b| (&b.plan, b))).await;
    phases.mark("settle", &wires);

    let hook_events = webhooks_with_faults(
        (&clean, &sweeper, &doomed),
        (&receivers, &pushes),
        &mut rng,
        &mut tally,
    )
    .await;

    phases.mark("webhooks", &wires);
    let mut calls = proxy.calls();
    for (call, n) in doomed.wire.calls() {
        *calls.entry(call).or_default() += n;
    }
    iam::write_recording("chaos", &clean.app.config.resources, &calls);

    // The checks.
    let mut violations: Vec<String> = Vec::new();
    signup_checks(&clean, &races, &mut violations).await;
    let mut histories = BTreeMap::new();
    let audit = atelier_shared::services::audit::audit(&clean.app)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    for o in &audit.offenders {
        violations.push(format!("books: {o:?}"));
    }
    let mut ledgers = BTreeMap::new();
    for u in &users {
        ledgers.insert(u.clone(), clean.ledger(u).await);
    }
    let mut states: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut failures: BTreeMap<String, u64> = BTreeMap::new();
    for (user, id) in &all_jobs {
        let job = match JobId::parse(id) {
            Some(j) => checked_read(|| clean.app.store.get_job(&j)).await,
            None => Ok(None),
        };
        let job: Job = match job {
            Ok(Some(job)) => job,
            Ok(None) => {
                violations.push(format!("{id}: charged job is missing"));
                continue;
            }
            Err(e) => {
                violations.push(format!("{id}: charged job is unreadable: {e}"));
                continue;
            }
        };
        *states.entry(job.status().as_str()).or_default() += 1;
        if let Some(f) = job.failure() {
            *failures.entry(f.code.as_str().to_owned()).or_default() += 1;
        }
        let rows: Vec<_> = ledgers[user]
            .iter()
            .filter(|r| r.job_id.as_ref().is_some_and(|j| j.as_str() == id))
            .collect();
        let debits = rows.iter().filter(|r| r.kind == LedgerKind::Debit).count();
        let refunds = rows.iter().filter(|r| r.kind == LedgerKind::Refund).count();
        let refundable = matches!(job.status(), JobState::Failed | JobState::Canceled);
        let (first, failover) = (model.calls(id).await, second.calls(id).await);
        let calls = atelier_tests::JobCalls {
            check: first.check + failover.check,
            edit: first.edit + failover.edit,
            review: first.review + failover.review,
            compare: first.compare + failover.compare,
        };
        paid_call_checks(&clean, &job, calls, &mut tally, &mut violations).await;
        preview_checks(&job, calls, &mut tally, &mut violations);
        if !job.status().is_terminal() {
            violations.push(format!("{id}: still {}", job.status().as_str()));
        }
        if debits != 1 {
            violations.push(format!("{id}: {debits} debits"));
        }
        if refunds > 1 || (refunds == 1 && !refundable) || (refundable && refunds != 1) {
            violations.push(format!(
                "{id}: {refunds} refunds for a {} job",
                job.status().as_str()
            ));
        }
        if first.edit > 1 || failover.edit > 1 {
            violations.push(format!(
                "{id}: edit calls {} on the first provider and {} on the second for one charge",
                first.edit, failover.edit
            ));
        }
        let events = webhook_events_of(&clean, id).await;
        if job.status().is_terminal() && events != [job.status().as_str()] {
            violations.push(format!(
                "{id}: {} but webhook events {events:?}",
                job.status().as_str()
            ));
        }
        if job.status().is_terminal() {
            webhook_delivery_checks(&receivers, id, &events, &mut tally, &mut violations);
        }
        if let Some(sha) = created_with.get(id) {
            kept_input_check(&clean, &job, sha, calls, &mut violations).await;
        }
        histories.insert(id.clone(), (job.status(), debits, refunds, calls));
    }
    budget_day_checks(&clean, &day, &mut violations).await;

    user_share_checks(&clean, &users, &day, &mut violations).await;
    purchase_checks(&clean, &purchases, &ledgers, &mut violations).await;
    apple::app_store_checks(&clean, &apple_buys, &ledgers, &mut violations).await;
    google::google_play_checks(&clean, &google, &google_buys, &ledgers, &mut violations).await;
    pushes
        .checks(&clean, &hook_events, &mut tally, &mut violations)
        .await;
    for u in &users {
        let balance = clean.balance(u).await;
        if balance < 0 {
            violations.push(format!("{u}: balance {balance} below zero"));
        }
    }

    let wire: BTreeMap<&'static str, usize> =
        wires
            .iter()
            .flat_map(|w| w.faults())
            .fold(BTreeMap::new(), |mut m, f| {
                *m.entry(f.kind.as_str()).or_default() += 1;
                m
            });
    println!(
        "chaos: seed {seed}: {} jobs charged, states {states:?}",
        all_jobs.len()
    );
    println!("chaos: failure codes {failures:?}");
    println!("chaos: schedule {:?}", tally.0);
    println!(
        "chaos: wire faults {wire:?} over {} requests",
        wires.iter().map(|w| w.counts().total()).sum::<u64>()
    );
    println!(
        "chaos: stand-in calls {:?}, on the second provider {:?}",
        model.counts().await.total,
        second.counts().await.total
    );
    let mut fired = tally.0.clone();
    for (kind, n) in &wire {
        fired.insert(wire_class(kind), *n as u64);
    }
    let unfired = floor_shortfalls(&fired, jobs as u64);
    for short in &unfired {
        println!("chaos: FAULT CLASS DID NOT FIRE: {short}");
        violations.push(format!("floor: {short}"));
    }
    if unfired.is_empty() {
        println!(
            "chaos: every fault class fired at its floor ({} classes at {jobs} jobs)",
            FAULT_CLASSES.len()
        );
    }
    phases.mark("checks", &wires);
    phases.print();
    if !violations.is_empty() {
        for v in &violations {
            let id = v.split(':').next().unwrap_or_default();
            println!("VIOLATION {v}; history {:?}", histories.get(id));
        }
        panic!(
            "chaos: seed {seed}: {} violations (rerun with CHAOS_SEED={seed})",
            violations.len()
        );
    }
    println!("chaos: seed {seed}: 0 violations");
}

/// Where the run's time and the functions' AWS requests go, phase by phase (issue 48): wall
/// time and the requests through the faulty wire (the api's, consumer's and sweeper's; the
/// harness's own reads and checks go straight to the emulator and are not counted).
struct Phases {
    jobs: u64,
    since: std::time::Instant,
    requests_before: u64,
    done: Vec<(&'static str, Duration, u64)>,
}

impl Phases {
    fn start(jobs: u64) -> Phases {
        Phases {
            jobs: jobs.max(1),
            since: std::time::Instant::now(),
            requests_before: 0,
            done: Vec::new(),
        }
    }

    fn mark(&mut self, name: &'static str, wires: &[&Proxy]) {
        let total = wires.iter().map(|w| w.counts().total()).sum::<u64>();
        let took = self.since.elapsed();
        self.done.push((name, took, total - self.requests_before));
        (self.since, self.requests_before) = (std::time::Instant::now(), total);
    }

    fn print(&self) {
        for (name, took, requests) in &self.done {
            println!(
                "chaos: phase {name}: {:.1} s, {requests} requests through the wire ({:.1} a job)",
                took.as_secs_f64(),
                *requests as f64 / self.jobs as f64
            );
        }
    }
}

/// The `timeout` class: how long the impatient consumer waits for a model call, and how long
/// the fault holds one (twice that: the answer always comes after the consumer gave up). The
/// job's other calls go through the same consumer, so the wait is kept above a loaded
/// machine's ordinary call; the class costs a held call half a second, not one.
const MODEL_TIMEOUT: Duration = Duration::from_millis(500);
const MODEL_HELD_MS: u64 = 1_000;

/// The breaker of the chaos run's providers: opened by three definite failures in a row, a
/// probe two seconds later, so a batch of outage opens it and the batches after it see it
/// half-open, probed, and closed again.
const CHAOS_BREAKER: BreakerSettings = BreakerSettings {
    failures: 3,
    cooldown_ms: 2_000,
};

/// The provider-outage class: batches during which the first provider fails every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outage {
    None,
    /// The provider's own JSON 503 ("overloaded") for every call: definite, failed over, and
    /// it opens the breaker.
    Definite,
    /// A CDN's HTML 502 for every call: ambiguous (the model behind it may be generating),
    /// booked at its reservation, never failed over, and the breaker does not count it.
    Gateway,
    /// Every call held past the consumer's timeout: ambiguous, never failed over, and the
    /// breaker neither opens nor closes on it.
    Ambiguous,
}

impl Outage {
    /// Two batches in ten definitely down (the breaker opens, is probed while still down,
    /// and closes after), two ambiguously (the first batch, with the breaker closed, timing
    /// out; the sixth behind a failing CDN).
    fn of_batch(batch: usize) -> Outage {
        match batch % 10 {
            1 | 2 => Outage::Definite,
            0 => Outage::Ambiguous,
            5 => Outage::Gateway,
            _ => Outage::None,
        }
    }

    async fn start(self, model: &StandIn, tally: &mut Tally) {
        match self {
            Outage::None => {}
            Outage::Definite => {
                model
                    .fault(json!({ "call": "any", "fault": "error_503" }))
                    .await;
                tally.add("provider_outage_batches_definite");
            }
            Outage::Gateway => {
                model
                    .fault(json!({ "call": "any", "fault": "html_502" }))
                    .await;
                tally.add("provider_outage_batches_gateway");
            }
            Outage::Ambiguous => {
                model
                    .fault(json!({ "call": "any", "fault": "timeout", "ms": MODEL_HELD_MS }))
                    .await;
                tally.add("provider_outage_batches_ambiguous");
            }
        }
    }
}

/// The jobs of `jobs` still queued or processing, with their status, in `jobs`' order: read
/// a few at a time. A job whose read failed is kept (read again next round), never taken as
/// settled.
async fn unsettled_jobs(h: &Harness, jobs: Vec<(UserId, String)>) -> Vec<(UserId, String, String)> {
    use futures::StreamExt;
    futures::stream::iter(jobs)
        .map(|(user, id)| async move {
            let job = h.job(&user, &id).await;
            let status = match job.status {
                StatusCode::OK => job.str("status"),
                _ => "unread".to_owned(),
            };
            (user, id, status)
        })
        .buffered(8)
        .filter(|(_, _, status)| {
            std::future::ready(["queued", "processing", "unread"].contains(&status.as_str()))
        })
        .collect()
        .await
}

/// The first provider's breaker after a batch, as a tally key.
async fn breaker_phase(h: &Harness) -> &'static str {
    let now = breaker::unix_ms(clock::now());
    match breaker::state(&h.app, Provider::OpenAi).await {
        Ok(s) => match s.phase(now, &h.app.config.limits.breaker) {
            Phase::Closed => "breaker_closed_after_batch",
            Phase::Open => "breaker_open_after_batch",
            Phase::HalfOpen => "breaker_half_open_after_batch",
        },
        Err(_) => "breaker_unreadable_after_batch",
    }
}

/// Rule 15 at rest, from the job's attempts: no call kind paid twice for one charge (a call
/// counts as paid unless it is booked free: skipped, or a definite failure); no failover after
/// an ambiguous outcome; every call a failover made was planned (reserved) first.
/// A job that reached the model (a stand-in counted a call for it, or it succeeded) has
/// attempt rows: the reservation comes before the call. A read that fails is a violation.
async fn paid_call_checks(
    h: &Harness,
    job: &Job,
    calls: atelier_tests::JobCalls,
    tally: &mut Tally,
    violations: &mut Vec<String>,
) {
    let id = &job.job_id;
    let attempts = match checked_read(|| h.app.store.attempts_of(id)).await {
        Ok(a) => a,
        Err(e) => {
            violations.push(format!("{id}: its attempts are unreadable: {e}"));
            return;
        }
    };
    let reached_model = calls.check + calls.edit + calls.review + calls.compare > 0
        || job.status() == JobState::Succeeded;
    if reached_model && attempts.is_empty() {
        violations.push(format!(
            "{id}: reached the model ({calls:?}, {}) with no attempt row",
            job.status().as_str()
        ));
    }
    let mut paid: BTreeMap<&str, u32> = BTreeMap::new();
    for a in &attempts {
        for (key, call) in &a.calls {
            let kind = key.split('@').next().unwrap_or(key);
            if call.outcome == "skipped" {
                continue;
            }
            if !a.planned.contains(key) {
                violations.push(format!(
                    "{id}: call {key} made without being planned: {a:?}"
                ));
            }
            if key.contains('@') {
                tally.add("calls_failed_over");
                if a.calls.get(kind).is_some_and(|c| c.cost_micros.is_none()) {
                    violations.push(format!("{id}: {key} failed over after an ambiguous {kind}"));
                }
                if a.calls.get(kind).is_some_and(|c| c.outcome == "skipped") {
                    tally.add("calls_passed_over_open_breaker");
                }
            }
            if call.cost_micros != Some(Micros::ZERO) {
                *paid.entry(kind).or_default() += 1;
            }
        }
    }
    for (kind, n) in paid {
        if n > 1 {
            violations.push(format!("{id}: {n} paid {kind} calls for one charge"));
        }
    }
}

/// A preview draws nothing and delivers nothing, whatever happened to it; one that showed its
/// area is counted.
fn preview_checks(
    job: &Job,
    calls: atelier_tests::JobCalls,
    tally: &mut Tally,
    violations: &mut Vec<String>,
) {
    if !job.request.preview {
        return;
    }
    tally.add("previews");
    if calls.edit + calls.review + calls.compare > 0 || job.status() == JobState::Succeeded {
        violations.push(format!(
            "{}: a preview drew ({calls:?}) or was {}",
            job.job_id,
            job.status().as_str()
        ));
    }
    if job
        .failure()
        .is_some_and(|f| f.code == atelier_shared::domain::FailureCode::Previewed)
    {
        tally.add("previews_shown");
    }
}

/// Rule 2 at rest: an edit's kept original is byte-identical to the photo it was created
/// with, whatever reused its key; a job that reached the model has one.
async fn kept_input_check(
    h: &Harness,
    job: &Job,
    created_with: &str,
    calls: atelier_tests::JobCalls,
    violations: &mut Vec<String>,
) {
    let kept = h
        .kept_input(&job.user_id, &job.job_id, AssetKind::Original)
        .await;
    let id = &job.job_id;
    match kept {
        Some(bytes) if sha256(&bytes) != created_with => violations.push(format!(
            "{id}: kept input {} is not the photo it was created with ({created_with})",
            sha256(&bytes)
        )),
        None if calls.check + calls.edit > 0 || job.status() == JobState::Succeeded => {
            violations.push(format!("{id}: edited without a kept input"));
        }
        _ => {}
    }
}

/// The final states a job has webhook events for (the outbox row of its end is written in the
/// same transaction, so exactly one, for the state it ended in).
async fn webhook_events_of(h: &Harness, id: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for state in [JobState::Succeeded, JobState::Failed, JobState::Canceled] {
        let (event, _) = h
            .app
            .store
            .webhook_event_rows(&format!("evt_{id}_{}", state.as_str()))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        if event.is_some() {
            found.push(state.as_str());
        }
    }
    found
}

/// Rule 12 at rest: every user's `used + reserved` within their item's share and within the
/// configured one ([`CHAOS_USER_SHARE_MICROS`]), each user's item equal to the sum of their
/// attempts, the users' items summing to the day's, and some user refused by the share (it
/// binds for the busier users, as the run promises). A read that fails is a violation.
async fn user_share_checks(h: &Harness, users: &[UserId], day: &str, violations: &mut Vec<String>) {
    let attempts = match checked_read(|| h.app.store.attempts_of_day(day)).await {
        Ok(a) => a,
        Err(e) => return violations.push(format!("the day's attempts are unreadable: {e}")),
    };
    let configured = Micros::new(CHAOS_USER_SHARE_MICROS);
    let (mut total_used, mut total_reserved, mut at_share) = (Micros::ZERO, Micros::ZERO, 0);
    for u in users {
        let mine: Vec<_> = attempts
            .iter()
            .filter(|a| a.user_id.as_ref() == Some(u))
            .collect();
        let item = match checked_read(|| h.app.store.get_user_day(day, u)).await {
            Ok(Some(item)) => item,
            Ok(None) if mine.is_empty() => continue,
            Ok(None) => {
                violations.push(format!("{u}: {} attempts but no day item", mine.len()));
                continue;
            }
            Err(e) => {
                violations.push(format!("{u}: the day item is unreadable: {e}"));
                continue;
            }
        };
        let spent = item.used_micros.saturating_add(item.reserved_micros);
        if spent > item.share_micros || spent > configured {
            violations.push(format!(
                "{u}: spend {spent} over the share (its item's {}, configured {configured}): {item:?}",
                item.share_micros
            ));
        }
        if item.refused_micros.is_some() {
            at_share += 1;
        }
        let settled: Micros = mine.iter().filter_map(|a| a.settled_cost_micros).sum();
        let open: Micros = mine
            .iter()
            .filter(|a| a.open_day.is_some())
            .map(|a| a.reserved_micros)
            .sum();
        if settled != item.used_micros || open != item.reserved_micros {
            violations.push(format!(
                "{u}: day item used {} reserved {} but attempts settle to {settled} with {open} open",
                item.used_micros, item.reserved_micros
            ));
        }
        total_used = total_used.saturating_add(item.used_micros);
        total_reserved = total_reserved.saturating_add(item.reserved_micros);
    }
    match checked_read(|| budget::day(&h.app, day)).await {
        Ok(d) if d.used_micros != total_used || d.reserved_micros != total_reserved => {
            violations.push(format!(
                "the users' items sum to used {total_used} reserved {total_reserved}, the day's item says {} / {}",
                d.used_micros, d.reserved_micros
            ));
        }
        Ok(_) => {}
        Err(e) => violations.push(format!("budget day {day}: unreadable: {e}")),
    }
    if at_share == 0 {
        violations.push(format!(
            "no user of {} reached the share of {configured}: rule 12 was not exercised",
            users.len()
        ));
    }
    println!(
        "chaos: user share {CHAOS_USER_SHARE_MICROS} µ$: {at_share} of {} users end the day refused by it; users' spend sums to the day's",
        users.len()
    );
}

/// The day at rest: `used + reserved <= cap`, its totals equal to the sum of its attempts, no
/// reservation left open. A read that fails is a violation, never a skipped check.
async fn budget_day_checks(h: &Harness, day: &str, violations: &mut Vec<String>) {
    let (d, attempts) = match futures::try_join!(
        checked_read(|| budget::day(&h.app, day)),
        checked_read(|| h.app.store.attempts_of_day(day))
    ) {
        Ok(read) => read,
        Err(e) => return violations.push(format!("budget day {day}: unreadable: {e}")),
    };
    if d.used_micros.saturating_add(d.reserved_micros) > d.cap_micros {
        violations.push(format!("budget over the cap: {d:?}"));
    }
    let settled: Micros = attempts.iter().filter_map(|a| a.settled_cost_micros).sum();
    let open: Vec<_> = attempts.iter().filter(|a| a.open_day.is_some()).collect();
    let open_reserved: Micros = open.iter().map(|a| a.reserved_micros).sum();
    if settled != d.used_micros || open_reserved != d.reserved_micros {
        violations.push(format!(
            "budget day {day}: used {} reserved {} but attempts settle to {settled} with {open_reserved} open",
            d.used_micros, d.reserved_micros
        ));
    }
    if !open.is_empty() {
        violations.push(format!("{} reservations left open", open.len()));
    }
    println!(
        "chaos: budget cap {} used {} reserved {} over {} attempts",
        d.cap_micros,
        d.used_micros,
        d.reserved_micros,
        attempts.len()
    );
}

/// How often a read of the harness's own checks, or an injection, is tried before it counts.
const HARNESS_TRIES: u32 = 5;

/// A read of the checks (through the clean clients, no wire faults), tried
/// [`HARNESS_TRIES`] times 200 ms apart: the last error, for the caller to report as a
/// violation. Never a skip.
async fn checked_read<T, E: std::fmt::Debug, F>(read: impl Fn() -> F) -> Result<T, String>
where
    F: std::future::Future<Output = Result<T, E>>,
{
    let mut last = None;
    for _ in 0..HARNESS_TRIES {
        match read().await {
            Ok(v) => return Ok(v),
            Err(e) => last = Some(format!("{e:?}")),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!(
        "{HARNESS_TRIES} tries failed, the last: {}",
        last.unwrap_or_default()
    ))
}

/// An injected fault (the budget halted, the cap lowered) that must take effect: tried as
/// [`checked_read`], then the run fails as the harness's error. A fault that was not injected
/// is never tallied as done.
async fn inject<T, E: std::fmt::Debug, F>(what: &str, act: impl Fn() -> F) -> T
where
    F: std::future::Future<Output = Result<T, E>>,
{
    checked_read(act)
        .await
        .unwrap_or_else(|e| panic!("chaos: harness error: {what}: {e}"))
}

/// A fault class of the schedule: its name and the tally keys that show it fired, each with
/// its floor per 1,000 jobs. At `jobs` jobs a key must reach `floor × jobs / 1,000` (rounded
/// down) and the class at least one over its keys: every class fires at the CI's 60 jobs
/// (with [`PINNED_SEED`]), and each variant in proportion at 1,000. The floors are a tenth to
/// a third of what a 1,000-job run counts, and at 60 jobs about half of what the pinned seed
/// counts, so a schedule change that starves a fault shows and timing does not.
struct FaultClass {
    name: &'static str,
    keys: &'static [(&'static str, u64)],
}

const FAULT_CLASSES: &[FaultClass] = &[
    FaultClass {
        name: "client retries at once and keys reused",
        keys: &[
            ("concurrent_duplicate_submits", 100),
            ("key_reused_with_other_body", 30),
        ],
    },
    FaultClass {
        name: "previews among the edits (drawn later from memory)",
        keys: &[("previews_shown", 30)],
    },
    FaultClass {
        name: "cancels right after submit",
        keys: &[("cancel_attempts", 15)],
    },
    FaultClass {
        name: "duplicate deliveries at once",
        keys: &[("concurrent_duplicate_deliveries", 50)],
    },
    FaultClass {
        name: "consumers dying after a step",
        keys: &[("consumer_crashes", 30)],
    },
    FaultClass {
        name: "stand-in model faults per job",
        keys: &[("model_faults", 80)],
    },
    FaultClass {
        name: "provider outage, definite (failed over)",
        keys: &[
            ("provider_outage_batches_definite", 20),
            ("calls_failed_over", 70),
        ],
    },
    FaultClass {
        name: "provider outage, ambiguous",
        keys: &[("provider_outage_batches_ambiguous", 10)],
    },
    FaultClass {
        name: "the day halted",
        keys: &[("budget_halted_batches", 1)],
    },
    FaultClass {
        name: "the cap exhausted",
        keys: &[("budget_cap_lowered", 1)],
    },
    FaultClass {
        name: "Stripe purchases reversed",
        keys: &[
            ("purchases", 50),
            ("purchases_refunded", 10),
            ("purchases_disputed_lost", 3),
            ("purchases_disputed_won", 3),
        ],
    },
    FaultClass {
        name: "Stripe events out of order",
        keys: &[
            ("purchase_reversal_delivered_first", 7),
            ("purchase_reversals_batches_later", 10),
        ],
    },
    FaultClass {
        name: "signup races",
        keys: &[("signup_races", 15), ("signup_race_with_deletion", 4)],
    },
    FaultClass {
        name: "App Store refunds out of order",
        keys: &[
            ("apple_purchases", 50),
            ("apple_refund_before_purchase", 15),
            ("apple_refund_with_purchase", 10),
            ("apple_refund_after_purchase_twice", 10),
            ("apple_refund_first_then_purchase_after_apple_gave_up", 15),
            ("apple_refund_recorded_before_its_purchase", 15),
        ],
    },
    FaultClass {
        name: "Google Play voids out of order",
        keys: &[
            ("google_purchases", 40),
            ("google_void_before_purchase", 12),
            ("google_void_with_purchase", 8),
            ("google_void_after_purchase_twice", 8),
            ("google_void_first_then_purchase_after_pubsub_gave_up", 12),
            ("google_void_recorded_before_its_purchase", 12),
        ],
    },
    FaultClass {
        name: "Google answering 503",
        keys: &[("google_publisher_503", 10), ("google_consume_503", 5)],
    },
    FaultClass {
        name: "webhook stream records dropped or doubled, deliverers killed",
        keys: &[
            ("webhook_stream_records_dropped", 100),
            ("webhook_stream_records_twice", 40),
            ("webhook_deliverers_killed", 50),
        ],
    },
    FaultClass {
        name: "push services failing, timing out, dead tokens",
        keys: &[
            ("push_answered_500", 1),
            ("push_held_past_timeout", 1),
            ("push_devices_dead", 7),
        ],
    },
    FaultClass {
        name: "wire faults",
        keys: &[
            ("wire_transaction_conflict", 100),
            ("wire_throttling", 100),
            ("wire_provisioned_throughput_exceeded", 100),
            ("wire_internal_error", 100),
            ("wire_drop_after_forward", 100),
            ("wire_latency", 100),
        ],
    },
];

/// A wire fault's kind as a tally key of [`FAULT_CLASSES`].
fn wire_class(kind: &str) -> &'static str {
    FAULT_CLASSES
        .iter()
        .flat_map(|c| c.keys)
        .map(|(key, _)| *key)
        .find(|key| key.strip_prefix("wire_") == Some(kind))
        .unwrap_or("wire_unlisted")
}

/// A job whose consumer dies right after the paid edit, its reservation left open, found by
/// the sweeper signing as itself with the wire faults paused: the sweeper fails it (refunded)
/// and settles the reservation from its saved usage. Returns the job's id.
async fn orphan_for_the_sweeper(
    (clean, sweeper, proxy): (&Harness, &Harness, &Proxy),
    processor: &atelier_shared::services::process::Processor,
    (scope, day): (&budget::Scope, &str),
    user: &UserId,
    later: Instant,
    tally: &mut Tally,
) -> String {
    let plan = proxy.plan();
    proxy.set_plan(None);
    // The cap was lowered to the day's spend near the end: an operator raises it by a dollar.
    let d = budget::day(&clean.app, day)
        .await
        .unwrap_or_else(|e| panic!("the day: {e:?}"));
    let cap = (d.used_micros)
        .saturating_add(d.reserved_micros)
        .saturating_add(Micros::new(1_000_000));
    budget::set_cap(&clean.app, scope, cap)
        .await
        .unwrap_or_else(|e| panic!("raising the cap: {e:?}"));
    let id = clean
        .submit_photo(
            user,
            "chaos-orphan",
            samples::single_pet(),
            json!({ "style": "embroidery", "target": "pet" }),
        )
        .await;
    let mut dying = processor.clone();
    dying.crash_at = Some(Step::AfterEdit);
    let job = JobId::parse(&id).unwrap_or_else(|| panic!("job id {id}"));
    assert!(
        dying.process(&job).await.is_err(),
        "{id}: the consumer dies after the edit"
    );
    let summary = atelier_sweeper::handle(&sweeper.app, later).await;
    proxy.set_plan(plan);
    assert!(
        summary.reservations_settled >= 1 && summary.stuck_failed >= 1,
        "the sweeper settles the orphan and fails its job: {summary:?}"
    );
    tally.add("orphans_settled_by_the_sweeper");
    id
}

/// Each class under its floor at `jobs` jobs, with what it counted: empty when every fault
/// class fired as often as the run's size promises.
fn floor_shortfalls(fired: &BTreeMap<&'static str, u64>, jobs: u64) -> Vec<String> {
    let count = |key: &str| fired.get(key).copied().unwrap_or(0);
    let mut short = Vec::new();
    for class in FAULT_CLASSES {
        let total: u64 = class.keys.iter().map(|(key, _)| count(key)).sum();
        if total == 0 {
            short.push(format!("{}: none of {:?} fired", class.name, class.keys));
        }
        for (key, per_thousand) in class.keys {
            let floor = per_thousand * jobs / 1_000;
            if count(key) < floor {
                short.push(format!(
                    "{}: {key} fired {} times, under its floor of {floor} at {jobs} jobs",
                    class.name,
                    count(key)
                ));
            }
        }
    }
    short
}

#[test]
fn fault_floors_scale_with_the_job_count_and_name_what_did_not_fire() {
    let mut fired: BTreeMap<&'static str, u64> = FAULT_CLASSES
        .iter()
        .flat_map(|c| c.keys)
        .map(|(key, per_thousand)| (*key, per_thousand * 60 / 1_000))
        .collect();
    // At 60 jobs a rare variant's floor is 0, but its class must fire once.
    fired.insert("budget_halted_batches", 1);
    fired.insert("budget_cap_lowered", 1);
    fired.insert("cancel_attempts", 1);
    fired.insert("provider_outage_batches_ambiguous", 1);
    fired.insert("signup_races", 1);
    fired.insert("google_publisher_503", 1);
    fired.insert("push_answered_500", 1);
    fired.insert("push_held_past_timeout", 1);
    fired.insert("purchase_reversal_delivered_first", 1);
    fired.insert("google_void_before_purchase", 1);
    assert_eq!(floor_shortfalls(&fired, 60), Vec::<String>::new());
    fired.insert("budget_cap_lowered", 0);
    assert_eq!(
        floor_shortfalls(&fired, 60),
        vec![r#"the cap exhausted: none of [("budget_cap_lowered", 1)] fired"#]
    );
    // The same counts are far under the floors of 1,000 jobs.
    assert!(floor_shortfalls(&fired, 1_000).len() > 30);
    assert_eq!(wire_class("throttling"), "wire_throttling");
    assert_eq!(wire_class("index_lag"), "wire_unlisted");
}

/// What Stripe says later about a purchase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reversal {
    Kept,
    Refunded,
    /// Disputed and closed `lost`: the reversal stays.
    DisputeLost,
    /// Disputed and closed `won`: the reversal is given back.
    DisputeWon,
}

impl Reversal {
    fn tally(self) -> &'static str {
        match self {
            Reversal::Kept => "purchases_kept",
            Reversal::Refunded => "purchases_refunded",
            Reversal::DisputeLost => "purchases_disputed_lost",
            Reversal::DisputeWon => "purchases_disputed_won",
        }
    }
}

/// One purchase of the schedule.
#[derive(Debug, Clone)]
struct PurchasePlan {
    user: UserId,
    key: String,
    /// Deliveries of the payment event at once (Stripe promises at least once).
    copies: usize,
    reversal: Reversal,
    /// The reversal's events are delivered before the payment's, then with it.
    reversal_first: bool,
    /// Otherwise they come this many batches later.
    reversal_in: usize,
}

impl PurchasePlan {
    fn draw(rng: &mut StdRng, users: &[UserId], key: String) -> PurchasePlan {
        let reversal = match rng.gen_range(0..100) {
            0..20 => Reversal::Refunded,
            20..28 => Reversal::DisputeLost,
            28..36 => Reversal::DisputeWon,
            _ => Reversal::Kept,
        };
        PurchasePlan {
            user: users[rng.gen_range(0..users.len())].clone(),
            key,
            copies: rng.gen_range(1..=5),
            reversal,
            reversal_first: reversal != Reversal::Kept && rng.gen_bool(0.4),
            reversal_in: rng.gen_range(1..=12),
        }
    }
}

/// Delivers a purchase's refund or dispute events, batches after the payment; the deliveries
/// it took.
async fn deliver_late(h: &Harness, p: &Purchase) -> u64 {
    let mut sent = 0;
    for e in &p.later {
        sent += deliver_as_stripe(h, e).await.1;
    }
    sent
}

/// A purchase as it happened.
struct Purchase {
    plan: PurchasePlan,
    session: String,
    payment: String,
    paid: Event,
    /// The reversal's events in Stripe's order (dispute, then its close).
    later: Vec<Event>,
    deliveries: u64,
    redeliveries: u64,
    /// Its first reversal event was recorded ahead of it (`reversed_first`): never granted.
    recorded_first: bool,
}

impl Purchase {
    fn events(&self) -> impl Iterator<Item = &Event> {
        std::iter::once(&self.paid).chain(&self.later)
    }
}

/// Delivers `event` until the API takes it, as Stripe retries a refused delivery (a 5xx from
/// a wire fault, or `409 PAYMENT_NOT_RECORDED` for a won dispute ahead of its reversal); the
/// last reply and how many deliveries it took.
async fn deliver_as_stripe(h: &Harness, event: &Event) -> (Reply, u64) {
    let mut sent = 1;
    let mut last = h.deliver(event).await;
    while !last.status.is_success() && sent < 40 {
        if last.status.is_client_error() && last.status != StatusCode::CONFLICT {
            break; // refused for good: the checks will find what is missing
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
        last = h.deliver(event).await;
        sent += 1;
    }
    (last, sent)
}

/// A checkout retried with its key, paid on the stand-in, its event delivered `copies` times
/// at once; refunds and disputes delivered before and with it when planned so, otherwise left
/// for a later batch (`deliver_late`), after the user may have spent the credits. `None` when
/// the checkout was refused (nothing was bought).
async fn purchase_with_faults(
    h: &Harness,
    stripe: &StripeStandIn,
    plan: &PurchasePlan,
) -> Option<Purchase> {
    let checkout = persist(|| {
        let (user, key) = (plan.user.clone(), plan.key.clone());
        let h = Harness {
            app: h.app.clone(),
            clients: h.clients.clone(),
        };
        Box::pin(async move { h.checkout(&user, &key, &json!({ "pack": "starter" })).await })
            as futures::future::BoxFuture<'static, Reply>
    })
    .await;
    if !checkout.status.is_success() {
        return None;
    }
    let session = checkout.str("id");
    let paid = stripe.pay(&session).await;
    let payment = paid.object("payment_intent");
    let later = match plan.reversal {
        Reversal::Kept => Vec::new(),
        Reversal::Refunded => vec![stripe.refund(&payment).await],
        Reversal::DisputeLost | Reversal::DisputeWon => {
            let dispute = stripe.dispute(&payment).await;
            let status = if plan.reversal == Reversal::DisputeWon {
                "won"
            } else {
                "lost"
            };
            let closed = stripe.close_dispute(&dispute.object("id"), status).await;
            vec![dispute, closed]
        }
    };
    let mut deliveries = 0;
    let mut recorded_first = false;
    if plan.reversal_first {
        for e in &later {
            let r = h.deliver(e).await;
            recorded_first |= r.body["outcome"] == "reversed_first";
            deliveries += 1;
        }
    }
    let payment_copies = join_all((0..plan.copies).map(|_| deliver_as_stripe(h, &paid)));
    let reversal = async {
        let mut sent = 0;
        if plan.reversal_first {
            for e in &later {
                sent += deliver_as_stripe(h, e).await.1;
            }
        }
        sent
    };
    let (copies, sent) = futures::join!(payment_copies, reversal);
    deliveries += sent + copies.iter().map(|(_, n)| n).sum::<u64>();
    let delivered = if plan.reversal_first { later.len() } else { 0 };
    let events = 1 + delivered as u64;
    Some(Purchase {
        plan: plan.clone(),
        session,
        payment,
        paid,
        later,
        deliveries,
        redeliveries: deliveries.saturating_sub(events),
        recorded_first,
    })
}

/// Each payment at rest: one `purchase:` row for its session; one reversal when refunded or
/// disputed, taking what the balance had and recording the rest as shortfall; one restore
/// when the dispute was won; a shortfall not given back leaves the account on hold. A payment
/// whose reversal was recorded ahead of it has no row at all (never granted, nothing kept).
async fn purchase_checks(
    h: &Harness,
    purchases: &[Purchase],
    ledgers: &BTreeMap<UserId, Vec<atelier_shared::store::schema::LedgerItem>>,
    violations: &mut Vec<String>,
) {
    let mut held = BTreeMap::new();
    let mut never_granted = 0;
    for p in purchases {
        let rows = ledgers.get(&p.plan.user).map(Vec::as_slice).unwrap_or(&[]);
        let find = |reference: String, kind: LedgerKind| -> Vec<_> {
            rows.iter()
                .filter(|r| r.reference == reference && r.kind == kind)
                .collect()
        };
        let bought = find(format!("purchase:{}", p.session), LedgerKind::Purchase);
        let reversed = find(
            format!("purchase_reversal:{}", p.payment),
            LedgerKind::PurchaseReversal,
        );
        let restored = find(
            format!("reversal_restored:{}", p.payment),
            LedgerKind::ReversalRestored,
        );
        let id = &p.payment;
        if bought.is_empty() && p.plan.reversal != Reversal::Kept {
            if !reversed.is_empty() || !restored.is_empty() {
                violations.push(format!("{id}: never granted but {reversed:?} {restored:?}"));
            }
            never_granted += 1;
            continue;
        }
        if p.recorded_first {
            violations.push(format!("{id}: its reversal came first but it was granted"));
        }
        if bought.len() != 1 || bought[0].amount.get() != 50 {
            violations.push(format!("{id}: purchase rows {bought:?}"));
            continue;
        }
        let want_reversal = p.plan.reversal != Reversal::Kept;
        if reversed.len() != usize::from(want_reversal) {
            violations.push(format!("{id}: {:?} but reversals {reversed:?}", p.plan));
            continue;
        }
        let want_restore = p.plan.reversal == Reversal::DisputeWon;
        if restored.len() != usize::from(want_restore) {
            violations.push(format!("{id}: {:?} but restores {restored:?}", p.plan));
        }
        let Some(r) = reversed.first() else {
            continue;
        };
        let shortfall = r.shortfall.map_or(0, |s| s.get());
        if -r.amount.get() + shortfall != 50 || r.amount.get() > 0 || shortfall < 0 {
            violations.push(format!("{id}: reversal does not add up to the pack: {r:?}"));
        }
        if let Some(back) = restored.first()
            && back.amount.get() != -r.amount.get()
        {
            violations.push(format!("{id}: restore {back:?} is not the reversal {r:?}"));
        }
        if shortfall > 0 && !want_restore {
            held.insert(p.plan.user.clone(), id.clone());
        }
    }
    for (user, payment) in &held {
        if h.account(user).await.body["on_hold"] != true {
            violations.push(format!(
                "{payment}: its shortfall is not given back but {user} is not on hold"
            ));
        }
    }
    println!(
        "chaos: {} purchases ({never_granted} reversed ahead of their payment, never granted), {} accounts left on hold by a shortfall",
        purchases.len(),
        held.len()
    );
}

/// Subs signing up with one address at the same time.
struct SignupRace {
    users: Vec<UserId>,
    /// The address as each sub's token writes it (one mailbox).
    emails: Vec<String>,
    /// Each sub's first call says the address is not verified.
    unverified_first: Vec<bool>,
    /// The first sub deletes its account while the others sign up.
    delete_first: bool,
}

impl SignupRace {
    fn draw(rng: &mut StdRng, h: &Harness, n: usize) -> SignupRace {
        let subs = rng.gen_range(2..=3);
        let users: Vec<UserId> = (0..subs).map(|_| h.user()).collect();
        let base = format!("race-{n}-{}", users[0]);
        let emails = (0..subs)
            .map(|i| match i {
                0 => format!("{base}@example.test"),
                1 => format!("{}@EXAMPLE.test", base.to_uppercase()),
                _ => format!("{base}+again@example.test"),
            })
            .collect();
        SignupRace {
            unverified_first: (0..subs).map(|_| rng.gen_bool(0.3)).collect(),
            delete_first: rng.gen_bool(0.3),
            users,
            emails,
        }
    }
}

/// Every sub's sign-ins at once through the faulty wire, each retried past server errors.
async fn signup_race_with_faults(h: &Harness, race: &SignupRace) {
    let calls = race.users.iter().enumerate().flat_map(|(i, user)| {
        (0..3).map(move |k| {
            let verified = if k == 0 && race.unverified_first[i] {
                "false"
            } else {
                "true"
            };
            let claims = Harness::id_claims(user, &race.emails[i], verified);
            let h = Harness {
                app: h.app.clone(),
                clients: h.clients.clone(),
            };
            async move {
                persist(|| {
                    let (h, claims) = (h.clone(), claims.clone());
                    Box::pin(async move {
                        let req = http::Request::get("/v1/account")
                            .body(axum::body::Body::empty())
                            .unwrap_or_else(|e| panic!("{e}"));
                        h.call_with_claims(Some(claims), req).await
                    }) as futures::future::BoxFuture<'static, Reply>
                })
                .await
            }
        })
    });
    let deleting = async {
        if race.delete_first {
            let (h, user) = (h.clone(), race.users[0].clone());
            persist(|| {
                let (h, user) = (h.clone(), user.clone());
                Box::pin(async move { h.delete_account(&user).await })
            })
            .await;
        }
    };
    futures::join!(join_all(calls), deleting);
}

/// Each race at rest, after one more verified sign-in per sub on a clean wire: exactly one
/// `grant:signup` row among its subs, every other sub told `address_used`.
async fn signup_checks(h: &Harness, races: &[SignupRace], violations: &mut Vec<String>) {
    for race in races {
        let mut grants = 0;
        for (i, user) in race.users.iter().enumerate() {
            let req = http::Request::get("/v1/account")
                .body(axum::body::Body::empty())
                .unwrap_or_else(|e| panic!("{e}"));
            let claims = Harness::id_claims(user, &race.emails[i], "true");
            let account = h.call_with_claims(Some(claims), req).await;
            let rows = h.ledger(user).await;
            let granted = rows.iter().any(|r| r.reference == "grant:signup");
            grants += usize::from(granted);
            let state = account.body["signup_grant"].as_str().unwrap_or_default();
            let want = if granted { "given" } else { "address_used" };
            // A closed account gets no grant at all: it may still say it owed one.
            let closed = account.body["closed_at"].is_string();
            if state != want && !(closed && state == "pending") {
                violations.push(format!("{user}: signup_grant {state}, expected {want}"));
            }
        }
        if grants != 1 {
            violations.push(format!(
                "{}: {grants} signup grants for one address",
                race.emails[0]
            ));
        }
    }
    println!("chaos: {} signup races, one grant each", races.len());
}

/// The webhook receivers of the run: healthy, answering 2xx to every request.
struct HookReceivers {
    healthy: Vec<atelier_tests::receiver::Receiver>,
}

impl HookReceivers {
    async fn add(h: &Harness) -> HookReceivers {
        let mut healthy = Vec::new();
        for _ in 0..2 {
            let r = atelier_tests::receiver::Receiver::start(&[], Duration::ZERO).await;
            atelier_shared::services::webhooks::add_endpoint(
                &h.app.store,
                &h.app.config.webhooks,
                &r.url,
                clock::now(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
            healthy.push(r);
        }
        HookReceivers { healthy }
    }

    /// Webhook ids each healthy receiver got a `job`'s event under.
    fn ids_of(&self, job: &str) -> Vec<Vec<String>> {
        let prefix = format!("evt_{job}_");
        self.healthy
            .iter()
            .map(|r| {
                let mut ids: Vec<String> = r
                    .deliveries()
                    .into_iter()
                    .map(|d| d.headers.id)
                    .filter(|id| id.starts_with(&prefix))
                    .collect();
                ids.sort();
                ids.dedup();
                ids
            })
            .collect()
    }
}

/// Up to ten delivery messages, as the queue's mapping receives them, waiting up to
/// `wait_secs` for the first (a long poll: it returns as soon as one is visible).
async fn hook_batch(h: &Harness, wait_secs: i32) -> Vec<aws_sdk_sqs::types::Message> {
    inject("receiving delivery messages", || {
        h.clients
            .sqs
            .receive_message()
            .queue_url(h.app.hooks_queue.url())
            .max_number_of_messages(10)
            .wait_time_seconds(wait_secs)
            .send()
    })
    .await
    .messages
    .unwrap_or_default()
}

/// What a delivery batch left: the receipt handles still in flight (all of a killed batch's,
/// a failed message's), and whether every message found its endpoint's slots all held.
struct BatchEnd {
    in_flight: Vec<String>,
    all_busy: bool,
}

/// One delivery batch at `at` through the sweeper's role (wire faults included): each message
/// one `deliver`, deleted once handled.
async fn deliver_hook_batch(
    h: &Harness,
    sweeper: &Harness,
    http: &atelier_shared::adapters::webhooks::client::WebhookClient,
    batch: Vec<aws_sdk_sqs::types::Message>,
    at: clock::Instant,
) -> BatchEnd {
    use atelier_shared::services::webhooks;
    let hooks = atelier_sweeper::hooks(&sweeper.app, http);
    let work = batch.iter().map(|m| async move {
        let msg = m.body.as_deref().and_then(|b| serde_json::from_str(b).ok());
        let outcome = match msg {
            Some(msg) => webhooks::deliver(hooks, &msg, at).await.ok(),
            None => None,
        };
        (m.receipt_handle.clone(), outcome)
    });
    let done = join_all(work).await;
    let all_busy = done
        .iter()
        .all(|(_, o)| matches!(o, Some(webhooks::Outcome::Busy)));
    let (handled, failed): (Vec<_>, Vec<_>) = done.into_iter().partition(|(_, o)| o.is_some());
    join_all(
        handled
            .into_iter()
            .filter_map(|(handle, _)| handle)
            .map(|handle| h.delete_hook_message(handle)),
    )
    .await;
    BatchEnd {
        in_flight: failed
            .into_iter()
            .filter_map(|(handle, _)| handle)
            .collect(),
        all_busy,
    }
}

/// Webhook delivery under faults, after the jobs settled: the stream's records of some new
/// events dropped (never fanned out) and others seen twice; deliverers killed mid-batch; then
/// rounds of the sweeper's safety net with the clock moved past a claim's lease each time,
/// until every event reached every healthy receiver and every push settled (or the retry
/// schedule's end on the clock).
async fn webhooks_with_faults(
    (h, sweeper, doomed): (&Harness, &Harness, &doomed::Doomed),
    (receivers, pushes): (&HookReceivers, &push_faults::PushFaults),
    rng: &mut StdRng,
    tally: &mut Tally,
) -> Vec<WebhookEventItem> {
    use atelier_shared::services::webhooks;
    let http = atelier_shared::adapters::webhooks::client::WebhookClient::new(
        h.app.config.webhooks.private_addresses,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let hooks = atelier_sweeper::hooks(&sweeper.app, &http);
    let events = fan_out_with_faults(h, hooks, pushes, rng, tally).await;
    // A killed deliverer's endpoint slots stay held until their lease (the POST's 15 s + 30 s)
    // runs out, so each round moves the clock past it; the re-drive takes what is due. After a
    // round in which no event arrived, the clock jumps to the next due attempt, so events
    // waiting on a later step of the retry schedule (30 min, 2 h, …) are followed to its end.
    let start = clock::now();
    let last = start + Duration::from_secs(SCHEDULE_SECS.iter().sum::<u64>() + 3_600);
    let (mut at, mut missing_before) = (start, usize::MAX);
    let mut held = hook_queue::Held::new(hook_queue::visibility(h).await);
    for round in 0..WEBHOOK_ROUNDS {
        let took = std::time::Instant::now();
        let (returned, stale) = held.release(h, at).await;
        tally.add_n("webhook_held_messages_returned", returned);
        tally.add_n("webhook_held_messages_already_back", stale);
        if round > 0
            && webhooks::redrive_due(hooks, at, Duration::from_secs(60))
                .await
                .is_err()
        {
            tally.add("webhook_redrive_failed");
        }
        let redrive = took.elapsed();
        drain_hook_queue((h, sweeper, doomed, &http), at, &mut held, rng, tally).await;
        let drain = took.elapsed() - redrive;
        tally.add("webhook_rounds");
        let missing = missing_everywhere(h, &events, receivers, pushes).await;
        if missing.is_empty() {
            break;
        }
        let next_due = match missing.len() < missing_before {
            true => None,
            false => earliest_due(h, &missing, at).await,
        };
        missing_before = missing.len();
        println!(
            "chaos: webhooks round {round} at +{} s: {} events not yet at every receiver, \
             e.g. {:?}; next due {next_due:?}; queue: {}; re-drive {:.1} s, drain {:.1} s, \
             reads {:.1} s",
            (at - start).whole_seconds(),
            missing.len(),
            &missing[..missing.len().min(3)],
            hook_queue::depth(h).await.describe(held.len()),
            redrive.as_secs_f64(),
            drain.as_secs_f64(),
            (took.elapsed() - redrive - drain).as_secs_f64(),
        );
        at = (at + WEBHOOK_ROUND_STEP).max(next_due.unwrap_or(at));
        if at > last {
            break;
        }
    }
    events
}

/// The outbox's due events (every page), fanned out as the stream would with some records
/// dropped and some seen twice; the push services' trouble set for the rounds.
async fn fan_out_with_faults(
    h: &Harness,
    hooks: atelier_shared::services::webhooks::Hooks<'_>,
    pushes: &push_faults::PushFaults,
    rng: &mut StdRng,
    tally: &mut Tally,
) -> Vec<WebhookEventItem> {
    use futures::StreamExt;
    let took = std::time::Instant::now();
    let horizon = clock::format(clock::now() + Duration::from_secs(86_400));
    let events = inject("reading the outbox's events", || {
        h.app.store.webhook_events_due(&horizon, 100_000)
    })
    .await;
    let mut fanned = Vec::new();
    for e in &events {
        match rng.gen_range(0..10) {
            0 | 1 => tally.add("webhook_stream_records_dropped"),
            2 => {
                fanned.extend([e.hook_pk.clone(), e.hook_pk.clone()]);
                tally.add("webhook_stream_records_twice");
            }
            _ => fanned.push(e.hook_pk.clone()),
        }
    }
    pushes.trouble(rng, tally);
    // The stream hands records over as they are written (no batching window), from several
    // shards at once: small batches, a few at a time, not one batch of a hundred after another.
    let fanned_out = futures::stream::iter(fanned.chunks(10))
        .map(|chunk| atelier_shared::services::webhooks::fan_out(hooks, chunk))
        .buffered(4)
        .collect::<Vec<_>>()
        .await;
    tally.add_n(
        "webhook_fan_out_failed",
        fanned_out.iter().filter(|r| r.is_err()).count() as u64,
    );
    println!(
        "chaos: webhooks: {} events fanned out in {:.1} s",
        events.len(),
        took.elapsed().as_secs_f64()
    );
    events
}

/// Events not yet at every healthy receiver, or with a push not yet settled.
async fn missing_everywhere<'a>(
    h: &Harness,
    events: &'a [WebhookEventItem],
    receivers: &HookReceivers,
    pushes: &push_faults::PushFaults,
) -> Vec<&'a str> {
    let mut missing = missing_events(events, receivers);
    for (event, _) in pushes.missing(h, events).await {
        if let Some(e) = events.iter().find(|e| e.hook_pk == event)
            && !missing.contains(&e.hook_pk.as_str())
        {
            missing.push(e.hook_pk.as_str());
        }
    }
    missing
}

/// Rounds of the safety net at most, and the clock's step between them (past a killed
/// deliverer's lease: the POST's 15 s + 30 s).
const WEBHOOK_ROUNDS: u32 = 200;
const WEBHOOK_ROUND_STEP: Duration = Duration::from_secs(46);

/// Delivery batches at `at`, [`DELIVERERS`] at a time and some killed mid-batch, until
/// nothing on the queue can be delivered at this clock: the queue empty but for the messages
/// `held` keeps and long delays, or a batch, run alone, whose every message found its
/// endpoint's slots all held (leased by a killed deliverer until the clock moves: each would
/// only come back busy every 2 s).
async fn drain_hook_queue(
    (h, sweeper, doomed, http): (
        &Harness,
        &Harness,
        &doomed::Doomed,
        &atelier_shared::adapters::webhooks::client::WebhookClient,
    ),
    at: Instant,
    held: &mut hook_queue::Held,
    rng: &mut StdRng,
    tally: &mut Tally,
) {
    use futures::StreamExt;
    let mut running = futures::stream::FuturesUnordered::new();
    let (mut launched, mut stuck) = (0_u64, false);
    loop {
        let wait = match stuck {
            true => None,
            false => held.wait_for(hook_queue::depth(h).await),
        };
        // Wait on the queue only with no batch running: a running batch may free slots or
        // send messages, so its end is the next event.
        if let Some(wait) = wait.filter(|w| *w == 0 || running.is_empty())
            && running.len() < DELIVERERS
        {
            let batch = hook_batch(h, wait).await;
            if batch.is_empty() {
                if wait > 0 {
                    // Every delay up to the wait ran out during it: what is still delayed is long.
                    held.long_delayed = hook_queue::depth(h).await.delayed;
                }
                continue;
            }
            // One batch in five: at 60 jobs about 50 batches run, so fewer kills than the
            // class's floor of 3 is about one run in 800 (one in 70 at 0.15). A killed batch
            // dies at its k-th AWS request (`doomed.rs`).
            let kill = rng
                .gen_bool(0.2)
                .then(|| rng.gen_range(1..=doomed::KILL_WITHIN));
            if kill.is_some() {
                tally.add("webhook_deliverers_killed");
            }
            let alone = running.is_empty();
            let run = async move {
                let Some(k) = kill else {
                    return (deliver_hook_batch(h, sweeper, http, batch, at).await, None);
                };
                let death = doomed.deliver(http, &batch, at, k).await;
                // Dead before reporting: nothing deleted, every message back on the clock.
                let in_flight = batch.into_iter().filter_map(|m| m.receipt_handle);
                let end = BatchEnd {
                    in_flight: in_flight.collect(),
                    all_busy: false,
                };
                (end, Some(death))
            };
            running.push(async move { (run.await, alone, launched) });
            launched += 1;
            continue;
        }
        let Some(((end, death), alone, index)) = running.next().await else {
            break;
        };
        if death == Some(doomed::Death::AfterTheBatch) {
            tally.add("webhook_deliverers_killed_after_their_batch");
        }
        let not_hidden = held.hold(h, at, end.in_flight).await;
        tally.add_n("webhook_held_messages_not_hidden", not_hidden);
        // Busy in a batch that overlapped no other: the slots were held by no live deliverer.
        if end.all_busy && alone && index + 1 == launched {
            tally.add("webhook_drains_ended_busy");
            stuck = true;
        }
    }
}

/// Delivery batches run at once, as the delivery queue's mapping runs up to eight
/// (`infra/terraform/webhooks.tf`); fewer here, since each endpoint takes four at a time and
/// the rest would come back busy.
const DELIVERERS: usize = 2;

/// Events some healthy receiver has not received yet (by `webhook-id`).
fn missing_events<'a>(events: &'a [WebhookEventItem], receivers: &HookReceivers) -> Vec<&'a str> {
    events
        .iter()
        .filter(|e| {
            !receivers
                .healthy
                .iter()
                .all(|r| r.deliveries().iter().any(|d| d.headers.id == e.hook_pk))
        })
        .map(|e| e.hook_pk.as_str())
        .collect()
}

/// The earliest due time after `after` recorded on a `missing` event (the retry schedule's
/// next step for it).
async fn earliest_due(h: &Harness, missing: &[&str], after: Instant) -> Option<Instant> {
    let mut earliest: Option<Instant> = None;
    for id in missing {
        let due = h.app.store.webhook_event(id).await.ok().flatten();
        let due = due.and_then(|e| e.due_at).and_then(|d| clock::parse(&d));
        if let Some(t) = due.filter(|t| *t > after) {
            earliest = Some(earliest.map_or(t, |e| e.min(t)));
        }
    }
    earliest
}

/// Every finished job's one event reached every healthy receiver (by `webhook-id`; a
/// duplicate only under the same id, with the same body).
fn webhook_delivery_checks(
    receivers: &HookReceivers,
    id: &str,
    events: &[&'static str],
    tally: &mut Tally,
    violations: &mut Vec<String>,
) {
    let want: Vec<String> = events.iter().map(|s| format!("evt_{id}_{s}")).collect();
    for (i, got) in receivers.ids_of(id).into_iter().enumerate() {
        if got != want {
            violations.push(format!(
                "{id}: healthy receiver {i} got events {got:?}, not {want:?}"
            ));
        }
    }
    for r in &receivers.healthy {
        let mut bodies: BTreeMap<String, String> = BTreeMap::new();
        for d in r
            .deliveries()
            .into_iter()
            .filter(|d| want.contains(&d.headers.id))
        {
            match bodies.get(&d.headers.id) {
                Some(b) if *b != d.body => {
                    violations.push(format!("{id}: two bodies under {}", d.headers.id));
                }
                Some(_) => tally.add("webhook_duplicates_same_id"),
                None => {
                    bodies.insert(d.headers.id.clone(), d.body.clone());
                }
            }
        }
    }
}
