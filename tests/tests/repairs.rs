//! Repairs (rule 7) against ministack and the stand-in model server: paid like an edit, at
//! most two per edit, edited from the version the user holds, and kept only when the
//! reviewer says the candidate improved on it.

use atelier_model_server::samples;
use atelier_shared::domain::FailureCode;
use atelier_shared::domain::JobId;
use atelier_shared::domain::LedgerKind;
use atelier_shared::services::process::{Outcome, Processor};
use atelier_tests::{Harness, JobCalls, Reply, StandIn};
use futures::future::join_all;
use http::StatusCode;
use serde_json::{Value, json};

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

fn fix(words: &str) -> Value {
    json!({ "instruction": words })
}

/// A funded user with a succeeded pet edit; returns (user, edit id, processor).
async fn succeeded_edit(
    h: &Harness,
    model: &StandIn,
) -> (atelier_shared::domain::UserId, String, Processor) {
    let user = h.funded_user(40).await;
    let id = h
        .submit_photo(
            &user,
            "edit",
            samples::single_pet(),
            json!({ "style": "embroidery", "target": "pet" }),
        )
        .await;
    let processor = h.processor(model);
    let outcome = processor.process(&job_id(&id)).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    (user, id, processor)
}

/// Submits a repair (must be accepted) and runs it; returns the repair's id.
async fn repaired(
    h: &Harness,
    p: &Processor,
    user: &atelier_shared::domain::UserId,
    of: &str,
    key: &str,
) -> String {
    let res = h
        .repair(user, of, key, &fix("finer stitches on the ears"))
        .await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    let id = res.str("id");
    let outcome = p.process(&job_id(&id)).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    id
}

async fn download(url: &str) -> image::RgbaImage {
    let bytes = reqwest::get(url)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .bytes()
        .await
        .unwrap_or_default();
    image::load_from_memory(&bytes)
        .unwrap_or_else(|e| panic!("not an image: {e}"))
        .to_rgba8()
}

fn url(reply: &Reply) -> String {
    reply.body["result"]["url"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn debits(rows: &[atelier_shared::store::schema::LedgerItem], job: &str) -> usize {
    rows.iter()
        .filter(|r| {
            r.kind == LedgerKind::Debit && r.job_id.as_ref().is_some_and(|j| j.as_str() == job)
        })
        .count()
}

#[tokio::test]
async fn an_improved_repair_becomes_the_current_version() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, p) = succeeded_edit(&h, &model).await;
    model
        .fault(json!({ "call": "compare", "fault": "compare_improved" }))
        .await;
    let before = h.balance(&user).await;

    let repair = repaired(&h, &p, &user, &edit, "r1").await;

    assert_eq!(
        h.balance(&user).await,
        before - 4,
        "a pet repair costs what the edit cost"
    );
    let job = h.job(&user, &repair).await;
    assert_eq!(job.str("status"), "succeeded", "{job:?}");
    let result = &job.body["result"];
    assert_eq!(result["comparison"]["outcome"], "improved", "{result}");
    assert_eq!(result["comparison"]["compared_with"], edit.as_str());
    assert_eq!(result["retained_previous"], false);
    assert_eq!(job.body["repair"]["parent_job_id"], edit.as_str());
    let lineage = &h.job(&user, &edit).await.body["lineage"];
    assert_eq!(lineage["current_job_id"], repair.as_str(), "{lineage}");
    assert_eq!(lineage["repairs_used"], 1);
    assert_eq!(lineage["repairs_left"], 1);
    assert_eq!(lineage["versions"].as_array().map(Vec::len), Some(2));
    assert_eq!(lineage["versions"][1]["current"], true);
    assert_eq!(
        model.calls(&repair).await,
        JobCalls {
            check: 0,
            edit: 1,
            review: 0,
            compare: 1
        },
        "a repair makes one edit and one comparison"
    );
    let image = download(&url(&job)).await;
    assert_eq!(image.dimensions(), (samples::WIDTH, samples::HEIGHT));
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_second_repair_starts_from_the_improved_version() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, p) = succeeded_edit(&h, &model).await;
    model
        .fault(json!({ "call": "compare", "fault": "compare_improved" }))
        .await;
    let first = repaired(&h, &p, &user, &edit, "r1").await;

    // Repairing through the repair's id repairs the same lineage.
    let second = repaired(&h, &p, &user, &first, "r2").await;

    let job = h.job(&user, &second).await;
    assert_eq!(
        job.body["result"]["comparison"]["compared_with"],
        first.as_str()
    );
    assert_eq!(job.body["repair"]["parent_job_id"], edit.as_str());
    let lineage = &job.body["lineage"];
    assert_eq!(lineage["current_job_id"], second.as_str());
    assert_eq!(lineage["repairs_left"], 0);
}

