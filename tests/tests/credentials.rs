//! Content credentials (C2PA) on every delivered result (issue 46), read by the Content
//! Authenticity Initiative's official library (`c2pa-python`), never by our own code: trusted
//! under the deployment's anchor, saying what was changed, by which model, with which medium,
//! and nothing of the user's.

use atelier_model_server::samples;
use atelier_shared::domain::catalogue::DEFAULT_IMAGE_MODEL;
use atelier_shared::domain::{JobId, UserId};
use atelier_shared::services::process::{Outcome, Processor};
use atelier_tests::credentials::{anchor_pem, assert_result_credentials, official_read};
use atelier_tests::{Harness, StandIn};
use http::StatusCode;
use serde_json::{Value, json};

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

/// A user's text the manifest must never carry.
const CUSTOM_STYLE: &str = "in the pastel wool of grandma Ottilie's scarf";

/// A delivered pet edit with a custom style; returns (user, id, processor).
async fn delivered(h: &Harness, model: &StandIn) -> (UserId, String, Processor) {
    let user = h.funded_user(40).await;
    let body = json!({ "style": "embroidery", "target": "pet", "custom_style": CUSTOM_STYLE });
    let id = h
        .submit_photo(&user, "edit", samples::single_pet(), body)
        .await;
    let processor = h.processor(model);
    let outcome = processor.process(&job_id(&id)).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    (user, id, processor)
}

/// The delivered image in `format` (`jpeg`, `png`), as the owner downloads it.
async fn downloaded(h: &Harness, user: &UserId, id: &str, format: &str) -> Vec<u8> {
    let job = h.job_in(user, id, format).await;
    assert_eq!(job.status, StatusCode::OK, "{job:?}");
    atelier_tests::download(job.body["result"]["url"].as_str().unwrap_or_default()).await
}

#[tokio::test]
async fn the_download_and_the_master_carry_credentials_the_official_library_trusts() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, id, _) = delivered(&h, &model).await;

    let jpeg = downloaded(&h, &user, &id, "jpeg").await;
    let png = downloaded(&h, &user, &id, "png").await;
    let verdicts = official_read(&[(&jpeg, "image/jpeg"), (&png, "image/png")], anchor_pem()).await;

    for verdict in &verdicts {
        assert_result_credentials(verdict, DEFAULT_IMAGE_MODEL, "embroidery");
        assert_eq!(verdict["issuer"], "Atelier (tests)", "{verdict:#}");
        let opened = &verdict["actions"][0]["parameters"];
        let photo = atelier_tests::sha256(&samples::single_pet());
        assert_eq!(opened["com.atelier.photo_sha256"], photo, "{opened:#}");
        let edited = &verdict["actions"][1];
        assert_eq!(edited["parameters"]["com.atelier.target"], "pet");
        let region = &edited["changes"][0]["region"][0]["shape"];
        assert_eq!(
            region["unit"], "percent",
            "the checker's box is the changed region: {edited:#}"
        );
        let manifest = verdict["manifest"].to_string();
        for private in [user.as_str(), CUSTOM_STYLE, "grandma"] {
            assert!(
                !manifest.contains(private),
                "the manifest carries {private:?}: {manifest}"
            );
        }
    }
    let stored = h.app.store.get_job(&job_id(&id)).await.ok().flatten();
    let credentials = stored
        .and_then(|j| j.result().and_then(|r| r.credentials.clone()))
        .unwrap_or_else(|| panic!("the job records no credentials"));
    assert_eq!(credentials.model, DEFAULT_IMAGE_MODEL);
    assert_eq!(credentials.medium, "embroidery");
    assert_shown_credentials(&h, &user, &id).await;
}

