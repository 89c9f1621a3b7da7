//! Push notifications for phones: devices register (`PUT /v1/devices/{id}`), at most five per
//! user, removed with the account; a finished edit sends one push per registered device from
//! the webhook outbox, through the delivery queue, to the stand-in APNs (h2c) and FCM —
//! against ministack and the stand-in model server, each test its own user.

use std::time::Duration;

use atelier_model_server::samples;
use atelier_shared::adapters::push::Pusher;
use atelier_shared::adapters::webhooks::PrivateAddresses;
use atelier_shared::adapters::webhooks::client::WebhookClient;
use atelier_shared::clock;
use atelier_shared::domain::UserId;
use atelier_shared::services::webhooks;
use atelier_tests::push::{PushStandIn, deliver_all, finished_edit, hooks};
use atelier_tests::{Harness, StandIn, sha256};
use http::StatusCode;
use serde_json::{Value, json};

/// An APNs token (64 hex characters) distinct per `n`.
fn apns_token(n: u32) -> String {
    format!("{n:08x}{}", "ab".repeat(28))
}

fn ios(n: u32) -> Value {
    json!({ "platform": "ios", "token": apns_token(n) })
}

/// An APNs token of `user`'s own: tests on the shared tables never register one token for
/// two users by chance (a token has one owner: the later registration takes it).
fn apns_token_of(user: &UserId, n: u32) -> String {
    sha256(format!("{user}:{n}").as_bytes())
}

fn ios_of(user: &UserId, n: u32) -> Value {
    json!({ "platform": "ios", "token": apns_token_of(user, n) })
}