#[tokio::test]
async fn an_unchanged_or_worse_repair_keeps_the_previous_image_and_stops_repairs() {
    for verdict in ["unchanged", "worse"] {
        let (h, model) = (Harness::new().await, StandIn::start().await);
        let (user, edit, p) = succeeded_edit(&h, &model).await;
        model
            .fault(json!({ "call": "compare", "fault": format!("compare_{verdict}") }))
            .await;
        let previous = download(&url(&h.job(&user, &edit).await)).await;

        let repair = repaired(&h, &p, &user, &edit, "r1").await;

        let job = h.job(&user, &repair).await;
        let result = &job.body["result"];
        assert_eq!(result["comparison"]["outcome"], verdict, "{result}");
        assert_eq!(result["retained_previous"], true);
        assert_eq!(
            result["review"],
            h.job(&user, &edit).await.body["result"]["review"],
            "the kept image keeps its own review"
        );
        let delivered = download(&url(&job)).await;
        assert!(
            delivered == previous,
            "{verdict}: the user keeps the previous image"
        );
        let candidate = download(result["candidate_url"].as_str().unwrap_or_default()).await;
        assert_eq!(
            candidate.dimensions(),
            previous.dimensions(),
            "the candidate is stored"
        );
        let lineage = &job.body["lineage"];
        assert_eq!(lineage["current_job_id"], edit.as_str(), "{lineage}");
        assert_eq!(lineage["repairs_stopped"], true);
        let listed = h.get(&user, "/v1/edits").await.body["items"].clone();
        let thumb_of = |id: &str| {
            let entry = listed
                .as_array()
                .and_then(|a| a.iter().find(|j| j["id"] == id));
            entry.map(|j| (j["retained_previous"].clone(), j["thumbnail_url"].clone()))
        };
        let (rejected, shown) = thumb_of(&repair).unwrap_or_default();
        assert_eq!(rejected, true, "listed as not a new version: {listed}");
        let (_, previous_thumb) = thumb_of(&edit).unwrap_or_default();
        assert_eq!(
            download(shown.as_str().unwrap_or_default()).await,
            download(previous_thumb.as_str().unwrap_or_default()).await,
            "{verdict}: the list shows the kept version"
        );
        assert_eq!(lineage["repairs_left"], 0);

        let (balance, rows) = (h.balance(&user).await, h.ledger(&user).await.len());
        let refused = h.repair(&user, &edit, "r2", &fix("try again")).await;
        assert_eq!(refused.status, StatusCode::CONFLICT, "{refused:?}");
        assert_eq!(refused.code(), "REPAIRS_STOPPED");
        assert_eq!(
            h.balance(&user).await,
            balance,
            "a refused repair charges nothing"
        );
        assert_eq!(h.ledger(&user).await.len(), rows);
        h.assert_audit_clean().await;
    }
}

/// A repair whose comparison said `worse`: (user, edit, repair, processor).
async fn rejected_repair(
    h: &Harness,
    model: &StandIn,
) -> (atelier_shared::domain::UserId, String, String, Processor) {
    let (user, edit, p) = succeeded_edit(h, model).await;
    model
        .fault(json!({ "call": "compare", "fault": "compare_worse" }))
        .await;
    let repair = repaired(h, &p, &user, &edit, "r1").await;
    (user, edit, repair, p)
}