/// What the owner's `GET /v1/edits/{id}` says of the delivered pet edit's credentials: the
/// label, the model and the medium, in a sentence and as fields, and nothing the user wrote.
async fn assert_shown_credentials(h: &Harness, user: &UserId, id: &str) {
    let job = h.job(user, id).await;
    assert_eq!(job.status, StatusCode::OK, "{job:?}");
    let shown = &job.body["result"]["content_credentials"];
    assert_eq!(shown["label"], "Edited with AI", "{shown:#}");
    assert_eq!(shown["model"], DEFAULT_IMAGE_MODEL, "{shown:#}");
    assert_eq!(shown["medium"], "embroidery", "{shown:#}");
    assert_eq!(shown["action"], "c2pa.edited", "{shown:#}");
    assert_eq!(shown["issuer"], "Atelier (tests)", "{shown:#}");
    let summary = shown["summary"].as_str().unwrap_or_default();
    for said in [
        "The pet",
        "embroidery",
        DEFAULT_IMAGE_MODEL,
        "Atelier (tests)",
    ] {
        assert!(summary.contains(said), "{said:?} not in {summary:?}");
    }
    assert!(
        !shown.to_string().contains("grandma"),
        "the credentials carry the custom style: {shown:#}"
    );
}

#[tokio::test]
async fn a_result_changed_by_one_byte_fails_validation() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, id, _) = delivered(&h, &model).await;
    let png = downloaded(&h, &user, &id, "png").await;
    let jpeg = downloaded(&h, &user, &id, "jpeg").await;
    // One byte of image data, past the manifest: the last byte before PNG's IEND chunk, and a
    // byte in the middle of the JPEG's scan.
    let (mut png_changed, mut jpeg_changed) = (png.clone(), jpeg.clone());
    let at = png.len() - 13;
    png_changed[at] ^= 0x01;
    let mid = jpeg.len() - jpeg.len() / 4;
    jpeg_changed[mid] ^= 0x01;

    let verdicts = official_read(
        &[(&png_changed, "image/png"), (&jpeg_changed, "image/jpeg")],
        anchor_pem(),
    )
    .await;

    for verdict in &verdicts {
        assert_eq!(verdict["state"], "Invalid", "{verdict:#}");
        let failures = verdict["failures"].to_string();
        assert!(
            failures.contains("assertion.dataHash.mismatch"),
            "{verdict:#}"
        );
    }
    let untouched = official_read(&[(&png, "image/png")], anchor_pem()).await;
    assert_eq!(untouched[0]["state"], "Trusted", "the same file unchanged");
}

#[tokio::test]
async fn credentials_signed_by_a_ca_the_verifier_does_not_trust_are_not_trusted() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, id, _) = delivered(&h, &model).await;
    let png = downloaded(&h, &user, &id, "png").await;
    let stranger = atelier_shared::adapters::credentials::test_ca::generate("Someone else")
        .unwrap_or_else(|e| panic!("{e}"));

    let verdict = &official_read(&[(&png, "image/png")], &stranger.anchor_pem).await[0];

    assert_ne!(verdict["state"], "Trusted", "{verdict:#}");
    assert!(
        verdict["failures"]
            .to_string()
            .contains("signingCredential.untrusted"),
        "{verdict:#}"
    );
}

#[tokio::test]
async fn a_repair_names_the_version_it_repaired_as_its_parent_with_that_versions_credentials() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, id, processor) = delivered(&h, &model).await;
    model
        .fault(json!({ "call": "compare", "fault": "compare_improved" }))
        .await;
    let res = h
        .repair(
            &user,
            &id,
            "fix",
            &json!({ "instruction": "finer stitches on the ears" }),
        )
        .await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    let repair = res.str("id");
    let outcome = processor.process(&job_id(&repair)).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );

    let png = downloaded(&h, &user, &repair, "png").await;
    let verdict = &official_read(&[(&png, "image/png")], anchor_pem()).await[0];

    assert_result_credentials(verdict, DEFAULT_IMAGE_MODEL, "embroidery");
    let parent = parent_of(verdict);
    assert_eq!(parent["title"], "The version repaired", "{verdict:#}");
    let earlier = &parent["manifest"];
    assert!(
        earlier.is_object(),
        "the parent keeps its own manifest: {verdict:#}"
    );
    assert!(
        earlier.to_string().contains("c2pa.edited"),
        "the repaired version's credentials say it was edited: {earlier:#}"
    );
}

fn parent_of(verdict: &Value) -> &Value {
    verdict["ingredients"]
        .as_array()
        .and_then(|all| all.iter().find(|i| i["relationship"] == "parentOf"))
        .unwrap_or_else(|| panic!("no parent ingredient: {verdict:#}"))
}

