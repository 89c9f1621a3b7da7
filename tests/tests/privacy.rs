//! People's photos are theirs: deleting an upload, an edit's images or the whole account,
//! and exporting what is kept — against ministack and the stand-in model server. Objects are
//! always checked by listing the bucket through the S3 API; money by the ledger and the audit.

use atelier_model_server::samples;
use atelier_shared::domain::{JobId, JobState, LedgerKind, UserId};
use atelier_shared::services::privacy::{self, DeletedBy};
use atelier_shared::services::process::{Outcome, Processor};
use atelier_shared::store::Joined;
use atelier_tests::{Harness, StandIn};
use http::StatusCode;
use serde_json::{Value, json};

fn job_id(id: &str) -> JobId {
    JobId::parse(id).unwrap_or_else(|| panic!("job id {id}"))
}

fn pet_edit() -> Value {
    json!({ "style": "embroidery", "target": "pet", "target_description": "the grey cat on the left" })
}

/// A funded user with a delivered pet edit; returns (user, edit id, processor).
async fn delivered_edit(h: &Harness, model: &StandIn) -> (UserId, String, Processor) {
    let user = h.funded_user(40).await;
    let id = h
        .submit_photo(&user, "edit", samples::single_pet(), pet_edit())
        .await;
    let processor = h.processor(model);
    let outcome = processor.process(&job_id(&id)).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    (user, id, processor)
}

fn ledger_refs(rows: &[atelier_shared::store::schema::LedgerItem]) -> Vec<(String, i64)> {
    let mut refs: Vec<_> = rows
        .iter()
        .map(|r| (r.reference.clone(), r.amount.get()))
        .collect();
    refs.sort();
    refs
}

#[tokio::test]
async fn an_upload_is_deleted_from_storage_and_a_second_delete_is_404() {
    let h = Harness::new().await;
    let user = h.user();
    let asset = h.upload(&user, "original", samples::single_pet()).await;
    assert_eq!(h.objects_of(&user).await.len(), 1);

    let deleted = h.delete_asset(&user, &asset).await;
    let again = h.delete_asset(&user, &asset).await;

    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{deleted:?}");
    assert!(h.objects_of(&user).await.is_empty());
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{again:?}");
}

#[tokio::test]
async fn another_users_upload_cannot_be_deleted_and_stays() {
    let h = Harness::new().await;
    let (owner, stranger) = (h.user(), h.user());
    let asset = h.upload(&owner, "original", samples::single_pet()).await;

    let res = h.delete_asset(&stranger, &asset).await;
    let malformed = h.delete_asset(&stranger, "not-an-asset-id").await;

    assert_eq!(res.status, StatusCode::NOT_FOUND, "{res:?}");
    assert_eq!(malformed.status, StatusCode::NOT_FOUND, "{malformed:?}");
    assert_eq!(h.objects_of(&owner).await.len(), 1);
}

#[tokio::test]
async fn an_upload_a_queued_edit_reads_is_refused_with_asset_in_use_and_stays() {
    let h = Harness::new().await;
    let user = h.funded_user(40).await;
    let asset = h.upload(&user, "original", samples::single_pet()).await;
    let mut body = pet_edit();
    body["original_asset_id"] = json!(asset);
    let queued = h.submit(&user, Some("queued"), &body).await;
    assert_eq!(queued.status, StatusCode::ACCEPTED, "{queued:?}");

    let res = h.delete_asset(&user, &asset).await;

    assert_eq!(res.status, StatusCode::CONFLICT, "{res:?}");
    assert_eq!(res.code(), "ASSET_IN_USE");
    assert_eq!(res.str("state"), "queued");
    let upload = format!("uploads/{user}/original/{asset}");
    assert!(h.objects_of(&user).await.contains(&upload));
}