#[tokio::test]
async fn the_owner_can_choose_a_rejected_candidate_for_free_and_once() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, repair, _p) = rejected_repair(&h, &model).await;
    let job = h.job(&user, &repair).await;
    let candidate_url = job.body["result"]["candidate_url"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let candidate = download(&candidate_url).await;
    let (balance, ledger) = (h.balance(&user).await, h.ledger(&user).await.len());
    let calls = model.calls(&repair).await;

    let adopted = h.adopt(&user, &repair).await;

    assert_eq!(adopted.status, StatusCode::OK, "{adopted:?}");
    let result = &adopted.body["result"];
    assert!(result["adopted_at"].is_string(), "{result}");
    assert_eq!(result["retained_previous"], false);
    assert_eq!(
        result["comparison"]["outcome"], "worse",
        "the record keeps what the comparison said"
    );
    assert_eq!(adopted.body["lineage"]["current_job_id"], repair.as_str());
    let png = h.job_in(&user, &repair, "png").await;
    assert!(
        download(&url(&png)).await == candidate,
        "the repair now delivers the candidate's bytes"
    );
    let root = h.job(&user, &edit).await;
    assert_eq!(root.body["lineage"]["current_job_id"], repair.as_str());
    assert_eq!(root.body["lineage"]["versions"][1]["current"], true);
    assert_eq!(h.balance(&user).await, balance, "choosing is free");
    assert_eq!(
        h.ledger(&user).await.len(),
        ledger,
        "and writes no ledger row"
    );
    assert_eq!(model.calls(&repair).await, calls, "and calls no model");

    let again = h.adopt(&user, &repair).await;
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(
        again.body["result"]["adopted_at"], result["adopted_at"],
        "choosing twice is one change"
    );
    assert_eq!(
        h.job(&user, &edit).await.body["lineage"],
        root.body["lineage"]
    );
    assert_eq!(h.balance(&user).await, balance);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn concurrent_choices_of_a_candidate_make_one_change() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, _edit, repair, _p) = rejected_repair(&h, &model).await;

    let replies = join_all((0..4).map(|_| h.adopt(&user, &repair))).await;

    let stamps: std::collections::BTreeSet<String> = replies
        .iter()
        .map(|r| {
            assert_eq!(r.status, StatusCode::OK, "{r:?}");
            r.body["result"]["adopted_at"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        stamps.len(),
        1,
        "one adoption, seen by every caller: {stamps:?}"
    );
}

#[tokio::test]
async fn only_the_owner_and_only_a_rejected_candidate_can_be_chosen() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, repair, _p) = rejected_repair(&h, &model).await;
    let before = h.job(&user, &edit).await.body["lineage"].clone();

    let stranger = h.adopt(&h.user(), &repair).await;
    assert_eq!(stranger.status, StatusCode::NOT_FOUND, "{stranger:?}");

    let the_edit = h.adopt(&user, &edit).await;
    assert_eq!(the_edit.status, StatusCode::CONFLICT, "{the_edit:?}");
    assert_eq!(the_edit.code(), "CANDIDATE_NOT_ADOPTABLE");
    assert_eq!(
        h.job(&user, &edit).await.body["lineage"],
        before,
        "nothing changed"
    );

    let model2 = StandIn::start().await;
    let (owner, edit2, p2) = succeeded_edit(&h, &model2).await;
    model2
        .fault(json!({ "call": "compare", "fault": "compare_improved" }))
        .await;
    let improved = repaired(&h, &p2, &owner, &edit2, "r1").await;
    let kept = h.adopt(&owner, &improved).await;
    assert_eq!(kept.status, StatusCode::CONFLICT, "{kept:?}");
    assert_eq!(kept.code(), "CANDIDATE_NOT_ADOPTABLE");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn the_third_repair_is_refused_and_charges_nothing() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, p) = succeeded_edit(&h, &model).await;
    model
        .fault(json!({ "call": "compare", "fault": "compare_improved" }))
        .await;
    repaired(&h, &p, &user, &edit, "r1").await;
    repaired(&h, &p, &user, &edit, "r2").await;
    let (balance, rows) = (h.balance(&user).await, h.ledger(&user).await.len());

    let third = h.repair(&user, &edit, "r3", &fix("one more")).await;

    assert_eq!(third.status, StatusCode::CONFLICT, "{third:?}");
    assert_eq!(third.code(), "REPAIR_LIMIT_REACHED");
    assert_eq!(h.balance(&user).await, balance);
    assert_eq!(h.ledger(&user).await.len(), rows);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_replayed_repair_is_charged_once_even_concurrently() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, _p) = succeeded_edit(&h, &model).await;
    let before = h.balance(&user).await;

    let body = fix("finer");
    let replies = join_all((0..8).map(|_| h.repair(&user, &edit, "same-key", &body))).await;

    let created: Vec<&Reply> = replies
        .iter()
        .filter(|r| r.status == StatusCode::ACCEPTED)
        .collect();
    let replayed = replies
        .iter()
        .filter(|r| r.status == StatusCode::OK && r.header("idempotent-replayed") == Some("true"))
        .count();
    assert_eq!(created.len(), 1, "{replies:?}");
    assert_eq!(replayed, 7, "{replies:?}");
    let id = created[0].str("id");
    assert!(replies.iter().all(|r| r.str("id") == id));
    assert_eq!(h.balance(&user).await, before - 4);
    assert_eq!(debits(&h.ledger(&user).await, &id), 1);

    let other = h.repair(&user, &edit, "same-key", &fix("coarser")).await;
    assert_eq!(other.status, StatusCode::CONFLICT);
    assert_eq!(other.code(), "IDEMPOTENCY_CONFLICT");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn concurrent_repairs_with_different_keys_start_one_at_a_time() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, _p) = succeeded_edit(&h, &model).await;
    let before = h.balance(&user).await;

    let body = fix("finer");
    let keys: Vec<String> = (0..6).map(|i| format!("key-{i}")).collect();
    let replies = join_all(keys.iter().map(|k| h.repair(&user, &edit, k, &body))).await;

    let created = replies
        .iter()
        .filter(|r| r.status == StatusCode::ACCEPTED)
        .count();
    let busy = replies
        .iter()
        .filter(|r| r.code() == "REPAIR_IN_PROGRESS")
        .count();
    assert_eq!((created, busy), (1, 5), "{replies:?}");
    assert_eq!(h.balance(&user).await, before - 4);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_repair_that_tries_to_change_the_style_is_a_clear_422() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, _p) = succeeded_edit(&h, &model).await;
    let before = h.balance(&user).await;

    let res = h
        .repair(
            &user,
            &edit,
            "k",
            &json!({ "instruction": "as origami", "style": "origami" }),
        )
        .await;

    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{res:?}");
    assert_eq!(res.code(), "VALIDATION_FAILED");
    assert_eq!(res.body["errors"][0]["field"], "style");
    assert_eq!(res.body["errors"][0]["code"], "settings_locked");
    assert_eq!(h.balance(&user).await, before);
}

