//! What a submit leaves in the bucket: nothing. A refused submit (402, 429) and a key reused
//! with another photo (409) write no object; the job's own copy of its inputs is made by the
//! consumer that claims it, from exactly the bytes the job recorded at submit, and an upload
//! changed or deleted since fails the job, refunded, before any model call. Against ministack
//! and the stand-in model server; objects are listed and read through the S3 API.

use atelier_model_server::samples;
use atelier_shared::adapters::assets::Assets;
use atelier_shared::domain::{AssetKind, FailureCode, JobId, LedgerKind, UserId};
use atelier_shared::services::process::Outcome;
use atelier_tests::{Harness, Reply, StandIn, sha256};
use axum::body::Body;
use futures::future::join_all;
use http::{Request, StatusCode};
use serde_json::{Value, json};

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

fn pet_edit(original: &str) -> Value {
    json!({ "style": "embroidery", "target": "pet", "original_asset_id": original })
}

/// The user's keys under `results/` (where every job's images and kept inputs live).
async fn results_of(h: &Harness, user: &UserId) -> Vec<String> {
    let mut keys = h.objects_of(user).await;
    keys.retain(|k| k.starts_with("results/"));
    keys
}

/// The SHA-256 of an edit's kept original, `None` while there is none.
async fn kept_original_sha(h: &Harness, user: &UserId, id: &str) -> Option<String> {
    h.kept_input(user, &job_id(id), AssetKind::Original)
        .await
        .map(|b| sha256(&b))
}

/// A request as API Gateway delivers it for a token whose e-mail is not verified: such an
/// account is created without the signup grant, so it has nothing to spend.
async fn call_unverified(
    h: &Harness,
    user: &UserId,
    req: http::request::Builder,
    body: &Value,
) -> Reply {
    let body = match body {
        Value::Null => Body::empty(),
        _ => Body::from(body.to_string()),
    };
    let req = req
        .header("content-type", "application/json")
        .body(body)
        .unwrap_or_else(|e| panic!("request: {e}"));
    h.call_with_claims(Some(Harness::claims(user, Some("false"))), req)
        .await
}

