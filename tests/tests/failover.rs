//! Failover to the second provider (docs/design.md rule 15), against ministack and two stand-in
//! model servers (the first spoken to over OpenAI's wire, the second over Gemini's): a definite
//! failure moves the call to the next provider as a new planned call of the same paid attempt,
//! reserved at that provider's price before it is made and settled with its own usage; an
//! ambiguous one never does. Each job is charged once, the day never passes its cap, and the
//! audit stays clean.

use std::time::Duration;

use atelier_model_server::samples;
use atelier_shared::adapters::model::catalogue::{Provider, find};
use atelier_shared::adapters::model::{Usage, cost};
use atelier_shared::domain::breaker::{BreakerSettings, BreakerState, Phase};
use atelier_shared::domain::{FailureCode, JobId, Micros, UserId};
use atelier_shared::services::process::Outcome;
use atelier_shared::services::{breaker, budget, support};
use atelier_shared::store::schema::AttemptItem;
use atelier_tests::{Harness, StandIn};
use futures::future::join_all;
use serde_json::json;

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

/// `jobs` users, each submitting one edit of the sample pet.
async fn burst(h: &Harness, jobs: usize) -> Vec<(UserId, String, i64)> {
    let mut out = Vec::new();
    for _ in 0..jobs {
        let user = h.user();
        let before = h.balance(&user).await;
        let id = h
            .submit_photo(
                &user,
                "k",
                samples::single_pet(),
                json!({ "style": "embroidery", "target": "pet" }),
            )
            .await;
        out.push((user, id, before));
    }
    out
}

async fn attempts(h: &Harness, id: &str) -> Vec<AttemptItem> {
    h.app
        .store
        .attempts_of(&job_id(id))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"))
}

