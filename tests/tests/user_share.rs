//! Rule 12 on the local stack: one user's share of the day's model spend. A user looping
//! always-refunded jobs is stopped at their share without costing anyone else their edits;
//! concurrent jobs never take a user past it; an operator's override lifts it for one user.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use atelier_model_server::samples;
use atelier_shared::clock;
use atelier_shared::domain::{Credits, FailureCode, JobId, Micros, UserId};
use atelier_shared::services::budget::{self, PaidAttempt, Reservation, ReserveRequest};
use atelier_shared::services::process::Outcome;
use atelier_shared::store::schema::UserDayItem;
use atelier_tests::{Harness, StandIn};
use futures::future::join_all;
use http::StatusCode;
use serde_json::{Value, json};

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

fn pet() -> Value {
    json!({ "style": "embroidery", "target": "pet" })
}

fn spent(d: &UserDayItem) -> Micros {
    d.used_micros.saturating_add(d.reserved_micros)
}

/// The two-pet photo with pixel `n` of its top row changed: still two pets (so the readiness
/// check always asks which one), but different bytes each time, so no cache of readiness
/// answers keyed by the photo (its upload or its content) can answer it for free.
fn two_pets_variant(n: u32) -> Vec<u8> {
    let mut img = samples::two_pets_image();
    let (x, bump) = (n % img.width(), 1 + (n / img.width()) as u8);
    let px = img.get_pixel_mut(x, 0);
    px.0[0] = px.0[0].wrapping_add(bump);
    atelier_shared::domain::imaging::encode_png(&img).unwrap_or_else(|e| panic!("{e}"))
}

/// What one always-refunded two-pet job reserves (`estimate`) and costs (`cost`) on the
/// stand-in, measured on the shared stack with a throwaway user.
async fn clarification_figures(model: &StandIn) -> (Micros, Micros) {
    let h = Harness::new().await;
    let user = h.user();
    let id = h
        .submit_photo(&user, "probe", two_pets_variant(0), pet())
        .await;
    let outcome = h.processor(model).process(&job_id(&id)).await;
    assert_eq!(
        outcome.ok(),
        Some(Outcome::Failed {
            code: FailureCode::NeedsClarification
        })
    );
    let attempts = h
        .app
        .store
        .attempts_of(&job_id(&id))
        .await
        .unwrap_or_else(|e| panic!("attempts: {e:?}"));
    let [a] = attempts.as_slice() else {
        panic!("one reservation: {attempts:?}")
    };
    let cost = a
        .settled_cost_micros
        .unwrap_or_else(|| panic!("settled: {a:?}"));
    assert!(cost > Micros::ZERO && cost < a.reserved_micros, "{a:?}");
    (a.reserved_micros, cost)
}