#[tokio::test]
async fn a_repair_works_after_the_edits_upload_expired() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, p) = delivered_edit(&h, &model).await;
    let job = h.job(&user, &edit).await;
    let asset = job.body["settings"]["original_asset_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // What the unused-upload expiry does: the upload object is gone.
    h.app
        .assets
        .delete(&format!("uploads/{user}/original/{asset}"))
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    let res = h
        .repair(
            &user,
            &edit,
            "fix",
            &json!({ "instruction": "finer stitches" }),
        )
        .await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{res:?}");
    let outcome = p.process(&job_id(&res.str("id"))).await;

    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn deleting_an_edits_images_removes_every_object_keeps_the_money_and_stops_repairs() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, p) = delivered_edit(&h, &model).await;
    let repair = h
        .repair(
            &user,
            &edit,
            "fix",
            &json!({ "instruction": "finer stitches" }),
        )
        .await;
    assert_eq!(repair.status, StatusCode::ACCEPTED, "{repair:?}");
    let outcome = p.process(&job_id(&repair.str("id"))).await;
    assert!(
        matches!(outcome, Ok(Outcome::Delivered { .. })),
        "{outcome:?}"
    );
    let kept = h.upload(&user, "original", samples::single_pet()).await;
    let ledger_before = ledger_refs(&h.ledger(&user).await);
    let balance_before = h.balance(&user).await;

    let res = h.delete_edit_images(&user, &repair.str("id")).await;

    assert_eq!(res.status, StatusCode::OK, "{res:?}");
    assert!(res.body["images_deleted_at"].is_string(), "{res:?}");
    assert_eq!(
        h.objects_of(&user).await,
        vec![format!("uploads/{user}/original/{kept}")],
        "only the unrelated upload is left"
    );
    let shown = h.job(&user, &edit).await;
    assert_eq!(shown.str("status"), "succeeded");
    assert!(
        shown.body.get("result").is_none(),
        "no dead link: {shown:?}"
    );
    assert!(shown.body["images_deleted_at"].is_string());
    let refused = h
        .repair(&user, &edit, "fix-again", &json!({ "instruction": "more" }))
        .await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{refused:?}");
    assert_eq!(refused.code(), "IMAGES_DELETED");
    assert_eq!(h.balance(&user).await, balance_before, "nothing charged");
    assert_eq!(ledger_refs(&h.ledger(&user).await), ledger_before);
    let again = h.delete_edit_images(&user, &edit).await;
    assert_eq!(
        again.status,
        StatusCode::OK,
        "repeating it is harmless: {again:?}"
    );
    h.assert_audit_clean().await;
}

/// The History list's entry of `id`.
async fn listed(h: &Harness, user: &UserId, id: &str) -> Value {
    let page = h.get(user, "/v1/edits").await;
    assert_eq!(page.status, StatusCode::OK, "{page:?}");
    page.body["items"]
        .as_array()
        .and_then(|items| items.iter().find(|j| j["id"] == id).cloned())
        .unwrap_or_else(|| panic!("{id} listed: {page:?}"))
}

#[tokio::test]
async fn the_history_list_shows_a_small_thumbnail_that_goes_with_the_edits_images() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, _) = delivered_edit(&h, &model).await;
    let full = h.job(&user, &edit).await.body["result"].clone();
    let photo = (
        u32::try_from(full["width"].as_u64().unwrap_or_default()).unwrap_or_default(),
        u32::try_from(full["height"].as_u64().unwrap_or_default()).unwrap_or_default(),
    );

    let entry = listed(&h, &user, &edit).await;

    assert!(
        entry.get("result").is_none(),
        "lists carry no result: {entry}"
    );
    let url = entry["thumbnail_url"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let thumb = image::load_from_memory_with_format(
        &atelier_tests::download(&url).await,
        image::ImageFormat::Jpeg,
    )
    .unwrap_or_else(|e| panic!("the thumbnail is a JPEG: {e}"));
    let expected = atelier_shared::domain::imaging::fit_within(photo, 256);
    assert!(
        photo.0.max(photo.1) > 256,
        "the sample is larger than a thumbnail"
    );
    assert_eq!(
        (thumb.width(), thumb.height()),
        expected,
        "256 px on the long side"
    );
    let thumbs: Vec<String> = h
        .objects_of(&user)
        .await
        .into_iter()
        .filter(|k| k.ends_with("-thumb.jpg"))
        .collect();
    assert_eq!(thumbs.len(), 1, "one thumbnail stored: {thumbs:?}");

    let res = h.delete_edit_images(&user, &edit).await;

    assert_eq!(res.status, StatusCode::OK, "{res:?}");
    assert!(
        !h.objects_of(&user)
            .await
            .iter()
            .any(|k| k.ends_with("-thumb.jpg")),
        "the thumbnail is deleted with the edit's images"
    );
    let gone = reqwest::get(&url).await.map(|r| r.status().as_u16()).ok();
    assert_eq!(gone, Some(404), "the old thumbnail link is dead");
    let entry = listed(&h, &user, &edit).await;
    assert!(
        entry.get("thumbnail_url").is_none(),
        "no dead link listed: {entry}"
    );
}

