//! The push stand-ins proven with the services' client libraries (pinned in
//! `tests/official-push/requirements.txt`, installed by `cargo xtask test` into `.venv/push`):
//! Google's Firebase Admin SDK sends through the stand-in FCM after exchanging its own
//! service-account assertion at the stand-in's token endpoint, and aioapns sends through the
//! stand-in APNs over HTTP/2 with its own provider token. Each library's request is accepted,
//! and each library reads the stand-in's refusals as our adapter does (a dead token, a
//! malformed one, a failure, refused credentials).
//!
//! The libraries are not handed our payload: `send.py` builds their messages from the
//! notification's plain fields (title, body, event id, type, job id) as Apple's and Google's
//! documentation and docs/mobile.md say, and the two requests the stand-in received, ours and
//! the library's, are compared field by field: the whole body, every `apns-*` header (the
//! `apns-id` and `apns-expiration` by form, as they cannot be equal) and the provider token.

use std::collections::{BTreeMap, BTreeSet};

use atelier_model_server::wire_diff;
use atelier_shared::adapters::push::Pusher;
use atelier_shared::domain::device::{Platform, PushToken};
use atelier_shared::domain::push::{Answer, Notification};
use atelier_shared::domain::webhooks::EventType;
use atelier_tests::push::{self, PushStandIn, Received};
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

/// What the phone is told when a purchase is on the balance (no job to open).
fn credits_added(event_id: &str) -> Notification {
    Notification {
        event_id: event_id.to_owned(),
        kind: EventType::CreditsPurchased,
        title: "Credits added",
        body: "Your purchase is on your balance.",
        job_id: None,
    }
}

/// The notification's plain fields, from which `send.py` builds each library's message as
/// Apple's and Google's documentation and docs/mobile.md say (never our adapter's payload).
fn plain(n: &Notification) -> Value {
    json!({
        "title": n.title, "body": n.body, "event_id": n.event_id, "type": n.kind.as_str(),
        "job_id": n.job_id,
    })
}

/// `case` with the notification's plain fields beside it.
fn with_plain(mut case: Value, n: &Notification) -> Value {
    if let (Some(case), Value::Object(fields)) = (case.as_object_mut(), plain(n)) {
        case.extend(fields);
    }
    case
}

/// firebase-admin's `messaging.send` of `n` to `token`, as `client_email`.
fn fcm_case(s: &PushStandIn, client_email: &str, token: &str, n: &Notification) -> Value {
    with_plain(
        json!({
            "service": "fcm", "url": s.url, "account": s.service_account(client_email),
            "token": token,
        }),
        n,
    )
}