#[tokio::test]
async fn a_user_looping_refunded_clarifications_is_stopped_at_their_share_and_others_still_edit() {
    let model = StandIn::start().await;
    let (estimate, cost) = clarification_figures(&model).await;
    // Room for the first job's reservation and six more clarifications' cost.
    let share = estimate.get() + 6 * cost.get();
    // A stack of its own, so the day's item holds this user's spend and the other's only.
    let h = Harness::isolated(|l| l.user_daily_share_micros = Micros::new(share)).await;
    let processor = h.processor(&model);
    let (looper, other) = (h.user(), h.user());
    let before = h.balance(&looper).await;
    let day = budget::day_of(clock::now());
    let (mut tried, mut refusals, mut failed) = (0u32, 0u32, Vec::new());
    let mut retry_after = None;

    for n in 1..=40u32 {
        let asset = h.upload(&looper, "original", two_pets_variant(n)).await;
        let mut body = pet();
        body["original_asset_id"] = json!(asset);
        let res = h.submit(&looper, Some(&format!("loop-{n}")), &body).await;
        tried += 1;
        if res.status == StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(res.code(), "DAILY_LIMIT_REACHED", "{res:?}");
            retry_after = res.header("retry-after").map(str::to_owned);
            refusals += 1;
            if refusals == 3 {
                break;
            }
            continue;
        }
        assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
        let outcome = processor.process(&job_id(&res.str("id"))).await;
        let Ok(Outcome::Failed { code }) = outcome else {
            panic!("job {n}: {outcome:?}")
        };
        failed.push(code);
        let d = budget::day(&h.app, &day).await.expect("today");
        assert!(
            d.used_micros.saturating_add(d.reserved_micros).get() <= share + estimate.get(),
            "job {n}: the day's item passed the share plus one estimate: {d:?}"
        );
    }

    let mine = h.user_day(&looper).await.expect("the looper's day item");
    let day_item = budget::day(&h.app, &day).await.expect("today");
    println!(
        "user share: share {share} µ$ (estimate {estimate}, clarification {cost}); jobs tried {tried}, \
         charged and refunded {}, refused at submit {refusals}; user spend {} µ$ (used {}, reserved {}); \
         day item {} µ$",
        failed.len(),
        spent(&mine),
        mine.used_micros,
        mine.reserved_micros,
        day_item
            .used_micros
            .saturating_add(day_item.reserved_micros),
    );
    assert_eq!(refusals, 3, "refused at the door once the share is reached");
    assert!(spent(&mine).get() <= share, "{mine:?}");
    assert_eq!(mine.reserved_micros, Micros::ZERO, "nothing left open");
    assert_eq!(
        failed
            .iter()
            .filter(|c| **c == FailureCode::NeedsClarification)
            .count(),
        7,
        "the share pays for seven clarifications: {failed:?}"
    );
    assert_eq!(
        failed.last(),
        Some(&FailureCode::DailyLimitReached),
        "the job that no longer fits is refunded without a paid call: {failed:?}"
    );
    assert_eq!(mine.used_micros.get(), 7 * cost.get());
    let secs: u32 = retry_after
        .as_deref()
        .and_then(|s| s.parse().ok())
        .expect("Retry-After in seconds");
    let expected = clock::retry_after_next_utc_day(clock::now());
    assert!(
        secs >= expected && secs <= expected + 60,
        "Retry-After {secs}, next UTC day in {expected}"
    );
    assert_eq!(h.balance(&looper).await, before, "every job refunded");
    h.assert_audit_clean().await;

    let id = h
        .submit_photo(&other, "k", samples::single_pet(), pet())
        .await;
    let outcome = processor.process(&job_id(&id)).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "another user's edit is delivered: {outcome:?}"
    );
}