/// Every served call of an attempt is booked at its serving model's row from its usage, and
/// the attempt settles at their sum (the refused calls cost nothing).
fn assert_booked_at_the_serving_price(a: &AttemptItem) {
    let mut sum = Micros::ZERO;
    for (key, call) in &a.calls {
        if call.outcome == "skipped" {
            continue;
        }
        let label = call
            .model
            .as_deref()
            .unwrap_or_else(|| panic!("{key}: model"));
        let id = label.split('@').next().unwrap_or_default();
        let row = find(id).unwrap_or_else(|| panic!("{label} catalogued"));
        assert_eq!(label, row.price_label(), "{key}");
        assert_eq!(
            call.provider.as_deref(),
            Some(row.provider.as_str()),
            "{key}"
        );
        let cost = call
            .cost_micros
            .unwrap_or_else(|| panic!("{key}: a known cost: {call:?}"));
        if call.outcome == "ok" {
            let usage: Usage = serde_json::from_value(call.usage.clone().unwrap_or_default())
                .unwrap_or_else(|e| panic!("{key}: usage: {e}"));
            assert_eq!(Some(cost), cost::cost_micros(row, &usage), "{key}");
        } else {
            assert_eq!(
                cost,
                Micros::ZERO,
                "{key}: a definite failure is free: {call:?}"
            );
        }
        sum = sum.saturating_add(cost);
    }
    assert_eq!(a.settled_cost_micros, Some(sum), "{a:?}");
    assert!(
        a.reserved_micros >= sum,
        "reserved before, at least the cost: {a:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_the_first_provider_down_a_burst_of_jobs_is_delivered_by_the_second_each_charged_once()
{
    // A breaker that never opens: every job meets the first provider's 503 itself.
    let h = Harness::isolated(|l| l.breaker.failures = 1_000).await;
    let (first, second) = (StandIn::start().await, StandIn::start().await);
    first
        .fault(json!({ "call": "any", "fault": "error_503" }))
        .await;
    let p = h.processor_with_failover(&first, &second, Duration::from_secs(60));
    let jobs = burst(&h, 50).await;

    let ids: Vec<JobId> = jobs.iter().map(|(_, id, _)| job_id(id)).collect();
    let outcomes = join_all(ids.iter().map(|id| p.process(id))).await;

    let mut charged = Vec::new();
    for ((user, id, before), outcome) in jobs.iter().zip(outcomes) {
        assert!(
            matches!(outcome, Ok(Outcome::Delivered { .. })),
            "{id}: {outcome:?}"
        );
        let (down, up) = (first.calls(id).await, second.calls(id).await);
        assert_eq!(
            (down.check, down.edit, down.review),
            (1, 1, 1),
            "{id}: one refused call each"
        );
        assert_eq!(
            (up.check, up.edit, up.review),
            (1, 1, 1),
            "{id}: one served call each"
        );
        charged.push(before - h.balance(user).await);
        let attempts = attempts(&h, id).await;
        assert_eq!(attempts.len(), 2, "check+edit, then review: {attempts:?}");
        for a in &attempts {
            assert!(a.open_day.is_none(), "settled: {a:?}");
            assert!(
                a.planned.iter().any(|k| k.ends_with("@gemini")),
                "a failover is a planned call of the same attempt: {a:?}"
            );
            assert_booked_at_the_serving_price(a);
        }
    }
    assert!(charged[0] > 0, "{charged:?}");
    assert!(
        charged.iter().all(|c| *c == charged[0]),
        "each job charged once: {charged:?}"
    );
    let day = budget::day(&h.app, &budget::day_of(atelier_shared::clock::now()))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(day.reserved_micros, Micros::ZERO, "{day:?}");
    assert!(day.used_micros <= day.cap_micros, "{day:?}");
    h.assert_audit_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_first_provider_that_times_out_after_the_request_is_never_failed_over() {
    // A breaker that would open at the second definite failure: timeouts are not definite.
    let h = Harness::isolated(|l| l.breaker.failures = 2).await;
    let (first, second) = (StandIn::start().await, StandIn::start().await);
    first
        .fault(json!({ "call": "any", "fault": "timeout", "ms": 5_000 }))
        .await;
    let p = h.processor_with_failover(&first, &second, Duration::from_secs(1));
    let jobs = burst(&h, 5).await;

    let ids: Vec<JobId> = jobs.iter().map(|(_, id, _)| job_id(id)).collect();
    let outcomes = join_all(ids.iter().map(|id| p.process(id))).await;

    for ((user, id, before), outcome) in jobs.iter().zip(outcomes) {
        assert_eq!(
            outcome.ok(),
            Some(Outcome::Failed {
                code: FailureCode::CheckFailed
            }),
            "{id}"
        );
        assert_eq!(first.calls(id).await.check, 1, "{id}: the request was sent");
        assert_eq!(
            second.calls(id).await,
            Default::default(),
            "{id}: nothing sent to the second provider"
        );
        assert_eq!(h.balance(user).await, *before, "{id}: refunded");
        let attempts = attempts(&h, id).await;
        let a = attempts.first().unwrap_or_else(|| panic!("an attempt"));
        assert_eq!(a.planned, ["check", "edit"], "no failover planned: {a:?}");
        let check = a.calls.get("check").unwrap_or_else(|| panic!("{a:?}"));
        assert_eq!(check.outcome, "model_timeout");
        assert_eq!(check.cost_micros, None, "an unknown cost");
        assert_eq!(
            a.settled_cost_micros,
            Some(a.reserved_micros),
            "its reservation stays booked: {a:?}"
        );
    }
    assert_eq!(
        breaker_of(&h, Provider::OpenAi).await,
        BreakerState::default(),
        "ambiguous timeouts neither count nor open the breaker"
    );
    h.assert_audit_clean().await;
}

async fn breaker_of(h: &Harness, provider: Provider) -> BreakerState {
    breaker::state(&h.app, provider)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"))
}

async fn phase_of(h: &Harness, provider: Provider) -> Phase {
    let now = breaker::unix_ms(atelier_shared::clock::now());
    breaker_of(h, provider)
        .await
        .phase(now, &h.app.config.limits.breaker)
}

/// Every call of `jobs` that reached `model`, of any kind.
async fn calls_reaching(model: &StandIn, jobs: &[(UserId, String, i64)]) -> u64 {
    let mut n = 0;
    for (_, id, _) in jobs {
        let c = model.calls(id).await;
        n += c.check + c.edit + c.review + c.compare;
    }
    n
}

/// Processes `jobs` all at once; each must be delivered.
async fn deliver_all(
    p: &atelier_shared::services::process::Processor,
    jobs: &[(UserId, String, i64)],
) {
    let ids: Vec<JobId> = jobs.iter().map(|(_, id, _)| job_id(id)).collect();
    let outcomes = join_all(ids.iter().map(|id| p.process(id))).await;
    for (id, outcome) in ids.iter().zip(outcomes) {
        assert!(
            matches!(outcome, Ok(Outcome::Delivered { .. })),
            "{id}: {outcome:?}"
        );
    }
}

/// Each job charged the same once, every attempt settled at its serving price, nothing
/// left reserved, the day under its cap, the books clean.
async fn assert_charged_once_and_settled(h: &Harness, jobs: &[(UserId, String, i64)]) {
    let mut charged = Vec::new();
    for (user, id, before) in jobs {
        charged.push(before - h.balance(user).await);
        for a in &attempts(h, id).await {
            assert!(a.open_day.is_none(), "settled: {a:?}");
            assert_booked_at_the_serving_price(a);
        }
    }
    assert!(
        charged.iter().all(|c| *c == charged[0] && *c > 0),
        "each job charged once: {charged:?}"
    );
    let day = budget::day(&h.app, &budget::day_of(atelier_shared::clock::now()))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(day.reserved_micros, Micros::ZERO, "{day:?}");
    assert!(day.used_micros <= day.cap_micros, "{day:?}");
    h.assert_audit_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_three_definite_failures_the_breaker_opens_and_later_jobs_make_no_call_to_the_first_provider()
 {
    let h = Harness::isolated(|l| {
        l.breaker = BreakerSettings {
            failures: 3,
            cooldown_ms: 600_000,
        }
    })
    .await;
    let (first, second) = (StandIn::start().await, StandIn::start().await);
    first
        .fault(json!({ "call": "any", "fault": "error_503" }))
        .await;
    let p = h.processor_with_failover(&first, &second, Duration::from_secs(60));

    // One job meets the outage three times (check, edit, review): the third failure opens it.
    let opener = burst(&h, 1).await;
    deliver_all(&p, &opener).await;
    assert_eq!(calls_reaching(&first, &opener).await, 3);
    assert_eq!(phase_of(&h, Provider::OpenAi).await, Phase::Open);

    let later = burst(&h, 12).await;
    deliver_all(&p, &later).await;

    assert_eq!(
        calls_reaching(&first, &later).await,
        0,
        "no call at all to an open provider"
    );
    for (_, id, _) in &later {
        let up = second.calls(id).await;
        assert_eq!((up.check, up.edit, up.review), (1, 1, 1), "{id}");
        for a in attempts(&h, id).await {
            assert!(
                a.planned.iter().all(|k| k.ends_with("@gemini")),
                "nothing planned nor reserved at the open provider: {a:?}"
            );
            assert_eq!(
                a.planned.len(),
                a.calls.len(),
                "every planned call made: {a:?}"
            );
        }
    }
    // Operators see which provider served each call (`atelier-admin job show`); users see
    // only the edit's model and provider, in the result's content credentials (issue 46).
    let (user, id, _) = &later[0];
    let history = support::job(&h.app, &job_id(id))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"))
        .unwrap_or_else(|| panic!("{id}"));
    let edit = &history.attempts[0].calls["edit@gemini"];
    assert_eq!(edit.provider.as_deref(), Some("gemini"), "{edit:?}");
    let mut shown = h.job(user, id).await.body;
    let credentials = shown["result"]["content_credentials"].take();
    assert_eq!(credentials["provider"], "gemini", "{credentials:#}");
    assert!(
        !shown.to_string().contains("gemini"),
        "the user's view names no provider outside the credentials: {shown}"
    );
    assert_charged_once_and_settled(&h, &[opener, later].concat()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_the_cool_down_exactly_one_probe_reaches_the_first_provider_and_its_success_closes_it()
 {
    let cooldown = Duration::from_secs(30);
    let h = Harness::isolated(|l| {
        l.breaker = BreakerSettings {
            failures: 1,
            cooldown_ms: 30_000,
        }
    })
    .await;
    let (first, second) = (StandIn::start().await, StandIn::start().await);
    first
        .fault(json!({ "call": "any", "fault": "error_503" }))
        .await;
    // The second provider's check asks a question: each job of the burst makes one call (its
    // check) and stops, refunded, so the whole burst fits in one cool-down on a busy machine.
    second
        .fault(json!({ "call": "check", "fault": "not_ready" }))
        .await;
    let p = h.processor_with_failover(&first, &second, Duration::from_secs(60));
    let clarify = Some(Outcome::Failed {
        code: FailureCode::NeedsClarification,
    });
    let opener = burst(&h, 1).await;
    assert_eq!(p.process(&job_id(&opener[0].1)).await.ok(), clarify);
    assert_eq!(
        calls_reaching(&first, &opener).await,
        1,
        "opened by its check"
    );

    // Still down after the cool-down: a concurrent burst lets exactly one probe through,
    // whose failure opens the breaker again.
    let waiting = burst(&h, 10).await;
    tokio::time::sleep(cooldown).await;
    let started = std::time::Instant::now();
    let ids: Vec<JobId> = waiting.iter().map(|(_, id, _)| job_id(id)).collect();
    let outcomes = join_all(ids.iter().map(|id| p.process(id))).await;
    assert!(
        started.elapsed() < cooldown,
        "the burst must end within one cool-down to count one probe: {:?}",
        started.elapsed()
    );
    assert_eq!(
        calls_reaching(&first, &waiting).await,
        1,
        "exactly one probe"
    );
    assert_eq!(phase_of(&h, Provider::OpenAi).await, Phase::Open);
    for ((user, id, before), outcome) in waiting.iter().zip(outcomes) {
        assert_eq!(outcome.ok(), clarify, "{id}");
        assert_eq!(second.calls(id).await.check, 1, "{id}");
        assert_eq!(h.balance(user).await, *before, "{id}: refunded");
    }

    // Back up: after the next cool-down the probe succeeds and closes it, and the calls after
    // it go to the first provider again.
    first.clear_faults().await;
    let back = burst(&h, 2).await;
    tokio::time::sleep(cooldown).await;
    deliver_all(&p, &back[..1]).await;
    assert_eq!(phase_of(&h, Provider::OpenAi).await, Phase::Closed);
    deliver_all(&p, &back[1..]).await;
    for (_, id, _) in &back {
        let (down, up) = (first.calls(id).await, second.calls(id).await);
        assert_eq!((down.check, down.edit, down.review), (1, 1, 1), "{id}");
        assert_eq!(up, Default::default(), "{id}: nothing failed over");
    }
    assert_eq!(
        breaker_of(&h, Provider::OpenAi).await,
        BreakerState::default()
    );
    assert_charged_once_and_settled(&h, &back).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn with_every_provider_open_a_job_fails_and_is_refunded_without_a_call() {
    let h = Harness::isolated(|l| {
        l.breaker = BreakerSettings {
            failures: 1,
            cooldown_ms: 600_000,
        }
    })
    .await;
    let (first, second) = (StandIn::start().await, StandIn::start().await);
    for model in [&first, &second] {
        model
            .fault(json!({ "call": "any", "fault": "error_503" }))
            .await;
    }
    let p = h.processor_with_failover(&first, &second, Duration::from_secs(60));
    let opener = burst(&h, 1).await;
    let jobs = burst(&h, 4).await;
    let outcome = p.process(&job_id(&opener[0].1)).await;
    assert_eq!(
        outcome.ok(),
        Some(Outcome::Failed {
            code: FailureCode::CheckFailed
        })
    );
    assert_eq!(phase_of(&h, Provider::Gemini).await, Phase::Open);

    let ids: Vec<JobId> = jobs.iter().map(|(_, id, _)| job_id(id)).collect();
    let outcomes = join_all(ids.iter().map(|id| p.process(id))).await;

    for ((user, id, before), outcome) in jobs.iter().zip(outcomes) {
        assert_eq!(
            outcome.ok(),
            Some(Outcome::Failed {
                code: FailureCode::CheckFailed
            }),
            "{id}"
        );
        assert_eq!(h.balance(user).await, *before, "{id}: refunded");
        assert_eq!(first.calls(id).await, Default::default(), "{id}");
        assert_eq!(second.calls(id).await, Default::default(), "{id}");
        let a = &attempts(&h, id).await[0];
        assert_eq!(a.planned, ["check", "edit"], "no failover planned: {a:?}");
        assert!(
            a.calls.values().all(|c| c.outcome == "skipped"),
            "no call made: {a:?}"
        );
        assert_eq!(
            a.settled_cost_micros,
            Some(Micros::ZERO),
            "its reservation released: {a:?}"
        );
    }
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn an_extension_that_committed_but_whose_answer_was_lost_is_settled_with_its_attempt() {
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    let job = JobId::parse(&format!(
        "job_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    ))
    .expect("a job id");
    let now = atelier_shared::clock::now();
    let day = budget::day_of(now);
    let req = budget::ReserveRequest {
        job: &job,
        user: &user,
        attempt: "02-review",
        planned: &["review".to_owned()],
        estimate: Micros::new(4_035),
        sale_credits: atelier_shared::domain::Credits::ZERO,
    };
    let budget::Reservation::Granted(paid) = budget::PaidAttempt::reserve(&h.app, &req, now)
        .await
        .expect("reserve")
    else {
        panic!("the reservation was refused");
    };
    let mut paid = *paid;
    // The extension's transaction commits, but its answer never arrives ...
    let stored = h
        .app
        .store
        .get_attempt(&job, "02-review")
        .await
        .expect("read")
        .expect("the attempt");
    let stamp = atelier_shared::clock::format(now);
    h.app
        .store
        .extend_reservation(&stored, "review@gemini", Micros::new(1_345), &stamp)
        .await
        .expect("the first extension");

    // ... and the retry meets its own write.
    let refused = paid
        .extend(&h.app, "review@gemini", Micros::new(1_345), now)
        .await
        .expect("extend");
    paid.settle(&h.app, "test").await.expect("settle");

    assert_eq!(refused, None, "the extension is this attempt's");
    let d = budget::day(&h.app, &day).await.expect("the day");
    assert_eq!(d.reserved_micros, Micros::ZERO, "{d:?}");
    let mine = h
        .app
        .store
        .get_user_day(&day, &user)
        .await
        .expect("read")
        .expect("the user's day");
    assert_eq!(mine.reserved_micros, Micros::ZERO, "{mine:?}");
}

/// The day's used spend: what every settled attempt booked.
async fn day_used(h: &Harness) -> Micros {
    let day = budget::day(&h.app, &budget::day_of(atelier_shared::clock::now()))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(day.reserved_micros, Micros::ZERO, "{day:?}");
    day.used_micros
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_gateway_error_during_the_edit_is_booked_at_its_reservation_and_only_the_providers_own_503_fails_over()
 {
    // A breaker that would open at the second definite failure: the gateway errors must not
    // count (checked after each; the 503's job ends with a success, which starts it over).
    let h = Harness::isolated(|l| l.breaker.failures = 2).await;
    let (first, second) = (StandIn::start().await, StandIn::start().await);
    let p = h.processor_with_failover(&first, &second, Duration::from_secs(60));
    let faults = ["html_502", "error_524", "empty_500", "error_503"];
    let jobs = burst(&h, faults.len()).await;
    for ((_, id, _), fault) in jobs.iter().zip(faults) {
        first
            .fault(json!({ "call": "edit", "job": id, "fault": fault }))
            .await;
    }

    let mut booked = Micros::ZERO;
    for ((user, id, before), fault) in jobs.iter().zip(faults) {
        let outcome = p.process(&job_id(id)).await;
        let attempt = attempts(&h, id).await.remove(0);
        let edit = &attempt.calls["edit"];
        assert_eq!(first.calls(id).await.edit, 1, "{fault}: the edit was sent");
        if fault == "error_503" {
            assert!(
                matches!(outcome, Ok(Outcome::Delivered { .. })),
                "{fault}: {outcome:?}"
            );
            assert_eq!(second.calls(id).await.edit, 1, "{fault}: failed over");
            assert_eq!(edit.cost_micros, Some(Micros::ZERO), "{fault}: free");
            for a in attempts(&h, id).await {
                assert_booked_at_the_serving_price(&a);
                let cost = a
                    .settled_cost_micros
                    .unwrap_or_else(|| panic!("settled: {a:?}"));
                booked = booked.saturating_add(cost);
            }
            continue;
        }
        assert_eq!(
            outcome.ok(),
            Some(Outcome::Failed {
                code: FailureCode::EditFailed
            }),
            "{fault}"
        );
        assert_eq!(
            second.calls(id).await,
            Default::default(),
            "{fault}: nothing sent to the second provider"
        );
        assert_eq!(h.balance(user).await, *before, "{fault}: refunded");
        assert_eq!(
            attempt.planned,
            ["check", "edit"],
            "{fault}: no failover planned"
        );
        assert_eq!(edit.outcome, "model_provider_error", "{fault}");
        assert_eq!(edit.cost_micros, None, "{fault}: an unknown cost");
        assert_eq!(
            attempt.settled_cost_micros,
            Some(attempt.reserved_micros),
            "{fault}: its reservation stays booked: {attempt:?}"
        );
        booked = booked.saturating_add(attempt.reserved_micros);
        assert_eq!(
            breaker_of(&h, Provider::OpenAi).await,
            BreakerState::default(),
            "{fault}: an ambiguous failure does not count against the breaker"
        );
    }
    assert_eq!(
        day_used(&h).await,
        booked,
        "the day books each ambiguous edit at its reservation"
    );
    h.assert_audit_clean().await;
}

/// A plan that drops the answer of the first `TransactWriteItems` after the write reached the
/// store, and forwards the next few (the SDK's retries) untouched.
fn first_transaction_answer_lost() -> atelier_wire_proxy::FaultPlan {
    use atelier_wire_proxy::{FaultKind, FaultPlan, Operation, Service};
    let op = Operation::new(Service::DynamoDb, "TransactWriteItems");
    (0..10_000)
        .map(|seed| {
            FaultPlan::new(seed)
                .rate(FaultKind::DropAfterForward, 0.5)
                .only(["TransactWriteItems"])
        })
        .find(|p| {
            p.decide(&op, 0).error == Some(FaultKind::DropAfterForward)
                && (1..4).all(|n| p.decide(&op, n).error.is_none())
        })
        .unwrap_or_else(|| panic!("no seed below 10,000 drops only the first answer"))
}

#[tokio::test]
async fn a_reservation_that_committed_but_whose_answer_was_lost_is_the_callers_and_settles() {
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    let now = atelier_shared::clock::now();
    let day = budget::day_of(now);
    let job = |n: u8| {
        JobId::parse(&format!(
            "job_{}",
            ulid::Ulid::new().to_string().to_lowercase()
        ))
        .unwrap_or_else(|| panic!("a job id {n}"))
    };
    let (first, second) = (job(1), job(2));
    let planned = ["check".to_owned(), "edit".to_owned()];
    let req = |job| budget::ReserveRequest {
        job,
        user: &user,
        attempt: "01-check-edit",
        planned: &planned,
        estimate: Micros::new(40_000),
        sale_credits: atelier_shared::domain::Credits::new(4),
    };
    // A first reservation creates the day and the user's day: the next is one transaction.
    let budget::Reservation::Granted(warm) =
        budget::PaidAttempt::reserve(&h.app, &req(&first), now)
            .await
            .expect("reserve")
    else {
        panic!("the first reservation was refused");
    };
    (*warm).settle(&h.app, "test").await.expect("settle");
    let endpoint = h
        .app
        .config
        .resources
        .queue_url
        .split("/000000000000/")
        .next()
        .unwrap_or_default()
        .to_owned();
    let proxy = atelier_wire_proxy::Proxy::start(&endpoint, Some(first_transaction_answer_lost()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(proxy.url())
        .load()
        .await;
    let faulty = atelier_shared::services::App::new(
        h.app.config.clone(),
        &atelier_shared::adapters::aws::Clients::new(&sdk),
    );

    // The transaction commits, its answer is lost, the SDK's retry meets the write.
    let reserved = budget::PaidAttempt::reserve(&faulty, &req(&second), now)
        .await
        .expect("reserve");

    let dropped: Vec<_> = proxy.faults();
    assert_eq!(dropped.len(), 1, "the answer was dropped once: {dropped:?}");
    let budget::Reservation::Granted(paid) = reserved else {
        panic!("refused: the caller's own committed reservation was taken for a second run");
    };
    (*paid).settle(&h.app, "test").await.expect("settle");
    let d = budget::day(&h.app, &day).await.expect("the day");
    assert_eq!(
        d.reserved_micros,
        Micros::ZERO,
        "nothing left reserved: {d:?}"
    );
    let mine = h
        .app
        .store
        .get_user_day(&day, &user)
        .await
        .expect("read")
        .expect("the user's day");
    assert_eq!(mine.reserved_micros, Micros::ZERO, "{mine:?}");
    let attempts = h.app.store.attempts_of(&second).await.expect("attempts");
    assert_eq!(attempts.len(), 1, "one attempt: {attempts:?}");
    assert_eq!(attempts[0].open_day, None, "settled");
}

#[tokio::test]
async fn a_step_that_runs_twice_is_refused_its_second_reservation_and_the_day_books_it_once() {
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    let now = atelier_shared::clock::now();
    let day = budget::day_of(now);
    let job = JobId::parse(&format!(
        "job_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    ))
    .expect("a job id");
    let planned = ["check".to_owned(), "edit".to_owned()];
    let req = budget::ReserveRequest {
        job: &job,
        user: &user,
        attempt: "01-check-edit",
        planned: &planned,
        estimate: Micros::new(40_000),
        sale_credits: atelier_shared::domain::Credits::new(4),
    };
    let budget::Reservation::Granted(first) = budget::PaidAttempt::reserve(&h.app, &req, now)
        .await
        .expect("reserve")
    else {
        panic!("the first run's reservation was refused");
    };

    // The same step starts again (a redelivered message) while the first run holds it open.
    let second = budget::PaidAttempt::reserve(&h.app, &req, now)
        .await
        .expect("reserve");

    assert!(
        matches!(
            second,
            budget::Reservation::Refused(budget::Refusal::Paused)
        ),
        "the second run was let in to pay again: {second:?}"
    );
    let d = budget::day(&h.app, &day).await.expect("the day");
    assert_eq!(
        d.reserved_micros,
        Micros::new(40_000),
        "reserved once: {d:?}"
    );
    (*first).settle(&h.app, "test").await.expect("settle");
    let d = budget::day(&h.app, &day).await.expect("the day");
    assert_eq!(
        d.reserved_micros,
        Micros::ZERO,
        "nothing left reserved: {d:?}"
    );
}

#[tokio::test]
async fn a_failover_call_not_yet_reserved_is_never_made_nor_a_planned_call_made_twice() {
    use atelier_shared::adapters::model::catalogue::DEFAULT_IMAGE_MODEL;
    use atelier_shared::adapters::model::{CallKind, EditReply, ModelError};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    let job = JobId::parse(&format!(
        "job_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    ))
    .expect("a job id");
    let planned = ["edit".to_owned()];
    let req = budget::ReserveRequest {
        job: &job,
        user: &user,
        attempt: "01-edit",
        planned: &planned,
        estimate: Micros::new(40_000),
        sale_credits: atelier_shared::domain::Credits::new(4),
    };
    let budget::Reservation::Granted(paid) =
        budget::PaidAttempt::reserve(&h.app, &req, atelier_shared::clock::now())
            .await
            .expect("reserve")
    else {
        panic!("the reservation was refused");
    };
    let mut paid = *paid;
    let model = find(DEFAULT_IMAGE_MODEL).expect("the default image model");
    let sent = AtomicUsize::new(0);
    let edit = || async {
        sent.fetch_add(1, Ordering::SeqCst);
        Err::<EditReply, _>(ModelError::ProvidersOpen {
            call: CallKind::Edit,
        })
    };

    let failover = paid
        .call_as(&h.app, CallKind::Edit, "edit@gemini", model, edit())
        .await;
    let planned_edit = paid
        .call_as(&h.app, CallKind::Edit, "edit", model, edit())
        .await;
    let again = paid
        .call_as(&h.app, CallKind::Edit, "edit", model, edit())
        .await;

    assert!(failover.is_err(), "an unreserved failover was let through");
    assert!(planned_edit.is_ok(), "the planned edit: {planned_edit:?}");
    assert!(again.is_err(), "the planned edit was let through twice");
    assert_eq!(
        sent.load(Ordering::SeqCst),
        1,
        "one call sent, the planned one"
    );
    paid.settle(&h.app, "test").await.expect("settle");
}

#[tokio::test]
async fn a_failover_after_the_sweeper_settled_the_attempt_is_refused_and_reserves_nothing() {
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    let now = atelier_shared::clock::now();
    let day = budget::day_of(now);
    let job = JobId::parse(&format!(
        "job_{}",
        ulid::Ulid::new().to_string().to_lowercase()
    ))
    .expect("a job id");
    let planned = ["edit".to_owned()];
    let req = budget::ReserveRequest {
        job: &job,
        user: &user,
        attempt: "01-edit",
        planned: &planned,
        estimate: Micros::new(40_000),
        sale_credits: atelier_shared::domain::Credits::new(4),
    };
    let budget::Reservation::Granted(paid) = budget::PaidAttempt::reserve(&h.app, &req, now)
        .await
        .expect("reserve")
    else {
        panic!("the reservation was refused");
    };
    let mut paid = *paid;
    // The consumer is slow: the sweeper takes the attempt for orphaned and settles it.
    let stored = h
        .app
        .store
        .get_attempt(&job, "01-edit")
        .await
        .expect("read")
        .expect("the attempt");
    budget::settle(&h.app, &stored, "sweeper")
        .await
        .expect("the sweeper's settlement");

    // Then the consumer's edit fails definitely and it would fail over.
    let refusal = paid
        .extend(&h.app, "edit@gemini", Micros::new(30_000), now)
        .await
        .expect("extend");

    assert_eq!(
        refusal,
        Some(budget::Refusal::Paused),
        "a failover was let in on a settled attempt"
    );
    let d = budget::day(&h.app, &day).await.expect("the day");
    assert_eq!(d.reserved_micros, Micros::ZERO, "nothing reserved: {d:?}");
    let a = &attempts(&h, job.as_str()).await[0];
    assert_eq!(a.planned, ["edit"], "no failover planned: {a:?}");
}
