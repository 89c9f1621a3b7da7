//! Metrics on the real local stack: the consumer's EMF documents during a provider outage
//! (the stand-in fails every edit) name the outcome and the failure code, and nothing else
//! that could grow without bound. One test: the recorder is process-wide.

use atelier_model_server::samples;
use atelier_shared::adapters::metrics::{Metric, dim};
use atelier_tests::{Harness, StandIn, flushed_metrics, sqs_event};
use serde_json::{Value, json};

const FUNCTION: &str = "atelier-test-consumer";

/// The value of `metric` in the document whose dimensions are exactly `dims` (besides
/// `FunctionName`); `None` when no such document was emitted.
fn value(docs: &[Value], metric: Metric, dims: &[(&str, &str)]) -> Option<Value> {
    docs.iter().find_map(|d| {
        let declared = &d["_aws"]["CloudWatchMetrics"][0];
        let keys: Vec<&str> = declared["Dimensions"][0]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut want: Vec<&str> = dims.iter().map(|(k, _)| *k).collect();
        want.push(dim::FUNCTION_NAME);
        let same_keys = keys.len() == want.len() && want.iter().all(|k| keys.contains(k));
        let same_values =
            dims.iter().all(|(k, v)| d[*k] == *v) && d[dim::FUNCTION_NAME] == FUNCTION;
        (same_keys && same_values && d.get(metric.name()).is_some())
            .then(|| d[metric.name()].clone())
    })
}

#[tokio::test]
async fn a_provider_outage_emits_edit_failed_outcomes_refunds_and_failed_edit_calls() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    flushed_metrics(FUNCTION); // installs the recorder; nothing recorded yet
    model
        .fault(json!({ "call": "edit", "fault": "error_500" }))
        .await;
    let user = h.funded_user(20).await;
    let body = json!({ "style": "embroidery", "target": "pet" });
    let mut ids = Vec::new();
    for key in ["k1", "k2"] {
        ids.push(
            h.submit_photo(&user, key, samples::single_pet(), body.clone())
                .await,
        );
    }
    let processor = h.processor(&model);

    for id in &ids {
        let response = atelier_consumer::handle(&processor, sqs_event(id)).await;
        assert!(response.batch_item_failures.is_empty());
    }
    // The signup grant pays for one edit; the second is refused with 402.
    let poor = h.user();
    let mut poor_body = body.clone();
    poor_body["original_asset_id"] =
        json!(h.upload(&poor, "original", samples::single_pet()).await);
    h.submit(&poor, Some("k1"), &poor_body).await;
    let refused = h.submit(&poor, Some("k2"), &poor_body).await;
    assert_eq!(refused.code(), "INSUFFICIENT_CREDITS", "{refused:?}");
    let docs = flushed_metrics(FUNCTION);

    let failed = [(dim::OUTCOME, "failed"), (dim::FAILURE_CODE, "EDIT_FAILED")];
    assert_eq!(
        value(&docs, Metric::JobsFinished, &failed),
        Some(json!(2)),
        "{docs:#?}"
    );
    let refunds = [(dim::REFUND_SOURCE, "consumer")];
    assert_eq!(value(&docs, Metric::Refunds, &refunds), Some(json!(2)));
    let edits = [
        (dim::CALL_KIND, "edit"),
        (dim::CALL_OUTCOME, "model_provider_error"),
    ];
    assert_eq!(value(&docs, Metric::ModelCalls, &edits), Some(json!(2)));
    let checks = [(dim::CALL_KIND, "check"), (dim::CALL_OUTCOME, "ok")];
    assert_eq!(value(&docs, Metric::ModelCalls, &checks), Some(json!(2)));
    let payment = [(dim::STATUS, "402"), (dim::CODE, "INSUFFICIENT_CREDITS")];
    assert_eq!(value(&docs, Metric::Refusals, &payment), Some(json!(1)));
    let waits = value(&docs, Metric::QueueWait, &[]).expect("a queue wait per claim");
    assert_eq!(waits.as_array().map(Vec::len), Some(2), "{waits}");
    assert!(
        value(
            &docs,
            Metric::JobsFinished,
            &[(dim::OUTCOME, "delivered"), (dim::FAILURE_CODE, "NONE")]
        )
        .is_none()
    );
    let text = serde_json::to_string(&docs).unwrap_or_default();
    for private in ids
        .iter()
        .map(String::as_str)
        .chain([user.as_str(), poor.as_str()])
    {
        assert!(!text.contains(private), "a metric document names {private}");
    }
    assert!(
        flushed_metrics(FUNCTION)
            .iter()
            .all(|d| d.get(Metric::JobsFinished.name()).is_none()),
        "a flush empties the counters"
    );
    h.assert_audit_clean().await;
}