#[tokio::test]
async fn the_images_of_a_queued_edit_cannot_be_deleted() {
    let h = Harness::new().await;
    let user = h.funded_user(40).await;
    let edit = h
        .submit_photo(&user, "queued", samples::single_pet(), pet_edit())
        .await;

    let res = h.delete_edit_images(&user, &edit).await;

    assert_eq!(res.status, StatusCode::CONFLICT, "{res:?}");
    assert_eq!(res.code(), "IMAGES_IN_USE");
    assert_eq!(
        h.objects_of(&user).await,
        vec![format!(
            "uploads/{user}/original/{}",
            h.job(&user, &edit).await.body["settings"]["original_asset_id"]
                .as_str()
                .unwrap_or_default()
        )],
        "the upload stays (a queued edit's own copy is made when it is claimed)"
    );
}

/// A user with a delivered edit, a queued one and a spare upload; and a bystander with an
/// upload. Returns (owner, delivered, queued, bystander).
async fn user_with_everything(h: &Harness, model: &StandIn) -> (UserId, String, String, UserId) {
    let (user, delivered, _) = delivered_edit(h, model).await;
    let queued = h
        .submit_photo(&user, "queued", samples::single_pet(), pet_edit())
        .await;
    h.upload(&user, "mask", samples::single_pet()).await;
    let bystander = h.user();
    h.upload(&bystander, "original", samples::single_pet())
        .await;
    (user, delivered, queued, bystander)
}

#[tokio::test]
async fn deleting_an_account_removes_every_object_refunds_queued_edits_and_keeps_the_ledger() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, delivered, queued, bystander) = user_with_everything(&h, &model).await;
    let ledger_before = ledger_refs(&h.ledger(&user).await);
    let balance_before = h.balance(&user).await;
    let queued_price = h.job(&user, &queued).await.body["credits"]
        .as_i64()
        .unwrap_or_default();
    assert!(h.objects_of(&user).await.len() >= 5);

    let res = h.delete_account(&user).await;

    assert_eq!(res.status, StatusCode::OK, "{res:?}");
    assert_eq!(res.str("status"), "deleted");
    assert_eq!(res.body["canceled"], 1);
    assert!(
        h.objects_of(&user).await.is_empty(),
        "{:?}",
        h.objects_of(&user).await
    );
    assert_eq!(
        h.objects_of(&bystander).await.len(),
        1,
        "another user's upload stays"
    );
    let rows = ledger_refs(&h.ledger(&user).await);
    let refund = (format!("refund:job:{queued}"), queued_price);
    let mut expected = ledger_before.clone();
    expected.push(refund);
    expected.sort();
    assert_eq!(
        rows, expected,
        "every row stays; the queued edit's refund is added"
    );
    let account = h.account(&user).await;
    assert_eq!(account.body["balance"], balance_before + queued_price);
    assert!(account.body["closed_at"].is_string() && account.body["deleted_at"].is_string());
    let job = h.job(&user, &delivered).await;
    assert_eq!(job.str("status"), "succeeded");
    assert!(
        job.body["settings"].get("target_description").is_none(),
        "{job:?}"
    );
    assert_eq!(h.job(&user, &queued).await.str("status"), "canceled");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_deleted_account_refuses_uploads_and_edits_even_to_a_new_token() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, _, _, _) = user_with_everything(&h, &model).await;
    assert_eq!(h.delete_account(&user).await.status, StatusCode::OK);

    // The same subject signs in again: the closed account is found, not a fresh one.
    let account = h.account_as(&user, Some("true")).await;
    let upload = h.create_upload(&user, "original", "image/png", 100).await;
    let edit = h
        .submit(
            &user,
            Some("after"),
            &json!({ "style": "embroidery", "target": "pet", "original_asset_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV" }),
        )
        .await;

    assert!(account.body["closed_at"].is_string(), "{account:?}");
    assert_eq!(upload.status, StatusCode::FORBIDDEN, "{upload:?}");
    assert_eq!(upload.code(), "ACCOUNT_CLOSED");
    assert!(edit.status.is_client_error(), "{edit:?}");
    assert!(h.objects_of(&user).await.is_empty());
}

