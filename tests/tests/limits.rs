//! Limits on what one person can take for free: upload slots and bytes per UTC day, and the
//! signup grant only for a verified e-mail (given once, however the calls race).

use atelier_shared::config::Config;
use atelier_shared::domain::LedgerKind;
use atelier_tests::{Harness, Reply};
use http::StatusCode;

const MIB: i64 = 1024 * 1024;

/// A harness on the shared tables with these upload limits.
async fn with_upload_limits(slots: u32, bytes: u64) -> Harness {
    let mut config: Config = Harness::config();
    config.limits.upload_slots_per_day = slots;
    config.limits.upload_bytes_per_day = bytes;
    Harness::with_config(config).await
}

fn assert_upload_limit_reached(res: &Reply) {
    assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS, "{res:?}");
    assert_eq!(res.code(), "UPLOAD_LIMIT_REACHED");
    assert!(res.body.get("upload_url").is_none(), "nothing presigned");
    let retry: u64 = res
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After: {res:?}"));
    let to_midnight =
        atelier_shared::clock::until_next_utc_day(atelier_shared::clock::now()).as_secs();
    assert!(
        (1..=86_400).contains(&retry) && retry.abs_diff(to_midnight) <= 5,
        "Retry-After {retry} s, next UTC day in {to_midnight} s"
    );
}

#[tokio::test]
async fn uploads_past_the_days_slots_are_429_until_the_next_utc_day_and_nothing_is_presigned() {
    let h = with_upload_limits(3, 1 << 30).await;
    let user = h.user();
    for kind in ["original", "mask", "style_reference"] {
        let slot = h.create_upload(&user, kind, "image/png", 1000).await;
        assert_eq!(slot.status, StatusCode::CREATED, "{slot:?}");
    }
    let refused = h.create_upload(&user, "original", "image/png", 1000).await;
    assert_upload_limit_reached(&refused);
    // Another user's day is their own.
    let other = h.user();
    let slot = h.create_upload(&other, "original", "image/png", 1000).await;
    assert_eq!(slot.status, StatusCode::CREATED, "{slot:?}");
}

#[tokio::test]
async fn uploads_past_the_days_bytes_are_refused_while_smaller_ones_still_fit() {
    let h = with_upload_limits(100, 21 * MIB as u64).await;
    let user = h.user();
    let cases: &[(i64, bool, &str)] = &[
        (20 * MIB, true, "the largest photo fits a fresh day"),
        (2 * MIB, false, "2 MiB more would pass 21 MiB"),
        (MIB, true, "1 MiB more is exactly the limit"),
        (1, false, "not one byte more"),
    ];
    for (bytes, fits, why) in cases {
        let res = h
            .create_upload(&user, "original", "image/png", *bytes)
            .await;
        if *fits {
            assert_eq!(res.status, StatusCode::CREATED, "{why}: {res:?}");
        } else {
            assert_upload_limit_reached(&res);
        }
    }
}

/// Fires `n` upload requests of `bytes` at once for `user`; counts (201s, 429s).
async fn concurrent_uploads(h: &Harness, n: usize, bytes: i64) -> (usize, usize) {
    let user = h.user();
    h.balance(&user).await; // the account exists: only the counter is contended
    let replies = futures::future::join_all(
        (0..n).map(|_| h.create_upload(&user, "original", "image/png", bytes)),
    )
    .await;
    let created = replies
        .iter()
        .filter(|r| r.status == StatusCode::CREATED)
        .count();
    let limited = replies
        .iter()
        .filter(|r| r.code() == "UPLOAD_LIMIT_REACHED")
        .count();
    assert_eq!(created + limited, n, "only 201 or 429: {replies:?}");
    (created, limited)
}

#[tokio::test]
async fn concurrent_upload_requests_never_pass_the_days_slots() {
    let h = with_upload_limits(10, 1 << 30).await;
    assert_eq!(concurrent_uploads(&h, 40, 1000).await, (10, 30));
}

