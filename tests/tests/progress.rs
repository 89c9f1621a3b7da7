//! What a person watching a job sees while it runs: its stage (queued, looking, drawing,
//! checking) as the consumer records it, and how long their edits usually take. Against
//! ministack and the stand-in model server.

use std::time::Duration;

use atelier_model_server::samples;
use atelier_shared::domain::JobId;
use atelier_shared::services::process::Outcome;
use atelier_tests::{Harness, JobCalls, StandIn};
use serde_json::{Value, json};

fn pet() -> Value {
    json!({ "style": "embroidery", "target": "pet" })
}

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

#[tokio::test]
async fn a_running_edit_shows_each_stage_in_order_and_none_once_delivered() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let id = h
        .submit_photo(&user, "k", samples::single_pet(), pet())
        .await;
    assert_eq!(h.job(&user, &id).await.body["stage"], "queued");
    // Each paid call answers slowly enough for a watcher polling every 50 ms to see it.
    for call in ["check", "edit", "review"] {
        model
            .fault(json!({ "call": call, "job": id, "fault": "latency_ms", "ms": 700 }))
            .await;
    }
    let processor = h.processor(&model);

    let watch = async {
        let mut seen: Vec<String> = Vec::new();
        loop {
            let job = h.job(&user, &id).await;
            if let Some(stage) = job.body["stage"].as_str()
                && seen.last().map(String::as_str) != Some(stage)
            {
                seen.push(stage.to_owned());
            }
            if job.str("status") == "succeeded" {
                return (seen, job);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let job = job_id(&id);
    let (outcome, (seen, done)) = tokio::join!(processor.process(&job), watch);

    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    let order: Vec<&str> = seen
        .iter()
        .map(String::as_str)
        .filter(|s| *s != "queued")
        .collect();
    assert_eq!(order, ["looking", "drawing", "checking"], "{seen:?}");
    assert!(done.body.get("stage").is_none(), "{:?}", done.body);
    let result = &done.body["result"];
    let corner = |k: &str| result["area"][k].as_u64().unwrap_or(u64::MAX);
    assert!(
        corner("x0") < corner("x1") && corner("y0") < corner("y1") && corner("x1") <= 1000,
        "a pet edit shows the box the checker found around the pet: {result}"
    );
    assert_eq!(
        result["leakage"]["basis"], "region",
        "measured outside that box"
    );
    assert_eq!(
        model.calls(&id).await,
        JobCalls {
            check: 1,
            edit: 1,
            review: 1,
            compare: 0
        },
        "recording the stages makes no model call"
    );
}

#[tokio::test]
async fn a_queued_edit_says_how_long_edits_usually_take_once_there_are_three() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.funded_user(40).await;
    let processor = h.processor(&model);
    let mut usual = Vec::new();
    for n in 0..4 {
        let id = h
            .submit_photo(&user, &format!("k{n}"), samples::single_pet(), pet())
            .await;
        usual.push(h.job(&user, &id).await.body["usual_secs"].clone());
        let outcome = processor.process(&job_id(&id)).await;
        assert!(
            matches!(outcome, Ok(Outcome::Delivered { .. })),
            "{outcome:?}"
        );
        assert!(
            h.job(&user, &id).await.body.get("usual_secs").is_none(),
            "a delivered edit needs no estimate"
        );
    }
    assert_eq!(
        usual[..3],
        [Value::Null, Value::Null, Value::Null],
        "fewer than three delivered edits give no estimate"
    );
    let secs = usual[3].as_u64().unwrap_or(u64::MAX);
    assert!(
        secs < 60,
        "three delivered edits of a few seconds: {}",
        usual[3]
    );
}