#[tokio::test]
async fn a_device_registers_once_and_a_second_put_replaces_its_token() {
    let h = Harness::new().await;
    let user = h.user();

    let first = h.put_device(&user, "phone-1", &ios_of(&user, 1)).await;
    let again = h
        .put_device(
            &user,
            "phone-1",
            &json!({ "platform": "android", "token": "fcm:new-token-of-a-device-test" }),
        )
        .await;

    assert_eq!(first.status, StatusCode::CREATED, "{first:?}");
    assert_eq!(again.status, StatusCode::OK, "{again:?}");
    assert_eq!(again.body["platform"], "android");
    assert_eq!(h.device_ids(&user).await, ["phone-1"]);
    let stored = h
        .app
        .store
        .devices(&user)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(stored[0].1.token.as_str(), "fcm:new-token-of-a-device-test");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn the_sixth_device_is_refused_and_nothing_changes() {
    let h = Harness::new().await;
    let user = h.user();
    for n in 0..5 {
        let res = h
            .put_device(&user, &format!("d{n}"), &ios_of(&user, n))
            .await;
        assert_eq!(res.status, StatusCode::CREATED, "{res:?}");
    }

    let sixth = h.put_device(&user, "d5", &ios_of(&user, 5)).await;
    let known = h.put_device(&user, "d0", &ios_of(&user, 42)).await;

    assert_eq!(sixth.status, StatusCode::CONFLICT, "{sixth:?}");
    assert_eq!(sixth.code(), "DEVICE_LIMIT_REACHED");
    assert_eq!(
        known.status,
        StatusCode::OK,
        "a registered device still updates: {known:?}"
    );
    assert_eq!(h.device_ids(&user).await, ["d0", "d1", "d2", "d3", "d4"]);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn twelve_devices_registering_at_once_leave_exactly_five() {
    let h = Harness::new().await;
    let user = h.user();

    let puts = (0..12).map(|n| {
        let (h, user) = (h.clone(), user.clone());
        tokio::spawn(async move {
            h.put_device(&user, &format!("c{n}"), &ios_of(&user, n))
                .await
        })
    });
    let replies = futures::future::join_all(puts).await;

    let mut created = 0;
    for r in replies {
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        match r.status {
            StatusCode::CREATED => created += 1,
            StatusCode::CONFLICT => assert_eq!(r.code(), "DEVICE_LIMIT_REACHED"),
            _ => panic!("{r:?}"),
        }
    }
    assert_eq!(created, 5);
    assert_eq!(h.device_ids(&user).await.len(), 5);
    // The count is exact: one unregistered makes room for exactly one more.
    let first = h.device_ids(&user).await[0].clone();
    let deleted = h.delete(&user, &format!("/v1/devices/{first}")).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{deleted:?}");
    assert_eq!(
        h.put_device(&user, "late-1", &ios_of(&user, 100))
            .await
            .status,
        StatusCode::CREATED
    );
    assert_eq!(
        h.put_device(&user, "late-2", &ios_of(&user, 101))
            .await
            .status,
        StatusCode::CONFLICT
    );
}

#[tokio::test]
async fn a_bad_id_platform_or_token_is_refused_and_nothing_is_stored() {
    let h = Harness::new().await;
    let user = h.user();

    let bad_id = h.put_device(&user, "a%23b", &ios(1)).await;
    let long_id = h.put_device(&user, &"x".repeat(65), &ios(1)).await;
    let bad_platform = h
        .put_device(
            &user,
            "p",
            &json!({ "platform": "windows", "token": apns_token(1) }),
        )
        .await;
    let bad_apns = h
        .put_device(
            &user,
            "p",
            &json!({ "platform": "ios", "token": "not/hex" }),
        )
        .await;
    let long_fcm = h
        .put_device(
            &user,
            "p",
            &json!({ "platform": "android", "token": "a".repeat(4097) }),
        )
        .await;
    let missing = h
        .put_device(&user, "p", &json!({ "platform": "ios" }))
        .await;

    assert_eq!(bad_id.status, StatusCode::NOT_FOUND, "{bad_id:?}");
    assert_eq!(long_id.status, StatusCode::NOT_FOUND, "{long_id:?}");
    for r in [&bad_platform, &bad_apns, &long_fcm, &missing] {
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{r:?}");
        assert_eq!(r.code(), "VALIDATION_FAILED");
    }
    assert_eq!(bad_apns.body["errors"][0]["field"], "token");
    assert!(h.device_ids(&user).await.is_empty());
}

#[tokio::test]
async fn another_user_can_neither_see_nor_remove_a_device() {
    let h = Harness::new().await;
    let (owner, stranger) = (h.user(), h.user());
    h.put_device(&owner, "shared-id", &ios_of(&owner, 1)).await;

    let removed = h.delete(&stranger, "/v1/devices/shared-id").await;

    assert_eq!(
        removed.status,
        StatusCode::NO_CONTENT,
        "idempotent: {removed:?}"
    );
    assert!(h.device_ids(&stranger).await.is_empty());
    assert_eq!(h.device_ids(&owner).await, ["shared-id"]);
}

#[tokio::test]
async fn deleting_the_account_removes_its_devices_and_a_closed_account_registers_none() {
    let h = Harness::new().await;
    let user = h.funded_user(10).await;
    h.put_device(&user, "phone", &ios_of(&user, 1)).await;
    h.put_device(
        &user,
        "tablet",
        &json!({ "platform": "android", "token": "fcm-token" }),
    )
    .await;

    let deleted = h.delete_account(&user).await;
    let after = h.put_device(&user, "phone", &ios_of(&user, 2)).await;

    assert_eq!(deleted.status, StatusCode::OK, "{deleted:?}");
    assert!(
        h.app
            .store
            .devices(&user)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_empty()
    );
    assert_eq!(after.status, StatusCode::FORBIDDEN, "{after:?}");
    assert_eq!(after.code(), "ACCOUNT_CLOSED");
    h.assert_audit_clean().await;
}

/// A harness on its own stack (the delivery queue is read whole), the model and push
/// stand-ins, and the push client.
async fn push_stack() -> (Harness, StandIn, PushStandIn, Pusher, WebhookClient) {
    let h = Harness::isolated(|_| {}).await;
    let push = PushStandIn::start().await;
    let pusher = push.pusher();
    let http = WebhookClient::new(PrivateAddresses::Allow).unwrap_or_else(|e| panic!("{e}"));
    (h, StandIn::start().await, push, pusher, http)
}

#[tokio::test]
async fn a_finished_edit_pushes_once_to_each_device_even_when_the_stream_and_a_message_repeat() {
    let (h, model, push, pusher, http) = push_stack().await;
    let hooks = hooks(&h, &http, &pusher);
    let (user, stranger) = (h.funded_user(40).await, h.funded_user(40).await);
    let android = json!({ "platform": "android", "token": "fcm:phone-token" });
    assert_eq!(
        h.put_device(&user, "iphone", &ios(1)).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        h.put_device(&user, "pixel", &android).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        h.put_device(&stranger, "theirs", &ios(2)).await.status,
        StatusCode::CREATED
    );

    let event = finished_edit(&h, &model, &user, "k1").await;
    // The stream hands the event over twice (at-least-once), and one message is delivered twice.
    for _ in 0..2 {
        webhooks::fan_out(hooks, std::slice::from_ref(&event))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let delivered = deliver_all(&h, hooks).await;
    for m in &delivered {
        webhooks::deliver(hooks, m, clock::now())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    assert_eq!(
        delivered.len(),
        4,
        "two fan-outs of two devices: {delivered:?}"
    );
    assert_eq!(push.delivered_to(&apns_token(1)), 1);
    assert_eq!(push.delivered_to("fcm:phone-token"), 1);
    assert_eq!(
        push.delivered_to(&apns_token(2)),
        0,
        "another user's device gets nothing"
    );
    let apple = push
        .delivered()
        .into_iter()
        .find(|p| p.token == apns_token(1));
    let apple = apple.unwrap_or_else(|| panic!("no APNs push"));
    assert!(apple.http2, "APNs is spoken over HTTP/2");
    assert_eq!(apple.headers["apns-collapse-id"], event);
    assert_eq!(apple.body["event_id"], event);
    assert_eq!(push.token_calls(), 1, "one access token, reused");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_failed_push_is_retried_on_the_schedule_and_still_arrives_once() {
    let (h, model, push, pusher, http) = push_stack().await;
    let hooks = hooks(&h, &http, &pusher);
    let user = h.funded_user(40).await;
    h.put_device(&user, "iphone", &ios(7)).await;
    let event = finished_edit(&h, &model, &user, "k1").await;
    push.fail_next(1);

    webhooks::fan_out(hooks, std::slice::from_ref(&event))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let first = deliver_all(&h, hooks).await;
    assert_eq!(
        push.delivered_to(&apns_token(7)),
        0,
        "the first attempt failed"
    );
    // The retry is a delayed message on the same queue (the schedule's first wait).
    let mut retried = Vec::new();
    for _ in 0..40 {
        retried.extend(deliver_all(&h, hooks).await);
        if !retried.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    assert_eq!(first.len(), 1);
    assert_eq!(retried.iter().map(|m| m.attempt).collect::<Vec<_>>(), [2]);
    assert_eq!(push.delivered_to(&apns_token(7)), 1);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn an_invalid_token_unregisters_the_device_and_nothing_more_is_sent_to_it() {
    let (h, model, push, pusher, http) = push_stack().await;
    let hooks = hooks(&h, &http, &pusher);
    let user = h.funded_user(40).await;
    let android = json!({ "platform": "android", "token": "fcm:dead-token" });
    h.put_device(&user, "old-iphone", &ios(9)).await;
    h.put_device(&user, "old-pixel", &android).await;
    push.invalidate(&apns_token(9));
    push.invalidate("fcm:dead-token");

    let first = finished_edit(&h, &model, &user, "k1").await;
    webhooks::fan_out(hooks, std::slice::from_ref(&first))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let tried = deliver_all(&h, hooks).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let retried = deliver_all(&h, hooks).await;

    assert_eq!(tried.len(), 2, "{tried:?}");
    assert!(
        retried.is_empty(),
        "a dead token is not retried: {retried:?}"
    );
    assert!(
        h.device_ids(&user).await.is_empty(),
        "both devices unregistered"
    );
    let pet = json!({ "style": "embroidery", "target": "pet" });
    let job = h
        .submit_photo(&user, "k2", samples::single_pet(), pet)
        .await;
    let id = atelier_shared::domain::JobId::parse(&job).unwrap_or_else(|| panic!("{job}"));
    assert!(h.processor(&model).process(&id).await.is_ok());
    let sent = webhooks::fan_out(hooks, &[format!("evt_{job}_succeeded")]).await;
    assert_eq!(
        sent.unwrap_or_else(|e| panic!("{e}")),
        0,
        "no device, no push"
    );
    assert!(push.delivered().is_empty());
    // The slot is free again: the count went down with each removal.
    assert_eq!(
        h.put_device(&user, "new-iphone", &ios(10)).await.status,
        StatusCode::CREATED
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_push_whose_stream_record_was_lost_is_sent_by_the_sweepers_round_once() {
    let (h, model, push, pusher, http) = push_stack().await;
    let hooks = hooks(&h, &http, &pusher);
    let user = h.funded_user(40).await;
    h.put_device(&user, "iphone", &ios(11)).await;
    finished_edit(&h, &model, &user, "k1").await;

    // No fan-out: the stream record never came. The round after the grace finds the event.
    let later =
        clock::now() + atelier_shared::domain::webhooks::REDRIVE_GRACE + Duration::from_secs(1);
    let round = webhooks::redrive_due(hooks, later, Duration::from_secs(20)).await;
    let sent = deliver_all(&h, hooks).await;
    let again = webhooks::redrive_due(hooks, later, Duration::from_secs(20)).await;

    assert_eq!(round.unwrap_or_else(|e| panic!("{e}")).enqueued, 1);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(push.delivered_to(&apns_token(11)), 1);
    let again = again.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        again.enqueued, 0,
        "the delivered push is not sent again: {again:?}"
    );
    assert!(deliver_all(&h, hooks).await.is_empty());
}

#[tokio::test]
async fn a_phone_signed_in_as_another_account_takes_its_token_and_only_that_account_pushes_to_it() {
    let (h, model, push, pusher, http) = push_stack().await;
    let hooks = hooks(&h, &http, &pusher);
    let (a, b) = (h.funded_user(40).await, h.funded_user(40).await);
    let phone = ios(21);
    assert_eq!(
        h.put_device(&a, "a-phone", &phone).await.status,
        StatusCode::CREATED
    );

    // The same phone (same token) signs in as B and registers under B's own device id.
    let moved = h.put_device(&b, "b-phone", &phone).await;

    assert_eq!(moved.status, StatusCode::CREATED, "{moved:?}");
    assert!(
        h.device_ids(&a).await.is_empty(),
        "A's registration of the token is gone"
    );
    assert_eq!(h.device_ids(&b).await, ["b-phone"]);
    // A's next finished edit goes nowhere; B's reaches the phone.
    let for_a = finished_edit(&h, &model, &a, "ka").await;
    let sent = webhooks::fan_out(hooks, std::slice::from_ref(&for_a)).await;
    assert_eq!(
        sent.unwrap_or_else(|e| panic!("{e}")),
        0,
        "no device of A's"
    );
    let for_b = finished_edit(&h, &model, &b, "kb").await;
    webhooks::fan_out(hooks, std::slice::from_ref(&for_b))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let delivered = deliver_all(&h, hooks).await;
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert_eq!(push.delivered_to(&apns_token(21)), 1);
    let a_job = for_a
        .trim_start_matches("evt_")
        .trim_end_matches("_succeeded");
    let sent = push.delivered();
    assert!(
        sent.iter().all(|p| !p.body.to_string().contains(a_job)),
        "nothing of A's reached the phone: {:?}",
        sent.iter().map(|p| &p.body).collect::<Vec<_>>()
    );
    // A's count went down with it: A can register five devices again.
    for n in 0..5 {
        let r = h.put_device(&a, &format!("a{n}"), &ios(30 + n)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{r:?}");
    }
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn two_accounts_registering_one_token_at_once_leave_it_exactly_one_owner() {
    let h = Harness::isolated(|_| {}).await;
    for round in 0..6u32 {
        let (a, b) = (h.user(), h.user());
        let token = ios(40 + round);
        let (ra, rb) = tokio::join!(
            h.put_device(&a, "phone", &token),
            h.put_device(&b, "phone", &token)
        );
        assert_eq!(ra.status, StatusCode::CREATED, "round {round}: {ra:?}");
        assert_eq!(rb.status, StatusCode::CREATED, "round {round}: {rb:?}");

        let holders = h.device_ids(&a).await.len() + h.device_ids(&b).await.len();
        assert_eq!(holders, 1, "round {round}: exactly one owner");
        // The count rows agree: whoever lost it can still register five devices.
        for user in [&a, &b] {
            let mut created = 0;
            for n in 0..6 {
                let r = h.put_device(user, &format!("d{n}"), &ios_of(user, n)).await;
                created += u32::from(r.status == StatusCode::CREATED);
            }
            assert_eq!(h.device_ids(user).await.len(), 5, "round {round}");
            assert!((4..=5).contains(&created), "round {round}: {created}");
        }
    }
}