#[tokio::test]
async fn a_manifest_on_the_models_output_is_kept_as_an_ingredient_so_the_chain_reaches_the_model() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    model
        .fault(json!({ "call": "edit", "fault": "content_credentials" }))
        .await;
    let (user, id, _) = delivered(&h, &model).await;
    let provider_anchor = reqwest::get(format!(
        "{}/_stand-in/content-credentials-anchor",
        model.base_url
    ))
    .await
    .and_then(reqwest::Response::error_for_status)
    .unwrap_or_else(|e| panic!("{e}"))
    .text()
    .await
    .unwrap_or_default();
    assert!(
        provider_anchor.contains("BEGIN CERTIFICATE"),
        "{provider_anchor}"
    );

    let png = downloaded(&h, &user, &id, "png").await;
    let anchors = format!("{}{provider_anchor}", anchor_pem());
    let verdict = &official_read(&[(&png, "image/png")], &anchors).await[0];

    assert_result_credentials(verdict, DEFAULT_IMAGE_MODEL, "embroidery");
    let output = verdict["ingredients"]
        .as_array()
        .and_then(|all| all.iter().find(|i| i["relationship"] == "componentOf"))
        .unwrap_or_else(|| panic!("no componentOf ingredient: {verdict:#}"));
    assert_eq!(output["title"], "The model's output", "{output:#}");
    let theirs = output["manifest"].to_string();
    assert!(
        theirs.contains("c2pa.created")
            && theirs.contains("digitalsourcetype/trainedAlgorithmicMedia")
            && theirs.contains("Stand-in image model"),
        "the provider's own manifest, as it signed it: {theirs}"
    );
    let edited = &verdict["actions"][1];
    let named = edited["parameters"]["ingredients"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(named, 1, "the edit names the model's output: {edited:#}");
    let stored = h.app.store.get_job(&job_id(&id)).await.ok().flatten();
    let recorded = stored.and_then(|j| j.result().and_then(|r| r.credentials.clone()));
    assert!(
        recorded.is_some_and(|c| c.provider_manifest),
        "the job says the chain is kept"
    );
}

#[tokio::test]
async fn an_output_without_a_manifest_adds_no_ingredient_for_it() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, id, _) = delivered(&h, &model).await;

    let png = downloaded(&h, &user, &id, "png").await;
    let verdict = &official_read(&[(&png, "image/png")], anchor_pem()).await[0];

    let ingredients = verdict["ingredients"].as_array().map_or(0, Vec::len);
    assert_eq!(ingredients, 1, "the photo alone: {verdict:#}");
    let edited = &verdict["actions"][1];
    assert!(
        edited["parameters"].get("ingredients").is_none(),
        "{edited:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_jobs_at_once_each_deliver_a_download_and_master_the_official_library_trusts() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let styles = ["embroidery", "origami", "needle_felt", "crochet"];
    let mut jobs = Vec::new();
    for style in styles.iter().cycle().take(20) {
        let user = h.user();
        let body = json!({ "style": style, "target": "pet" });
        let id = h
            .submit_photo(&user, "k", samples::single_pet(), body)
            .await;
        jobs.push((user, id, *style));
    }
    let processor = h.processor(&model);
    let ids: Vec<JobId> = jobs.iter().map(|(_, id, _)| job_id(id)).collect();
    let outcomes = futures::future::join_all(ids.iter().map(|id| processor.process(id))).await;
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Ok(Outcome::Delivered { .. }))),
        "{outcomes:?}"
    );

    let mut files = Vec::new();
    for (user, id, _) in &jobs {
        files.push((downloaded(&h, user, id, "jpeg").await, "image/jpeg"));
        files.push((downloaded(&h, user, id, "png").await, "image/png"));
    }
    let read: Vec<(&[u8], &str)> = files.iter().map(|(b, f)| (b.as_slice(), *f)).collect();
    let verdicts = official_read(&read, anchor_pem()).await;

    assert_eq!(verdicts.len(), 40);
    let styles_read = jobs.iter().flat_map(|(_, _, style)| [*style, *style]);
    for (verdict, style) in verdicts.iter().zip(styles_read) {
        assert_result_credentials(verdict, DEFAULT_IMAGE_MODEL, style);
    }
    h.assert_audit_clean().await;
}
