//! Failover to the second provider (docs/design.md rule 15), against ministack and two stand-in
//! model servers (the first spoken to over OpenAI's wire, the second over Gemini's): a definite
//! failure moves the call to the next provider as a new planned call of the same paid attempt,
//! reserved at that provider's price before it is made and settled with its own usage; an
//! ambiguous one never does. Each job is charged once, the day never passes its cap, and the
//! audit stays clean.

use std::time::Duration;

use atelier_model_server::samples;
use atelier_shared::adapters::model::catalogue::{self, find};
use atelier_shared::adapters::model::{ModelClient, ModelConfig, Usage, cost};
use atelier_shared::domain::{FailureCode, JobId, Micros, UserId};
use atelier_shared::services::budget;
use atelier_shared::services::process::{Outcome, Processor, Providers};
use atelier_shared::store::schema::AttemptItem;
use atelier_tests::{Harness, StandIn};
use futures::future::join_all;
use serde_json::json;

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

fn openai(model: &StandIn, timeout: Duration) -> ModelClient {
    let mut config = ModelConfig::new(model.base_url.clone());
    config.vision_timeout = timeout;
    config.edit_timeout = timeout;
    ModelClient::new(config).unwrap_or_else(|e| panic!("{e}"))
}

fn gemini(model: &StandIn) -> ModelClient {
    let mut config = ModelConfig::new(model.base_url.clone());
    config.image_model =
        find(catalogue::DEFAULT_GEMINI_IMAGE_MODEL).unwrap_or_else(|| panic!("row"));
    config.vision_model =
        find(catalogue::DEFAULT_GEMINI_VISION_MODEL).unwrap_or_else(|| panic!("row"));
    ModelClient::new(config).unwrap_or_else(|e| panic!("{e}"))
}

/// OpenAI first and Gemini second, for every call kind.
fn processor(h: &Harness, first: ModelClient, second: ModelClient) -> Processor {
    let order = vec![first, second];
    let providers = Providers::new(order.clone(), order).unwrap_or_else(|| panic!("providers"));
    Processor::with_providers(h.app.clone(), providers)
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
    let h = Harness::isolated(|_| {}).await;
    let (first, second) = (StandIn::start().await, StandIn::start().await);
    first
        .fault(json!({ "call": "any", "fault": "error_503" }))
        .await;
    let p = processor(&h, openai(&first, Duration::from_secs(60)), gemini(&second));
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
    let h = Harness::isolated(|_| {}).await;
    let (first, second) = (StandIn::start().await, StandIn::start().await);
    first
        .fault(json!({ "call": "any", "fault": "timeout", "ms": 5_000 }))
        .await;
    let p = processor(&h, openai(&first, Duration::from_secs(1)), gemini(&second));
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
    h.assert_audit_clean().await;
}