/// aioapns's push of `n` to `token`, signed with `key`.
fn apns_case(s: &PushStandIn, key: &str, token: &str, n: &Notification) -> Value {
    with_plain(
        json!({
            "service": "apns", "url": s.url, "key": key, "key_id": push::KEY_ID,
            "team_id": push::TEAM, "topic": push::TOPIC, "token": token,
        }),
        n,
    )
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

/// The push the stand-in received for `token`.
fn received(s: &PushStandIn, token: &str) -> Received {
    s.delivered()
        .into_iter()
        .find(|p| p.token == token)
        .unwrap_or_else(|| panic!("no push to {token}"))
}

#[tokio::test]
async fn firebase_admin_sends_through_the_stand_in_and_its_message_is_ours() {
    let s = PushStandIn::start().await;
    let sent = [edit_ready("evt_fcm_same"), credits_added("evt_fcm_credits")];
    let pusher = s.pusher();
    let mut answers = Vec::new();
    for (i, n) in sent.iter().enumerate() {
        answers.push(ours(&pusher, Platform::Android, &format!("fcm:ours-{i}"), n).await);
    }
    let cases: Vec<Value> = (sent.iter().enumerate())
        .map(|(i, n)| fcm_case(&s, push::CLIENT_EMAIL, &format!("fcm:theirs-{i}"), n))
        .collect();
    let theirs = PushStandIn::official(&cases).await;

    assert_eq!(answers, [Answer::Delivered, Answer::Delivered]);
    for said in &theirs {
        assert_eq!(said["ok"], true, "{theirs:?}");
        let name = said["name"].as_str().unwrap_or_default();
        assert!(
            name.starts_with("projects/atelier-test/messages/"),
            "{said}"
        );
    }
    assert_eq!(
        s.token_calls(),
        1 + 2,
        "ours exchanged its assertion once (the bearer is cached), the SDK once per app"
    );
    // Each body whole, field by field; only the device token differs, each the one asked.
    for (i, n) in sent.iter().enumerate() {
        let [ours, theirs] = [format!("fcm:ours-{i}"), format!("fcm:theirs-{i}")].map(|token| {
            let mut body = received(&s, &token).body;
            assert_eq!(body["message"]["token"], token.as_str());
            body["message"]["token"] = json!("<the device's>");
            body
        });
        wire_diff::assert_same(
            &ours,
            &theirs,
            &format!("our FCM message for {}", n.event_id),
        );
    }
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

/// `8-4-4-4-12` lower-case hex digits: the canonical UUID form `apns-id` must have.
fn is_canonical_uuid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// The `apns-*` headers of a push, by name.
fn apns_headers(p: &Received) -> BTreeMap<&str, &str> {
    (p.headers.iter())
        .filter(|(k, _)| k.starts_with("apns-"))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

#[tokio::test]
async fn aioapns_sends_through_the_stand_in_and_its_request_is_ours() {
    let s = PushStandIn::start().await;
    let sent = [
        edit_ready("evt_apns_same"),
        credits_added("evt_apns_credits"),
    ];
    let now = atelier_shared::clock::now().unix_timestamp();
    let pusher = s.pusher();
    let mut answers = Vec::new();
    for (i, n) in sent.iter().enumerate() {
        answers.push(ours(&pusher, Platform::Ios, &apns_token(2 * i as u32), n).await);
    }
    let cases: Vec<Value> = (sent.iter().enumerate())
        .map(|(i, n)| apns_case(&s, push::APNS_KEY, &apns_token(2 * i as u32 + 1), n))
        .collect();
    let theirs = PushStandIn::official(&cases).await;

    assert_eq!(answers, [Answer::Delivered, Answer::Delivered]);
    for (i, n) in sent.iter().enumerate() {
        let a = received(&s, &apns_token(2 * i as u32));
        let b = received(&s, &apns_token(2 * i as u32 + 1));
        assert_eq!(theirs[i]["status"], "200", "{theirs:?}");
        assert!(a.http2 && b.http2, "both over HTTP/2");
        assert_same_apns_headers(n, &a, &b, now);
        assert_eq!(
            theirs[i]["id"], b.headers["apns-id"],
            "aioapns matched the answer by the apns-id it sent"
        );
        let (ours_jwt, theirs_jwt) = (
            provider_token(&a.headers["authorization"]),
            provider_token(&b.headers["authorization"]),
        );
        assert_eq!(
            ours_jwt.0,
            json!({"alg": "ES256", "kid": push::KEY_ID, "typ": "JWT"})
        );
        assert_eq!(ours_jwt, theirs_jwt, "same header, claims and issuer");
        let what = format!("our APNs payload for {}", n.event_id);
        wire_diff::assert_same(&a.body, &b.body, &what);
    }
}

/// Ours (`a`) and aioapns's (`b`) push of `n` carry the same `apns-*` headers, with the same
/// values but for two a library cannot share with us: `apns-id` (aioapns makes a random UUID
/// per request; ours is derived from the event id, so every retry of one event carries the
/// same one) is a canonical UUID in both, and `apns-expiration` (a day from the second each
/// was sent) is a day from `now` in both.
fn assert_same_apns_headers(n: &Notification, a: &Received, b: &Received, now: i64) {
    let (ours, theirs) = (apns_headers(a), apns_headers(b));
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "the same apns-* headers"
    );
    for (name, value) in &ours {
        match *name {
            "apns-id" => {
                assert!(is_canonical_uuid(value), "ours: {value}");
                assert!(
                    is_canonical_uuid(theirs[name]),
                    "aioapns's: {}",
                    theirs[name]
                );
                assert_eq!(*value, atelier_shared::adapters::push::apns_id(&n.event_id));
            }
            "apns-expiration" => {
                for (who, v) in [("ours", *value), ("aioapns's", theirs[name])] {
                    let expiration: i64 = v.parse().unwrap_or_else(|e| panic!("{who}: {e}"));
                    let off = (expiration - now - 86_400).abs();
                    assert!(off < 60, "{who} is a day from now: {expiration}");
                }
            }
            _ => assert_eq!(*value, theirs[name], "{name}"),
        }
    }
    let collapse = ours.get("apns-collapse-id").copied().unwrap_or_default();
    assert_eq!(collapse, n.event_id, "duplicates of one event collapse");
    assert!(collapse.len() <= 64, "Apple allows 64 bytes: {collapse}");
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