#[tokio::test]
async fn concurrent_upload_requests_never_pass_the_days_bytes() {
    let h = with_upload_limits(1000, 20 * MIB as u64).await;
    assert_eq!(concurrent_uploads(&h, 40, MIB).await, (20, 20));
}

fn signup_rows(rows: &[atelier_shared::store::schema::LedgerItem]) -> usize {
    rows.iter()
        .filter(|r| r.kind == LedgerKind::Grant && r.reference == "grant:signup")
        .count()
}

#[tokio::test]
async fn a_first_call_without_a_verified_email_creates_an_account_with_nothing_to_spend() {
    let h = Harness::new().await;
    for (claim, why) in [
        (None, "no claim"),
        (Some("false"), "not verified"),
        (Some("yes"), "not a boolean"),
    ] {
        let user = h.user();
        let account = h.account_as(&user, claim).await;
        assert_eq!(account.status, StatusCode::OK, "{why}: {account:?}");
        assert_eq!(account.body["balance"], 0, "{why}");
        assert!(h.ledger(&user).await.is_empty(), "{why}: no ledger row");
    }
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn the_grant_comes_exactly_once_when_the_user_calls_again_verified_even_all_at_once() {
    let h = Harness::new().await;
    let user = h.user();
    assert_eq!(h.account_as(&user, Some("false")).await.body["balance"], 0);
    // Uploading works unverified; it grants nothing.
    let slot = h.create_upload(&user, "original", "image/png", 10).await;
    assert_eq!(slot.status, StatusCode::CREATED, "{slot:?}");

    let replies =
        futures::future::join_all((0..8).map(|_| h.account_as(&user, Some("true")))).await;
    for r in &replies {
        assert_eq!(r.status, StatusCode::OK, "{r:?}");
        assert_eq!(r.body["balance"], 6, "every verified call sees the grant");
    }
    for claim in [Some("true"), Some("false"), None] {
        assert_eq!(h.account_as(&user, claim).await.body["balance"], 6);
    }
    assert_eq!(signup_rows(&h.ledger(&user).await), 1);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn several_first_calls_at_once_with_a_verified_email_grant_once() {
    let h = Harness::new().await;
    let user = h.user();
    let replies =
        futures::future::join_all((0..10).map(|_| h.account_as(&user, Some("true")))).await;
    for r in &replies {
        assert_eq!(r.body["balance"], 6, "{r:?}");
    }
    let rows = h.ledger(&user).await;
    assert_eq!((rows.len(), signup_rows(&rows)), (1, 1));
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn verified_and_unverified_first_calls_racing_end_with_one_grant() {
    let h = Harness::new().await;
    let user = h.user();
    let replies = futures::future::join_all((0..12).map(|i| {
        let claim = if i % 2 == 0 { "true" } else { "false" };
        h.account_as(&user, Some(claim))
    }))
    .await;
    assert!(replies.iter().all(|r| r.status == StatusCode::OK));
    assert_eq!(h.account_as(&user, Some("true")).await.body["balance"], 6);
    assert_eq!(signup_rows(&h.ledger(&user).await), 1);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn the_verified_claim_is_the_configured_one() {
    let mut config = Harness::config();
    config.identity.email_verified_claim = "custom:email_ok".to_owned();
    let h = Harness::with_config(config).await;
    let default_name_only = h.user();
    assert_eq!(
        h.account_as(&default_name_only, Some("true")).await.body["balance"],
        0,
        "email_verified is not the configured claim"
    );
    let user = h.user();
    let mut claims = Harness::claims(&user, Some("false"));
    claims.insert("custom:email_ok".to_owned(), "true".to_owned());
    let req = http::Request::get("/v1/account")
        .body(axum::body::Body::empty())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        h.call_with_claims(Some(claims), req).await.body["balance"],
        6
    );
}
