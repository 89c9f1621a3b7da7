//! The push stand-ins proven with the services' client libraries (pinned in
//! `tests/official-push/requirements.txt`, installed by `cargo xtask test` into `.venv/push`):
//! Google's Firebase Admin SDK sends through the stand-in FCM after exchanging its own
//! service-account assertion at the stand-in's token endpoint, and aioapns sends through the
//! stand-in APNs over HTTP/2 with its own provider token. Each library's request is accepted,
//! is the same request ours is, and each library reads the stand-in's refusals as our adapter
//! does (a dead token, a malformed one, a failure, refused credentials).

use std::collections::BTreeSet;

use atelier_shared::adapters::push::Pusher;
use atelier_shared::domain::device::{Platform, PushToken};
use atelier_shared::domain::push::{Answer, Notification};
use atelier_shared::domain::webhooks::EventType;
use atelier_tests::push::{self, PushStandIn};
use serde_json::{Value, json};

/// What the phone is told when an edit is ready.
fn edit_ready(event_id: &str) -> Notification {
    Notification {
        event_id: event_id.to_owned(),
        kind: EventType::EditSucceeded,
        title: "Your edit is ready",
        body: "Tap to see it.",
        job_id: Some("01JOBOFFICIAL".to_owned()),
    }
}

/// What our adapter's push to `token` got.
async fn ours(pusher: &Pusher, platform: Platform, token: &str, n: &Notification) -> Answer {
    let token = PushToken::parse(platform, token).unwrap_or_else(|| panic!("{token}"));
    pusher
        .send(platform, &token, n)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// firebase-admin's `messaging.send` of `n` to `token`, as `client_email`.
fn fcm_case(s: &PushStandIn, client_email: &str, token: &str, n: &Notification) -> Value {
    // The SDK's own message types: title and body, string data, the collapse key.
    let data = &n.fcm_body(token)["message"]["data"];
    json!({
        "service": "fcm", "url": s.url, "account": s.service_account(client_email),
        "token": token, "title": n.title, "body": n.body, "data": data,
        "collapse_key": n.event_id,
    })
}

/// aioapns's push of `n` to `token`, signed with `key`.
fn apns_case(s: &PushStandIn, key: &str, token: &str, n: &Notification) -> Value {
    json!({
        "service": "apns", "url": s.url, "key": key, "key_id": push::KEY_ID,
        "team_id": push::TEAM, "topic": push::TOPIC, "token": token,
        "message": n.apns_body(), "id": atelier_shared::adapters::push::apns_id(&n.event_id),
        "collapse_key": n.event_id, "ttl": 86_400,
    })
}

/// An APNs device token (64 hex characters) distinct per `n`.
fn apns_token(n: u32) -> String {
    format!("{n:08x}{}", "cd".repeat(28))
}

/// A P-256 key APNs has never seen (PKCS#8 PEM, as a `.p8` is).
fn stranger_key() -> String {
    rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .unwrap_or_else(|e| panic!("{e}"))
        .serialize_pem()
}

#[tokio::test]
async fn firebase_admin_sends_through_the_stand_in_and_its_message_is_ours() {
    let s = PushStandIn::start().await;
    let n = edit_ready("evt_fcm_same");

    let answer = ours(&s.pusher(), Platform::Android, "fcm:ours", &n).await;
    let theirs = PushStandIn::official(&[fcm_case(&s, push::CLIENT_EMAIL, "fcm:theirs", &n)]).await;

    assert_eq!(answer, Answer::Delivered);
    assert_eq!(theirs[0]["ok"], true, "{theirs:?}");
    assert!(
        theirs[0]["name"]
            .as_str()
            .is_some_and(|m| m.starts_with("projects/atelier-test/messages/")),
        "{theirs:?}"
    );
    assert_eq!(
        s.token_calls(),
        2,
        "each client exchanged its own assertion at the token endpoint"
    );
    let sent = s.delivered();
    let message = |token: &str| {
        let mut m = sent
            .iter()
            .find(|p| p.token == token)
            .unwrap_or_else(|| panic!("no push to {token}"))
            .body["message"]
            .clone();
        m["token"] = Value::Null;
        m
    };
    assert_eq!(
        message("fcm:ours"),
        message("fcm:theirs"),
        "our message is the SDK's, field for field"
    );
}

#[tokio::test]
async fn firebase_admin_reads_the_stand_ins_refusals_as_our_adapter_does() {
    let s = PushStandIn::start().await;
    let n = edit_ready("evt_fcm_refused");
    s.invalidate("fcm:dead");
    s.failing("fcm:down");

    let dead = ours(&s.pusher(), Platform::Android, "fcm:dead", &n).await;
    let stranger = s.pusher_as(push::APNS_KEY, "stranger@elsewhere.iam.gserviceaccount.com");
    let token = PushToken::parse(Platform::Android, "fcm:any").unwrap_or_else(|| panic!("token"));
    let refused = stranger.send(Platform::Android, &token, &n).await;
    let theirs = PushStandIn::official(&[
        fcm_case(&s, push::CLIENT_EMAIL, "fcm:dead", &n),
        fcm_case(
            &s,
            "stranger@elsewhere.iam.gserviceaccount.com",
            "fcm:any",
            &n,
        ),
    ])
    .await;

    assert_eq!(dead, Answer::Unregistered);
    assert_eq!(
        (
            &theirs[0]["error"],
            &theirs[0]["code"],
            &theirs[0]["status"]
        ),
        (
            &json!("UnregisteredError"),
            &json!("NOT_FOUND"),
            &json!(404)
        ),
        "{theirs:?}"
    );
    assert!(
        matches!(
            refused,
            Err(atelier_shared::adapters::push::PushError::Token(
                atelier_shared::adapters::service_account::TokenError::Refused(400)
            ))
        ),
        "{refused:?}"
    );
    assert_eq!(theirs[1]["error"], "RefreshError", "{theirs:?}");
    assert!(s.delivered().is_empty());
}

/// The JWT's header and claim names, and its `iss`, from `authorization: bearer <jwt>`.
fn provider_token(authorization: &str) -> (Value, BTreeSet<String>, Value) {
    use base64::Engine;
    let (scheme, jwt) = authorization
        .split_once(' ')
        .unwrap_or_else(|| panic!("{authorization}"));
    assert!(scheme.eq_ignore_ascii_case("bearer"), "{authorization}");
    let part = |i: usize| -> Value {
        let raw = jwt.split('.').nth(i).unwrap_or_else(|| panic!("{jwt}"));
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(raw)
            .unwrap_or_else(|e| panic!("{e}"));
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"))
    };
    let (header, claims) = (part(0), part(1));
    let names = claims
        .as_object()
        .map(|c| c.keys().cloned().collect())
        .unwrap_or_default();
    (header, names, claims["iss"].clone())
}

#[tokio::test]
async fn aioapns_sends_through_the_stand_in_and_its_request_is_ours() {
    let s = PushStandIn::start().await;
    let n = edit_ready("evt_apns_same");
    let now = atelier_shared::clock::now().unix_timestamp();

    let answer = ours(&s.pusher(), Platform::Ios, &apns_token(1), &n).await;
    let theirs = PushStandIn::official(&[apns_case(&s, push::APNS_KEY, &apns_token(2), &n)]).await;

    assert_eq!(answer, Answer::Delivered);
    assert_eq!(theirs[0]["status"], "200", "{theirs:?}");
    assert_eq!(
        theirs[0]["id"],
        atelier_shared::adapters::push::apns_id(&n.event_id),
        "the answer is matched by its apns-id"
    );
    let sent = s.delivered();
    let [a, b] = [apns_token(1), apns_token(2)].map(|t| {
        sent.iter()
            .find(|p| p.token == t)
            .cloned()
            .unwrap_or_else(|| panic!("no push to {t}"))
    });
    assert!(a.http2 && b.http2, "both over HTTP/2");
    for h in [
        "apns-topic",
        "apns-push-type",
        "apns-priority",
        "apns-collapse-id",
        "apns-id",
    ] {
        assert_eq!(a.headers.get(h), b.headers.get(h), "{h}");
    }
    for p in [&a, &b] {
        let expiration: i64 = p.headers["apns-expiration"]
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            (expiration - now - 86_400).abs() < 60,
            "a day from now: {expiration}"
        );
    }
    let (ours_jwt, theirs_jwt) = (
        provider_token(&a.headers["authorization"]),
        provider_token(&b.headers["authorization"]),
    );
    assert_eq!(
        ours_jwt.0,
        json!({"alg": "ES256", "kid": push::KEY_ID, "typ": "JWT"})
    );
    assert_eq!(ours_jwt, theirs_jwt, "same header, claims and issuer");
    assert_eq!(a.body, b.body);
}