#[tokio::test]
async fn concurrent_jobs_of_one_user_never_take_their_spend_past_the_share() {
    let model = StandIn::start().await;
    let (estimate, _) = clarification_figures(&model).await;
    // Two and a half check-and-edit reservations fit: the boundary is crossed mid-flight.
    let share = estimate.get() * 5 / 2;
    let h = Harness::isolated(|l| {
        l.user_daily_share_micros = Micros::new(share);
        l.max_in_flight = 20;
    })
    .await;
    let user = h.funded_user(100).await;
    let mut ids = Vec::new();
    for _ in 0..12 {
        ids.push(h.upload(&user, "original", samples::single_pet()).await);
    }
    let submits = join_all(ids.iter().enumerate().map(|(n, asset)| {
        let (h, user) = (h.clone(), user.clone());
        let mut body = pet();
        body["original_asset_id"] = json!(asset);
        async move { h.submit(&user, Some(&format!("c-{n}")), &body).await }
    }))
    .await;
    let jobs: Vec<String> = submits
        .iter()
        .map(|r| {
            assert_eq!(r.status, StatusCode::ACCEPTED, "{r:?}");
            r.str("id")
        })
        .collect();

    // Watch the user's item while the jobs run at once.
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicI64::new(0));
    let watcher = {
        let (h, user, done, peak) = (h.clone(), user.clone(), done.clone(), peak.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::Relaxed) {
                if let Some(d) = h.user_day(&user).await {
                    peak.fetch_max(spent(&d).get(), Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let processor = h.processor(&model);
    let outcomes = join_all(jobs.iter().map(|id| {
        let (p, id) = (processor.clone(), job_id(id));
        async move { p.process(&id).await }
    }))
    .await;
    done.store(true, Ordering::Relaxed);
    watcher.await.expect("watcher");

    let d = h.user_day(&user).await.expect("the user's day item");
    let limited = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(Outcome::Failed { code }) if *code == FailureCode::DailyLimitReached))
        .count();
    println!(
        "concurrent: share {share} µ$, 12 jobs at once: {limited} refused by the share, peak spend {} µ$, final {} µ$",
        peak.load(Ordering::Relaxed),
        spent(&d)
    );
    assert!(peak.load(Ordering::Relaxed) <= share, "peak {peak:?}");
    assert!(spent(&d).get() <= share, "{d:?}");
    assert_eq!(d.reserved_micros, Micros::ZERO, "nothing left open");
    assert!(limited >= 1, "the share bound: {outcomes:?}");
    assert_eq!(
        d.headroom_micros,
        d.share_micros.checked_sub(spent(&d)).expect("in range"),
        "headroom == share - used - reserved"
    );
    h.assert_audit_clean().await;
}

/// Reserves `micros` against `user`'s share under a made-up job (the reservation's own path).
async fn reserve_for(h: &Harness, user: &UserId, micros: i64) -> PaidAttempt {
    let job = job_id(&format!(
        "job_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    ));
    let req = ReserveRequest {
        job: &job,
        user,
        attempt: "01-check-edit",
        planned: &["check".to_owned()],
        estimate: Micros::new(micros),
        sale_credits: Credits::ZERO,
    };
    match PaidAttempt::reserve(&h.app, &req, clock::now()).await {
        Ok(Reservation::Granted(paid)) => *paid,
        other => panic!("reservation: {other:?}"),
    }
}

#[tokio::test]
async fn an_operators_override_lifts_the_limit_for_that_user_only() {
    let share = 50_000;
    let h = Harness::isolated(|l| l.user_daily_share_micros = Micros::new(share)).await;
    let (trusted, other) = (h.user(), h.user());
    h.fund_to(&trusted, 20).await;
    h.fund_to(&other, 20).await;
    let open = [
        reserve_for(&h, &trusted, share).await,
        reserve_for(&h, &other, share).await,
    ];
    let submit = |user: &UserId, key: &str| {
        let (h, user, key) = (h.clone(), user.clone(), key.to_owned());
        async move {
            let asset = h.upload(&user, "original", samples::single_pet()).await;
            h.submit(
                &user,
                Some(&key),
                &json!({ "style": "origami", "target": "pet", "original_asset_id": asset }),
            )
            .await
        }
    };
    for user in [&trusted, &other] {
        let res = submit(user, "before").await;
        assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS, "{res:?}");
        assert_eq!(res.code(), "DAILY_LIMIT_REACHED");
    }
    let balance = h.balance(&trusted).await;
    assert_eq!(balance, 20, "a refused submit charges nothing");

    let setting = h.set_user_share(&trusted, Some(10 * share)).await;

    assert!(setting.overridden);
    assert_eq!(
        setting.today.map(|t| t.share_micros),
        Some(Micros::new(10 * share))
    );
    let item = h
        .app
        .store
        .get_user_share(&trusted)
        .await
        .expect("override");
    assert_eq!(item.map(|i| i.operator), Some("test-harness".to_owned()));
    let lifted = submit(&trusted, "after").await;
    assert_eq!(lifted.status, StatusCode::ACCEPTED, "{lifted:?}");
    let still = submit(&other, "after").await;
    assert_eq!(still.code(), "DAILY_LIMIT_REACHED", "{still:?}");

    let cleared = h.set_user_share(&trusted, None).await;
    assert!(!cleared.overridden);
    assert_eq!(cleared.share_micros, Micros::new(share));
    let again = submit(&trusted, "cleared").await;
    assert_eq!(again.code(), "DAILY_LIMIT_REACHED", "{again:?}");

    let top = atelier_shared::services::user_share::top_spenders(
        &h.app,
        &budget::day_of(clock::now()),
        10,
    )
    .await
    .expect("top spenders");
    let users: Vec<&UserId> = top.iter().map(|s| &s.user).collect();
    assert_eq!(users.len(), 2, "{top:?}");
    assert!(users.contains(&&trusted) && users.contains(&&other));
    for paid in open {
        paid.settle(&h.app, "test").await.expect("settle");
    }
    h.assert_audit_clean().await;
}