#[tokio::test]
async fn an_account_with_a_processing_edit_is_closed_at_once_and_deleted_once_it_finishes() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, _, queued, _) = user_with_everything(&h, &model).await;
    let now = atelier_shared::clock::format(atelier_shared::clock::now());
    let claimed = h
        .app
        .store
        .claim(&job_id(&queued), &now)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"))
        .unwrap_or_else(|| panic!("the queued job was not claimed"));
    let phone = json!({ "platform": "android", "token": "fcm-token-1" });
    assert_eq!(
        h.put_device(&user, "phone", &phone).await.status,
        StatusCode::CREATED
    );

    let pending = h.delete_account(&user).await;

    assert_eq!(pending.status, StatusCode::ACCEPTED, "{pending:?}");
    assert_eq!(pending.str("status"), "pending");
    assert_eq!(pending.body["processing"], 1);
    assert!(pending.header("retry-after").is_some());
    assert!(
        !h.objects_of(&user).await.is_empty(),
        "the running edit keeps its inputs"
    );
    let upload = h.create_upload(&user, "original", "image/png", 100).await;
    assert_eq!(
        upload.code(),
        "ACCOUNT_CLOSED",
        "closed at once: {upload:?}"
    );

    // The processing edit ends (here as the sweeper ends a stuck one: failed and refunded).
    time_out(&h, &claimed, &now).await;
    let done = h.delete_account(&user).await;

    assert_eq!(done.status, StatusCode::OK, "{done:?}");
    assert!(h.objects_of(&user).await.is_empty());
    let devices = h
        .app
        .store
        .devices(&user)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        devices.is_empty(),
        "the devices go with the account: {devices:?}"
    );
    let again = h.put_device(&user, "phone", &phone).await;
    assert_eq!(again.code(), "ACCOUNT_CLOSED", "{again:?}");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_deletion_killed_half_way_is_finished_by_running_it_again() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, _, _, bystander) = user_with_everything(&h, &model).await;
    let objects = h.objects_of(&user).await.len();
    let ledger_before = h.ledger(&user).await.len();

    privacy::delete_account_dying_after(&h.app, &user, &DeletedBy::User, 2)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    let left = h.objects_of(&user).await.len();
    assert_eq!(left, objects - 2, "it died after two objects");
    let half = h.account(&user).await;
    assert!(half.body["closed_at"].is_string() && half.body.get("deleted_at").is_none());

    let rerun = h.delete_account(&user).await;

    assert_eq!(rerun.status, StatusCode::OK, "{rerun:?}");
    assert_eq!(
        rerun.body["canceled"], 0,
        "the queued edit was refunded once, by the first run"
    );
    assert!(h.objects_of(&user).await.is_empty());
    assert_eq!(h.objects_of(&bystander).await.len(), 1);
    let refunds = h
        .ledger(&user)
        .await
        .iter()
        .filter(|r| r.kind == LedgerKind::Refund)
        .count();
    assert_eq!(refunds, 1);
    assert_eq!(h.ledger(&user).await.len(), ledger_before + 1);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn the_export_pages_through_the_account_the_ledger_and_every_job_with_live_links() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, delivered, queued, _) = user_with_everything(&h, &model).await;
    let ledger_rows = h.ledger(&user).await.len();

    let mut pages = Vec::new();
    let mut query = "limit=2".to_owned();
    loop {
        let page = h.export(&user, &query).await;
        assert_eq!(page.status, StatusCode::OK, "{page:?}");
        let next = page.body["next_cursor"].as_str().map(str::to_owned);
        pages.push(page);
        match next {
            Some(c) => query = format!("limit=2&cursor={c}"),
            None => break,
        }
        assert!(pages.len() < 20, "the export must end");
    }

    assert!(pages[0].body["account"]["balance"].is_i64());
    assert!(
        pages
            .iter()
            .skip(1)
            .all(|p| p.body.get("account").is_none())
    );
    let ledger: usize = pages
        .iter()
        .map(|p| p.body["ledger"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(ledger, ledger_rows);
    let jobs: Vec<&Value> = pages
        .iter()
        .flat_map(|p| p.body["jobs"].as_array().into_iter().flatten())
        .collect();
    let ids: Vec<&str> = jobs.iter().filter_map(|j| j["id"].as_str()).collect();
    assert!(
        ids.contains(&delivered.as_str()) && ids.contains(&queued.as_str()),
        "{ids:?}"
    );
    let link = jobs
        .iter()
        .find(|j| j["id"] == delivered.as_str())
        .and_then(|j| j["result"]["url"].as_str())
        .unwrap_or_else(|| panic!("the delivered edit has a link"));
    let got = reqwest::get(link)
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0);
    assert_eq!(got, 200);
    let forged = h.export(&user, "cursor=x.nonsense").await;
    assert_eq!(forged.code(), "INVALID_CURSOR", "{forged:?}");
}