#[tokio::test]
async fn aioapns_reads_the_stand_ins_refusals_as_our_adapter_does() {
    let s = PushStandIn::start().await;
    let n = edit_ready("evt_apns_refused");
    let (dead, malformed, down) = (apns_token(10), apns_token(11), apns_token(12));
    s.invalidate(&dead);
    s.malformed(&malformed);
    s.failing(&down);
    let key = stranger_key();
    let pusher = s.pusher();

    let mut ours_answers = Vec::new();
    for token in [&dead, &malformed, &down] {
        ours_answers.push(ours(&pusher, Platform::Ios, token, &n).await);
    }
    ours_answers.push(
        ours(
            &s.pusher_as(&key, push::CLIENT_EMAIL),
            Platform::Ios,
            &apns_token(13),
            &n,
        )
        .await,
    );
    let theirs = PushStandIn::official(&[
        apns_case(&s, push::APNS_KEY, &dead, &n),
        apns_case(&s, push::APNS_KEY, &malformed, &n),
        apns_case(&s, push::APNS_KEY, &down, &n),
        apns_case(&s, &key, &apns_token(13), &n),
    ])
    .await;

    let read: Vec<(Value, Value)> = theirs
        .iter()
        .map(|t| (t["status"].clone(), t["reason"].clone()))
        .collect();
    assert_eq!(
        read,
        [
            (json!("410"), json!("Unregistered")),
            (json!("400"), json!("BadDeviceToken")),
            (json!("500"), json!("InternalServerError")),
            (json!("403"), json!("InvalidProviderToken")),
        ]
    );
    // Ours: a dead or malformed token unregisters the device; a failure is retried, and so is
    // a refused provider token, counted apart (alarmed on).
    assert_eq!(
        ours_answers,
        [
            Answer::Unregistered,
            Answer::Unregistered,
            Answer::Failed,
            Answer::CredentialsRefused
        ]
    );
    assert!(s.delivered().is_empty());
}