/// An unverified user with 0 credits and one uploaded photo; returns the asset id.
async fn unverified_user_with_photo(h: &Harness, user: &UserId) -> String {
    let png = Harness::png(8, 8);
    let body = json!({ "kind": "original", "content_type": "image/png", "bytes": png.len() });
    let slot = call_unverified(h, user, Request::post("/v1/uploads"), &body).await;
    assert_eq!(slot.status, StatusCode::CREATED, "{slot:?}");
    assert_eq!(h.put_upload(&slot, png, None).await, 200, "upload PUT");
    assert_eq!(h.account_as(user, Some("false")).await.body["balance"], 0);
    slot.str("asset_id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_submits_refused_402_leave_no_object_and_no_row() {
    // A hundred requests of one user at once on purpose: the request budget is not tested here.
    let mut config = Harness::config();
    config.limits.requests_per_window = 1_000_000;
    let h = Harness::with_config(config).await;
    let user = h.user();
    let original = unverified_user_with_photo(&h, &user).await;

    let body = pet_edit(&original);
    let replies = join_all((0..100).map(|i| {
        let req = Request::post("/v1/edits").header("idempotency-key", format!("broke-{i}"));
        call_unverified(&h, &user, req, &body)
    }))
    .await;

    for r in &replies {
        assert_eq!(r.status, StatusCode::PAYMENT_REQUIRED, "{r:?}");
        assert_eq!(r.code(), "INSUFFICIENT_CREDITS");
    }
    assert_eq!(results_of(&h, &user).await, Vec::<String>::new());
    assert_eq!(
        h.objects_of(&user).await,
        vec![format!("uploads/{user}/original/{original}")],
        "only the upload"
    );
    assert!(h.ledger(&user).await.is_empty(), "no ledger row");
    let jobs = call_unverified(&h, &user, Request::get("/v1/edits"), &Value::Null).await;
    assert_eq!(jobs.body["items"], json!([]), "no job: {jobs:?}");
    assert_eq!(h.account_as(&user, Some("false")).await.body["balance"], 0);
    h.assert_audit_clean().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn submits_refused_429_leave_no_object_and_the_accepted_job_keeps_only_its_own() {
    let mut config = Harness::config();
    config.limits.max_in_flight = 1;
    let h = Harness::with_config(config).await;
    let user = h.funded_user(100).await;
    let original = h.upload(&user, "original", samples::single_pet()).await;
    let accepted = h.submit(&user, Some("first"), &pet_edit(&original)).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{accepted:?}");
    let before = h.balance(&user).await;

    let (body, keys) = (pet_edit(&original), (0..20).map(|i| format!("busy-{i}")));
    let keys: Vec<String> = keys.collect();
    let replies = join_all(keys.iter().map(|k| h.submit(&user, Some(k), &body))).await;

    for r in &replies {
        assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{r:?}");
        assert_eq!(r.code(), "TOO_MANY_IN_FLIGHT");
    }
    assert_eq!(h.balance(&user).await, before, "nothing charged");
    assert_eq!(
        results_of(&h, &user).await,
        Vec::<String>::new(),
        "a queued job has no copy yet, a refused one never"
    );
    let model = StandIn::start().await;
    let id = accepted.str("id");
    let outcome = h.processor(&model).process(&job_id(&id)).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    let prefix = Assets::job_prefix(&user, &job_id(&id));
    let results = results_of(&h, &user).await;
    assert!(
        !results.is_empty() && results.iter().all(|k| k.starts_with(&prefix)),
        "only the accepted job's images: {results:?}"
    );
    assert_eq!(
        kept_original_sha(&h, &user, &id).await,
        Some(sha256(&samples::single_pet()))
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_key_reused_with_another_photo_is_409_and_the_job_edits_the_photo_it_was_sent() {
    let h = Harness::new().await;
    let model = StandIn::start().await;
    let user = h.funded_user(100).await;
    let (pet, two) = (samples::single_pet(), samples::two_pets());
    let mine = h.upload(&user, "original", pet.clone()).await;
    let other = h.upload(&user, "original", two).await;
    let first = h.submit(&user, Some("photo-key"), &pet_edit(&mine)).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{first:?}");
    let id = first.str("id");
    let before = h.balance(&user).await;

    // Queued: the conflict comes before the consumer's copy exists.
    let queued = h.submit(&user, Some("photo-key"), &pet_edit(&other)).await;
    assert_eq!(queued.status, StatusCode::CONFLICT, "{queued:?}");
    assert_eq!(queued.code(), "IDEMPOTENCY_CONFLICT");
    assert_eq!(results_of(&h, &user).await, Vec::<String>::new());

    // Two pets would be answered with questions: delivered means it edited the single pet.
    let outcome = h.processor(&model).process(&job_id(&id)).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    let kept = kept_original_sha(&h, &user, &id).await;
    assert_eq!(kept, Some(sha256(&pet)), "the kept input is the photo sent");

    // Delivered: the conflict comes after the copy exists, and leaves it byte-identical.
    let done = h.submit(&user, Some("photo-key"), &pet_edit(&other)).await;
    assert_eq!(done.code(), "IDEMPOTENCY_CONFLICT", "{done:?}");
    assert_eq!(kept_original_sha(&h, &user, &id).await, kept);
    assert_eq!(
        h.balance(&user).await,
        before,
        "no conflict charged anything"
    );
    let debits = h.ledger(&user).await;
    assert_eq!(
        debits
            .iter()
            .filter(|r| r.kind == LedgerKind::Debit)
            .count(),
        1
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn an_upload_changed_or_deleted_after_the_submit_fails_the_job_refunded_before_any_model_call()
 {
    let h = Harness::new().await;
    let model = StandIn::start().await;
    let cases: [(&str, Option<Vec<u8>>); 2] = [
        ("overwritten with another photo", Some(samples::two_pets())),
        ("deleted", None),
    ];
    for (why, replacement) in cases {
        let user = h.funded_user(100).await;
        let before = h.balance(&user).await;
        let original = h.upload(&user, "original", samples::single_pet()).await;
        let res = h.submit(&user, Some("changed"), &pet_edit(&original)).await;
        assert_eq!(res.status, StatusCode::ACCEPTED, "{why}: {res:?}");
        let id = res.str("id");
        let upload = Assets::upload_key(&user, AssetKind::Original, &asset_id(&original));
        match replacement {
            // As a second PUT through a still-valid upload URL would.
            Some(bytes) => {
                h.clients
                    .s3
                    .put_object()
                    .bucket(h.app.assets.bucket())
                    .key(&upload)
                    .body(bytes.into())
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{why}: {e:?}"));
            }
            None => h
                .app
                .assets
                .delete(&upload)
                .await
                .unwrap_or_else(|e| panic!("{e:?}")),
        }

        let outcome = h.processor(&model).process(&job_id(&id)).await;

        assert!(
            matches!(
                outcome,
                Ok(Outcome::Failed {
                    code: FailureCode::AssetMissing
                })
            ),
            "{why}: {outcome:?}"
        );
        assert_eq!(
            model.calls(&id).await,
            Default::default(),
            "{why}: no model call"
        );
        assert_eq!(h.balance(&user).await, before, "{why}: refunded");
        assert_eq!(results_of(&h, &user).await, Vec::<String>::new(), "{why}");
    }
    h.assert_audit_clean().await;
}

fn asset_id(id: &str) -> atelier_shared::domain::AssetId {
    atelier_shared::domain::AssetId::parse(id).unwrap_or_else(|| panic!("asset id {id}"))
}
