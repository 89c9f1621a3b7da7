//! The model catalogue on the money path, against ministack and the stand-in model server: each
//! call is booked at the row of the model that served it, and a provider answering "no such
//! model" is an outage of the model (its own call outcome), with the job refunded as ever.

use atelier_model_server::samples;
use atelier_shared::adapters::model::catalogue::{self, find};
use atelier_shared::adapters::model::{ModelClient, ModelConfig, Usage, cost};
use atelier_shared::domain::{FailureCode, JobId, Micros};
use atelier_shared::services::process::{Outcome, Processor};
use atelier_tests::{Harness, StandIn};
use serde_json::json;

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

/// A processor whose edit model is `image_model` (set past the configuration's check, as a
/// model the provider shuts down while the deployment runs).
fn processor_with_image_model(h: &Harness, model: &StandIn, image_model: &str) -> Processor {
    let mut config = ModelConfig::new(model.base_url.clone());
    config.image_model = find(image_model).unwrap_or_else(|| panic!("{image_model} catalogued"));
    let client = ModelClient::new(config).unwrap_or_else(|e| panic!("{e}"));
    Processor::new(h.app.clone(), client, atelier_tests::credentials::signing())
}

#[tokio::test]
async fn a_shut_down_edit_model_is_an_outage_the_job_is_refunded_and_the_refused_call_costs_nothing()
 {
    let (h, model) = (Harness::isolated(|_| {}).await, StandIn::start().await);
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

    let outcome = processor_with_image_model(&h, &model, "gpt-image-1")
        .process(&job_id(&id))
        .await;

    assert_eq!(
        outcome.ok(),
        Some(Outcome::Failed {
            code: FailureCode::EditFailed
        })
    );
    assert_eq!(model.calls(&id).await.edit, 1, "one refused call, no retry");
    assert_eq!(h.balance(&user).await, before, "the user is refunded");
    let attempts = h
        .app
        .store
        .attempts_of(&job_id(&id))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let a = attempts.first().unwrap_or_else(|| panic!("an attempt"));
    let edit = a
        .calls
        .get("edit")
        .unwrap_or_else(|| panic!("the edit is recorded: {a:?}"));
    assert_eq!(
        edit.outcome, "model_unavailable",
        "its own failure class: {edit:?}"
    );
    assert_eq!(edit.model.as_deref(), Some("gpt-image-1@2026-11"));
    assert_eq!(
        edit.cost_micros,
        Some(Micros::ZERO),
        "a 404 is refused before any work"
    );
    let check = a
        .calls
        .get("check")
        .unwrap_or_else(|| panic!("the check: {a:?}"));
    assert_eq!(check.model.as_deref(), Some("gpt-5.4-mini@2026-12-01"));
    assert_eq!(
        a.settled_cost_micros, check.cost_micros,
        "the attempt settles at the check's cost alone: {a:?}"
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_delivered_job_books_every_call_at_the_row_of_the_model_that_served_it() {
    let (h, model) = (Harness::isolated(|_| {}).await, StandIn::start().await);
    let user = h.user();
    let id = h
        .submit_photo(
            &user,
            "k",
            samples::single_pet(),
            json!({ "style": "origami", "target": "pet" }),
        )
        .await;

    let outcome = h.processor(&model).process(&job_id(&id)).await;

    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    let attempts = h
        .app
        .store
        .attempts_of(&job_id(&id))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let mut booked = 0;
    for a in &attempts {
        for (kind, call) in a.calls.iter().filter(|(_, c)| c.outcome == "ok") {
            let id = if kind == "edit" {
                catalogue::DEFAULT_IMAGE_MODEL
            } else {
                catalogue::DEFAULT_VISION_MODEL
            };
            let row = find(id).unwrap_or_else(|| panic!("{id}"));
            assert_eq!(
                call.model.as_deref(),
                Some(row.price_label().as_str()),
                "{kind}"
            );
            let usage: Usage = serde_json::from_value(call.usage.clone().unwrap_or_default())
                .unwrap_or_else(|e| panic!("{kind} usage: {e}"));
            assert_eq!(call.cost_micros, cost::cost_micros(row, &usage), "{kind}");
            booked += 1;
        }
    }
    assert!(booked >= 3, "check, edit and review booked: {attempts:?}");
    h.assert_audit_clean().await;
}
