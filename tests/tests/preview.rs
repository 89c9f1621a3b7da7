//! The area before paying (docs/design.md, "The area before paying"): a preview checks and
//! outlines the area, draws nothing and gives the charge back; the edit after it draws that
//! very area without a second check; ten previews a day, counted in the charge's transaction.

use atelier_model_server::samples;
use atelier_shared::domain::{FailureCode, JobId, LedgerKind};
use atelier_shared::services::process::Outcome;
use atelier_tests::{Harness, StandIn};
use futures::future::join_all;
use http::StatusCode;
use serde_json::{Value, json};

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

fn pet(preview: bool) -> Value {
    json!({ "style": "embroidery", "target": "pet", "preview": preview })
}

fn rows_of(rows: &[atelier_shared::store::schema::LedgerItem], kind: LedgerKind) -> usize {
    rows.iter().filter(|r| r.kind == kind).count()
}

#[tokio::test]
async fn a_preview_shows_the_area_draws_nothing_and_gives_the_charge_back() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    h.fund_to(&user, 20).await;
    let before = h.balance(&user).await;

    let id = h
        .submit_photo(&user, "look", samples::single_pet(), pet(true))
        .await;
    let outcome = h.processor(&model).process(&job_id(&id)).await;

    assert_eq!(
        outcome.ok(),
        Some(Outcome::Failed {
            code: FailureCode::Previewed
        })
    );
    let job = h.job(&user, &id).await;
    assert_eq!(job.body["status"], "failed", "{job:?}");
    assert_eq!(job.body["failure"]["code"], "PREVIEWED");
    let candidates = job.body["failure"]["candidates"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(candidates.len(), 1, "the one area found: {job:?}");
    assert!(candidates[0]["area"]["x1"].as_u64() > candidates[0]["area"]["x0"].as_u64());
    let calls = model.calls(&id).await;
    assert_eq!((calls.check, calls.edit, calls.review), (1, 0, 0));
    assert_eq!(h.balance(&user).await, before, "refunded whole");
    let ledger = h.ledger(&user).await;
    assert_eq!(rows_of(&ledger, LedgerKind::Refund), 1);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn the_edit_after_a_preview_draws_that_area_without_a_second_check() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    h.fund_to(&user, 20).await;
    let processor = h.processor(&model);
    let photo = h.upload(&user, "original", samples::single_pet()).await;
    let body = |preview: bool| {
        let mut b = pet(preview);
        b["original_asset_id"] = json!(photo);
        b
    };
    let looked = h.submit(&user, Some("look"), &body(true)).await.str("id");
    let _ = processor.process(&job_id(&looked)).await;
    let shown = h.job(&user, &looked).await.body["failure"]["candidates"][0]["area"].clone();
    let before = h.balance(&user).await;

    let drawn = h.submit(&user, Some("draw"), &body(false)).await;
    assert_eq!(drawn.status, StatusCode::ACCEPTED, "{drawn:?}");
    let price = before - h.balance(&user).await;
    let drawn = drawn.str("id");
    let outcome = processor.process(&job_id(&drawn)).await;

    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    let job = h.job(&user, &drawn).await;
    assert_eq!(job.body["status"], "succeeded", "{job:?}");
    assert_eq!(
        job.body["result"]["area"], shown,
        "the area shown is the one drawn"
    );
    let calls = model.calls(&drawn).await;
    assert_eq!(calls.check, 0, "the preview's answer, not a second check");
    assert_eq!(calls.edit, 1);
    assert!(price > 0);
    assert_eq!(h.balance(&user).await, before - price, "one charge, kept");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_preview_of_a_brushed_area_is_refused_and_charges_nothing() {
    let h = Harness::new().await;
    let user = h.user();
    h.fund_to(&user, 20).await;
    let before = h.balance(&user).await;
    let photo = h.upload(&user, "original", samples::single_pet()).await;
    let body = json!({ "style": "embroidery", "target": "brush", "preview": true,
        "original_asset_id": photo, "mask_asset_id": photo });

    let res = h.submit(&user, Some("brush"), &body).await;

    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{res:?}");
    let fields: Vec<&str> = res.body["errors"]
        .as_array()
        .map(|e| e.iter().filter_map(|f| f["field"].as_str()).collect())
        .unwrap_or_default();
    assert!(fields.contains(&"preview"), "{res:?}");
    assert_eq!(h.balance(&user).await, before);
    assert_eq!(rows_of(&h.ledger(&user).await, LedgerKind::Debit), 0);
}

#[tokio::test]
async fn ten_previews_a_day_even_when_they_race_and_a_replay_is_not_counted_again() {
    // A stack of its own with room for every racer in flight at once: only the day's
    // preview count may refuse.
    let h = Harness::isolated(|l| l.max_in_flight = 20).await;
    let user = h.user();
    h.fund_to(&user, 200).await;
    let photo = h.upload(&user, "original", samples::single_pet()).await;
    let mut body = pet(true);
    body["original_asset_id"] = json!(photo);
    let before = h.balance(&user).await;

    let keys: Vec<String> = (0..14).map(|i| format!("look-{i}")).collect();
    let replies = join_all(keys.iter().map(|k| h.submit(&user, Some(k), &body))).await;

    let accepted: Vec<_> = replies
        .iter()
        .filter(|r| r.status == StatusCode::ACCEPTED)
        .collect();
    let refused: Vec<_> = replies
        .iter()
        .filter(|r| r.status == StatusCode::TOO_MANY_REQUESTS)
        .collect();
    assert_eq!((accepted.len(), refused.len()), (10, 4), "{replies:?}");
    for r in &refused {
        assert_eq!(r.body["code"], "PREVIEW_LIMIT_REACHED", "{r:?}");
        assert!(r.header("retry-after").is_some(), "{r:?}");
    }
    let price = (before - h.balance(&user).await) / 10;
    assert!(
        price > 0,
        "each accepted preview holds its price while it runs"
    );
    assert_eq!(rows_of(&h.ledger(&user).await, LedgerKind::Debit), 10);

    // A replay of an accepted preview answers with its job, past the limit and uncounted.
    let first = replies
        .iter()
        .position(|r| r.status == StatusCode::ACCEPTED)
        .unwrap_or_else(|| panic!("an accepted preview"));
    let again = h.submit(&user, Some(&keys[first]), &body).await;
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(again.str("id"), accepted[0].str("id"));
    // An edit that draws is never a preview: the limit does not touch it.
    body["preview"] = json!(false);
    let edit = h.submit(&user, Some("draw"), &body).await;
    assert_eq!(edit.status, StatusCode::ACCEPTED, "{edit:?}");
    assert_eq!(rows_of(&h.ledger(&user).await, LedgerKind::Debit), 11);
    h.assert_audit_clean().await;
}