#[tokio::test]
async fn reviewer_down_delivers_the_candidate_not_verified_and_repairs_go_on() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, p) = succeeded_edit(&h, &model).await;
    model
        .fault(json!({ "call": "compare", "fault": "error_500" }))
        .await;

    let repair = repaired(&h, &p, &user, &edit, "r1").await;

    let job = h.job(&user, &repair).await;
    let result = &job.body["result"];
    assert_eq!(result["review"]["verdict"], "not_verified", "{result}");
    assert_eq!(result["comparison"]["outcome"], "not_verified");
    assert_eq!(
        result["retained_previous"], false,
        "nothing kept on evidence that does not exist"
    );
    assert_eq!(job.body["lineage"]["current_job_id"], repair.as_str());
    assert_eq!(job.body["lineage"]["repairs_stopped"], false);
    let next = h.repair(&user, &edit, "r2", &fix("again")).await;
    assert_eq!(next.status, StatusCode::ACCEPTED, "{next:?}");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_failed_repair_is_refunded_once_and_gives_its_slot_back() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, p) = succeeded_edit(&h, &model).await;
    model
        .fault(json!({ "call": "edit", "fault": "error_500", "times": 1 }))
        .await;
    let before = h.balance(&user).await;
    let res = h.repair(&user, &edit, "r1", &fix("finer")).await;
    let repair = res.str("id");

    let outcome = p.process(&job_id(&repair)).await;
    let again = p.process(&job_id(&repair)).await;

    assert_eq!(
        outcome.ok(),
        Some(Outcome::Failed {
            code: FailureCode::EditFailed
        })
    );
    assert_eq!(
        again.ok(),
        Some(Outcome::NotClaimed),
        "a redelivery does nothing"
    );
    assert_eq!(model.calls(&repair).await.edit, 1);
    assert_eq!(h.balance(&user).await, before);
    let rows = h.ledger(&user).await;
    let refunds = rows
        .iter()
        .filter(|r| {
            r.kind == LedgerKind::Refund && r.job_id.as_ref().is_some_and(|j| j.as_str() == repair)
        })
        .count();
    assert_eq!((debits(&rows, &repair), refunds), (1, 1));
    let lineage = &h.job(&user, &edit).await.body["lineage"];
    assert_eq!(lineage["repairs_used"], 0, "{lineage}");
    assert_eq!(lineage["current_job_id"], edit.as_str());
    let next = h.repair(&user, &edit, "r2", &fix("finer")).await;
    assert_eq!(
        next.status,
        StatusCode::ACCEPTED,
        "the slot came back: {next:?}"
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_queued_repair_can_be_canceled_and_refunded() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, _p) = succeeded_edit(&h, &model).await;
    let before = h.balance(&user).await;
    let repair = h.repair(&user, &edit, "r1", &fix("finer")).await.str("id");

    let canceled = h.cancel(&user, &repair).await;

    assert_eq!(canceled.str("status"), "canceled", "{canceled:?}");
    assert_eq!(h.balance(&user).await, before);
    let next = h.repair(&user, &edit, "r2", &fix("finer")).await;
    assert_eq!(next.status, StatusCode::ACCEPTED, "{next:?}");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn only_a_succeeded_edit_of_your_own_can_be_repaired() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.user();
    let queued = h
        .submit_photo(
            &user,
            "q",
            samples::single_pet(),
            json!({ "style": "origami", "target": "pet" }),
        )
        .await;

    let res = h.repair(&user, &queued, "k", &fix("finer")).await;
    assert_eq!(res.status, StatusCode::CONFLICT, "{res:?}");
    assert_eq!(res.code(), "NOT_REPAIRABLE");
    assert_eq!(res.body["state"], "queued");

    let (_owner, edit, _p) = succeeded_edit(&h, &model).await;
    let stranger = h.repair(&user, &edit, "k2", &fix("finer")).await;
    assert_eq!(stranger.status, StatusCode::NOT_FOUND, "{stranger:?}");
}