#[tokio::test]
async fn a_job_whose_images_passed_the_retention_period_says_so_instead_of_a_dead_link() {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, edit, _) = delivered_edit(&h, &model).await;
    let days = u64::from(h.app.config.limits.result_retention_days);
    // The edit was made longer ago than the bucket keeps results.
    let long_ago =
        atelier_shared::clock::now() - std::time::Duration::from_secs((days + 1) * 86_400);
    h.clients
        .dynamodb
        .update_item()
        .table_name(&h.app.config.resources.jobs_table)
        .key(
            "job_id",
            aws_sdk_dynamodb::types::AttributeValue::S(edit.clone()),
        )
        .update_expression("SET created_at = :t")
        .expression_attribute_values(
            ":t",
            aws_sdk_dynamodb::types::AttributeValue::S(atelier_shared::clock::format(long_ago)),
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    let job = h.job(&user, &edit).await;

    assert_eq!(job.str("status"), "succeeded");
    assert!(job.body["images_expired_at"].is_string(), "{job:?}");
    assert!(job.body.get("result").is_none(), "no dead link: {job:?}");
}

#[tokio::test]
async fn a_deletion_left_pending_by_a_processing_edit_is_finished_by_a_sweep_once_the_edit_ends() {
    use atelier_shared::services::sweep::{self, SweepLimits};
    // A stack of its own: a sweep finishes every pending deletion it finds.
    let (h, model) = (Harness::isolated(|_| {}).await, StandIn::start().await);
    let (user, delivered, queued, bystander) = user_with_everything(&h, &model).await;
    let now = atelier_shared::clock::format(atelier_shared::clock::now());
    let claimed = h
        .app
        .store
        .claim(&job_id(&queued), &now)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"))
        .unwrap_or_else(|| panic!("the queued job was not claimed"));
    let pending = h.delete_account(&user).await;
    assert_eq!(pending.status, StatusCode::ACCEPTED, "{pending:?}");

    let during = sweep::sweep(&h.app, atelier_shared::clock::now(), SweepLimits::default()).await;

    assert_eq!(
        (during.deletions_pending, during.deletions_finished),
        (1, 0)
    );
    assert!(h.account(&user).await.body.get("deleted_at").is_none());
    assert!(
        !h.objects_of(&user).await.is_empty(),
        "the running edit keeps its inputs"
    );

    // The processing edit ends (failed and refunded, as the sweeper ends a stuck one); the
    // user never asks again.
    time_out(&h, &claimed, &now).await;
    let after = sweep::sweep(&h.app, atelier_shared::clock::now(), SweepLimits::default()).await;

    assert_eq!((after.deletions_pending, after.deletions_finished), (0, 1));
    assert!(h.account(&user).await.body["deleted_at"].is_string());
    assert!(
        h.objects_of(&user).await.is_empty(),
        "{:?}",
        h.objects_of(&user).await
    );
    assert_eq!(
        h.objects_of(&bystander).await.len(),
        1,
        "another user's upload stays"
    );
    for id in [&delivered, &queued] {
        let job = h.job(&user, id).await;
        assert!(
            job.body["settings"].get("target_description").is_none(),
            "{job:?}"
        );
    }
    let next = sweep::sweep(&h.app, atelier_shared::clock::now(), SweepLimits::default()).await;
    assert_eq!(
        (next.deletions_pending, next.deletions_finished),
        (0, 0),
        "nothing left"
    );
    h.assert_audit_clean().await;
}