#[tokio::test]
async fn a_repair_whose_consumer_died_is_swept_refunded_and_frees_its_slot() {
    use atelier_shared::clock;
    use atelier_shared::services::process::Step;
    // A stack of its own: the sweep acts on every stuck job it finds.
    let (h, model) = (Harness::isolated(|_| {}).await, StandIn::start().await);
    let (user, edit, p) = succeeded_edit(&h, &model).await;
    let before = h.balance(&user).await;
    let repair = h.repair(&user, &edit, "r1", &fix("finer")).await.str("id");
    let mut dying = p.clone();
    dying.crash_at = Some(Step::AfterEdit);
    let died = dying.process(&job_id(&repair)).await;
    assert!(died.is_err(), "{died:?}");

    atelier_sweeper::handle(
        &h.app,
        clock::now() + std::time::Duration::from_secs(16 * 60),
    )
    .await;

    let job = h.job(&user, &repair).await;
    assert_eq!(job.str("status"), "failed", "{job:?}");
    assert_eq!(h.balance(&user).await, before, "refunded");
    assert_eq!(
        model.calls(&repair).await.edit,
        1,
        "never a second edit call"
    );
    let next = h.repair(&user, &edit, "r2", &fix("finer")).await;
    assert_eq!(
        next.status,
        StatusCode::ACCEPTED,
        "the slot came back: {next:?}"
    );
    h.assert_audit_clean().await;
}

/// A 12 MP phone photo full of sensor noise, as the JPEG a phone uploads (under the upload
/// limit), and a brushed circle in its middle: outside the brush the delivered result is this
/// noise, pixel for pixel, which no PNG compressor can shrink.
fn noisy_12_mp_photo() -> (Vec<u8>, Vec<u8>) {
    const W: u32 = 4032;
    const H: u32 = 3024;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let photo = image::RgbImage::from_fn(W, H, |x, y| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let [r, g, b, ..] = state.to_le_bytes();
        let base = [150 + (x * 40 / W) as u8, 120, 90 + (y * 40 / H) as u8];
        image::Rgb([
            base[0].wrapping_add(r % 64).wrapping_sub(32),
            base[1].wrapping_add(g % 64).wrapping_sub(32),
            base[2].wrapping_add(b % 64).wrapping_sub(32),
        ])
    });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
        .encode_image(&photo)
        .unwrap_or_else(|e| panic!("{e}"));
    let r = 400i64;
    let weights = image::GrayImage::from_fn(W, H, |x, y| {
        let (dx, dy) = (i64::from(x) - 2016, i64::from(y) - 1512);
        image::Luma([if dx * dx + dy * dy <= r * r { 255 } else { 0 }])
    });
    let mask = atelier_shared::domain::imaging::Mask::from_weights(weights)
        .to_alpha_png()
        .unwrap_or_else(|e| panic!("{e}"));
    (jpeg, mask)
}

/// Bytes of the object a delivered job's result is stored as.
async fn stored_result_bytes(h: &Harness, job: &str) -> i64 {
    let item = h.app.store.get_job(&job_id(job)).await;
    let key = item
        .ok()
        .flatten()
        .and_then(|j| j.result().cloned())
        .map(|r| r.asset_key)
        .unwrap_or_else(|| panic!("{job} has no result"));
    let head = h
        .clients
        .s3
        .head_object()
        .bucket(h.app.assets.bucket())
        .key(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    head.content_length().unwrap_or_default()
}

#[tokio::test]
async fn a_textured_12_mp_photo_whose_result_is_larger_than_any_upload_can_be_repaired() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let user = h.funded_user(40).await;
    let (photo, mask) = noisy_12_mp_photo();
    let upload_limit = atelier_shared::domain::imaging::DecodeLimits::PHOTO.max_bytes;
    assert!(photo.len() as u64 <= upload_limit, "{} bytes", photo.len());
    let slot = h
        .create_upload(&user, "original", "image/jpeg", photo.len() as i64)
        .await;
    assert_eq!(slot.status, StatusCode::CREATED, "{slot:?}");
    assert_eq!(h.put_upload(&slot, photo, None).await, 200);
    let mask = h.upload(&user, "mask", mask).await;
    let body = json!({
        "style": "embroidery", "target": "brush",
        "original_asset_id": slot.str("asset_id"), "mask_asset_id": mask,
    });
    let res = h.submit(&user, Some("edit"), &body).await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    let edit = res.str("id");
    let p = h.processor(&model);
    let outcome = p.process(&job_id(&edit)).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    let delivered = stored_result_bytes(&h, &edit).await;
    eprintln!("delivered 4032x3024 result: {delivered} bytes (upload limit {upload_limit})");
    assert!(
        delivered as u64 > upload_limit,
        "the result ({delivered} bytes) must be larger than any upload"
    );
    model
        .fault(json!({ "call": "compare", "fault": "compare_improved" }))
        .await;

    let repair = repaired(&h, &p, &user, &edit, "r1").await;

    let job = h.job(&user, &repair).await;
    assert_eq!(job.str("status"), "succeeded", "{job:?}");
    assert_eq!(job.body["result"]["comparison"]["outcome"], "improved");
    assert_eq!(job.body["lineage"]["current_job_id"], repair.as_str());
    assert_eq!(
        (
            job.body["result"]["width"].as_u64(),
            job.body["result"]["height"].as_u64()
        ),
        (Some(4032), Some(3024))
    );
    eprintln!(
        "repaired 4032x3024 result: {} bytes",
        stored_result_bytes(&h, &repair).await
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn the_lineage_offers_exactly_the_repairs_the_next_submit_accepts_after_failed_repairs() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, p) = succeeded_edit(&h, &model).await;
    let mut offered = Vec::new();
    for n in 0.. {
        let lineage = h.job(&user, &edit).await.body["lineage"].clone();
        let left = if n == 0 {
            lineage["repairs_left"].as_u64().unwrap_or(2)
        } else {
            lineage["repairs_left"]
                .as_u64()
                .unwrap_or_else(|| panic!("no repairs_left: {lineage}"))
        };
        offered.push(left);
        let (balance, rows) = (h.balance(&user).await, h.ledger(&user).await.len());
        let res = h
            .repair(&user, &edit, &format!("r{n}"), &fix("finer"))
            .await;
        if left == 0 {
            assert_eq!(res.status, StatusCode::CONFLICT, "{res:?}");
            assert_eq!(res.code(), "REPAIR_LIMIT_REACHED");
            assert_eq!(h.balance(&user).await, balance, "nothing charged");
            assert_eq!(h.ledger(&user).await.len(), rows);
            break;
        }
        assert_eq!(
            res.status,
            StatusCode::ACCEPTED,
            "the lineage offered {left} repairs: {res:?}"
        );
        model
            .fault(json!({ "call": "edit", "fault": "error_500", "times": 1 }))
            .await;
        let outcome = p.process(&job_id(&res.str("id"))).await;
        assert_eq!(
            outcome.ok(),
            Some(Outcome::Failed {
                code: FailureCode::EditFailed
            })
        );
        assert!(n < 10, "the attempts cap must stop the lineage");
    }
    assert_eq!(
        offered,
        [2, 2, 2, 1, 0],
        "four refunded attempts leave none"
    );
    let lineage = &h.job(&user, &edit).await.body["lineage"];
    assert_eq!(lineage["repairs_used"], 0, "{lineage}");
    h.assert_audit_clean().await;
}