/// The application with every DynamoDB index answering as one that has not caught up yet
/// (empty), as AWS may for a write an instant old; tables answer as they are.
async fn with_lagging_indexes(
    h: &Harness,
) -> (atelier_shared::services::App, atelier_wire_proxy::Proxy) {
    use atelier_wire_proxy::{FaultKind, FaultPlan, Proxy};
    let endpoint = h
        .app
        .config
        .resources
        .queue_url
        .split("/000000000000/")
        .next()
        .unwrap_or_default()
        .to_owned();
    let plan = FaultPlan::new(1).rate(FaultKind::IndexLag, 1.0);
    let proxy = Proxy::start(&endpoint, Some(plan))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(proxy.url())
        .load()
        .await;
    let clients = atelier_shared::adapters::aws::Clients::new(&sdk);
    (
        atelier_shared::services::App::new(h.app.config.clone(), &clients),
        proxy,
    )
}

#[tokio::test]
async fn jobs_committed_just_before_the_close_are_canceled_waited_for_and_cleared_though_the_index_lags()
 {
    let (h, model) = (Harness::new().await, StandIn::start().await);
    let (user, delivered, _) = delivered_edit(&h, &model).await;
    let queued = h
        .submit_photo(&user, "queued", samples::single_pet(), pet_edit())
        .await;
    let running = h
        .submit_photo(&user, "running", samples::single_pet(), pet_edit())
        .await;
    let now = atelier_shared::clock::format(atelier_shared::clock::now());
    let claimed = h
        .app
        .store
        .claim(&job_id(&running), &now)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"))
        .unwrap_or_else(|| panic!("not claimed"));
    let (lagging, _proxy) = with_lagging_indexes(&h).await;

    let first = privacy::delete_account(&lagging, &user, &DeletedBy::User).await;

    assert!(
        matches!(
            first,
            Ok(privacy::AccountDeletion::Pending {
                processing: 1,
                canceled: 1
            })
        ),
        "the new jobs were found without the index: {first:?}"
    );
    assert_eq!(h.job(&user, &queued).await.str("status"), "canceled");

    time_out(&h, &claimed, &now).await;
    let second = privacy::delete_account(&lagging, &user, &DeletedBy::User).await;

    assert!(
        matches!(
            second,
            Ok(privacy::AccountDeletion::Finished { redacted: 3, .. })
        ),
        "{second:?}"
    );
    for id in [&delivered, &queued, &running] {
        let job = h.job(&user, id).await;
        assert!(
            job.body["settings"].get("target_description").is_none(),
            "{job:?}"
        );
    }
    assert!(h.objects_of(&user).await.is_empty());
    h.assert_audit_clean().await;
}

/// Ends a processing job as the sweeper ends a stuck one: failed (timed out) and refunded.
async fn time_out(h: &Harness, claimed: &atelier_shared::domain::Job, now: &str) {
    let failure =
        atelier_shared::domain::JobFailure::new(atelier_shared::domain::FailureCode::TimedOut);
    h.app
        .store
        .fail_and_refund(claimed, JobState::Processing, &failure, now, Joined::none())
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
}
