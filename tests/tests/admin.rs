//! `atelier-admin grant`, run as an operator runs it: the real binary against the tables the
//! functions use (the test process's environment names them). A grant is written once per
//! user and (normalised) reason, a rerun asking for another amount is refused, an unknown
//! user is not silently created, and the ledger row names the operator.
//!
//! The binary is built by cargo for this profile (`cargo build -p atelier-admin`, a no-op
//! when `cargo xtask test` already built every target), as `cli.rs` does for `atelier`.

use atelier_shared::domain::pricing::SIGNUP_GRANT;
use atelier_shared::domain::{LedgerKind, UserId};
use atelier_shared::store::schema::LedgerItem;
use atelier_tests::{Harness, admin};

/// `grant --user U --credits N --reason R --operator jane` plus `extra`.
async fn grant(
    user: &UserId,
    credits: u32,
    reason: &str,
    extra: &[&str],
) -> atelier_tests::AdminRun {
    let credits = credits.to_string();
    let mut args = vec![
        "grant",
        "--user",
        user.as_str(),
        "--credits",
        &credits,
        "--reason",
        reason,
        "--operator",
        "jane",
    ];
    args.extend_from_slice(extra);
    admin(&args, &[]).await
}

/// The `operator` attribute of a ledger row, as stored.
async fn operator_on_row(h: &Harness, user: &UserId, reference: &str) -> Option<String> {
    use aws_sdk_dynamodb::types::AttributeValue;
    let out = h
        .clients
        .dynamodb
        .get_item()
        .table_name(&h.app.config.resources.ledger_table)
        .key("user_id", AttributeValue::S(user.as_str().to_owned()))
        .key("ref", AttributeValue::S(reference.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    let item = out
        .item
        .unwrap_or_else(|| panic!("no ledger row {reference}"));
    item.get("operator")
        .and_then(|v| v.as_s().ok())
        .map(String::to_owned)
}

fn admin_grants(rows: &[LedgerItem]) -> Vec<&LedgerItem> {
    rows.iter()
        .filter(|r| r.kind == LedgerKind::Grant && r.reference.starts_with("grant:admin:"))
        .collect()
}

#[tokio::test]
async fn rerunning_a_grant_with_the_same_amount_says_already_granted_exits_0_and_the_row_names_its_operator()
 {
    let h = Harness::new().await;
    let user = h.user();
    let before = h.balance(&user).await;

    let first = grant(&user, 20, "promo-2026-12", &[]).await;
    let again = grant(&user, 20, "promo-2026-12", &[]).await;

    assert_eq!(first.code, Some(0), "{first:?}");
    assert!(first.stdout.contains("granted 20 credits"), "{first:?}");
    assert_eq!(again.code, Some(0), "{again:?}");
    assert!(again.stdout.contains("already granted"), "{again:?}");
    assert!(again.stdout.contains("by jane"), "{again:?}");
    assert_eq!(h.balance(&user).await, before + 20);
    let rows = h.ledger(&user).await;
    let grants = admin_grants(&rows);
    assert_eq!(grants.len(), 1, "{rows:?}");
    assert_eq!(grants[0].reference, "grant:admin:promo-2026-12");
    assert_eq!(
        operator_on_row(&h, &user, "grant:admin:promo-2026-12")
            .await
            .as_deref(),
        Some("jane"),
        "the row names its operator"
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn rerunning_a_grant_with_another_amount_is_refused_naming_the_granted_amount_and_changes_nothing()
 {
    let h = Harness::new().await;
    let user = h.user();
    h.balance(&user).await; // the account exists
    let first = grant(&user, 20, "promo-1", &[]).await;
    assert_eq!(first.code, Some(0), "{first:?}");
    let (balance, rows) = (h.balance(&user).await, h.ledger(&user).await);

    let other = grant(&user, 50, "promo-1", &[]).await;

    assert_eq!(other.code, Some(1), "refused by a rule: {other:?}");
    assert!(other.stderr.contains("refused"), "{other:?}");
    assert!(
        other.stderr.contains("already granted 20 credits"),
        "names the amount granted: {other:?}"
    );
    assert!(!other.stdout.contains("already granted"), "{other:?}");
    assert_eq!(h.balance(&user).await, balance, "balance unchanged");
    assert_eq!(h.ledger(&user).await, rows, "no row written");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn reasons_that_differ_only_in_case_or_surrounding_spaces_are_one_grant() {
    let h = Harness::new().await;
    let user = h.user();
    let before = h.balance(&user).await;

    let upper = grant(&user, 5, "Promo-1", &[]).await;
    let lower = grant(&user, 5, " promo-1 ", &[]).await;

    assert_eq!(upper.code, Some(0), "{upper:?}");
    assert_eq!(lower.code, Some(0), "{lower:?}");
    assert!(lower.stdout.contains("already granted"), "{lower:?}");
    assert_eq!(h.balance(&user).await, before + 5, "granted once");
    let rows = h.ledger(&user).await;
    let grants = admin_grants(&rows);
    assert_eq!(grants.len(), 1, "{rows:?}");
    assert_eq!(grants[0].reference, "grant:admin:promo-1");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_grant_to_an_unknown_user_without_create_is_refused_and_creates_no_account() {
    let h = Harness::new().await;
    let typo = h.user();

    let refused = grant(&typo, 20, "promo-1", &[]).await;

    assert_ne!(refused.code, Some(0), "{refused:?}");
    assert!(refused.stderr.contains("--create"), "{refused:?}");
    let account = h.app.store.get_account(&typo).await;
    assert!(
        matches!(account, Ok(None)),
        "no account created: {account:?}"
    );
    assert!(h.ledger(&typo).await.is_empty(), "no ledger row");

    let created = grant(&typo, 20, "promo-1", &["--create"]).await;

    assert_eq!(created.code, Some(0), "{created:?}");
    assert_eq!(
        h.balance(&typo).await,
        SIGNUP_GRANT.get() + 20,
        "--create: the signup grant, then this one"
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn empty_overlong_or_odd_reasons_and_a_missing_operator_are_refused_before_anything_is_written()
 {
    let h = Harness::new().await;
    let user = h.user();
    let (balance, rows) = (h.balance(&user).await, h.ledger(&user).await);
    let long = "a".repeat(65);
    for reason in ["", "   ", long.as_str(), "promo 1", "promo/1", "prоmo-1"] {
        let run = grant(&user, 5, reason, &[]).await;
        assert_ne!(run.code, Some(0), "{reason:?}: {run:?}");
        assert!(run.stderr.contains("--reason"), "{reason:?}: {run:?}");
    }
    let anonymous = admin(
        &[
            "grant",
            "--user",
            user.as_str(),
            "--credits",
            "5",
            "--reason",
            "promo-1",
        ],
        &[],
    )
    .await;
    assert_ne!(anonymous.code, Some(0), "{anonymous:?}");
    assert!(
        anonymous.stderr.contains("ATELIER_OPERATOR"),
        "{anonymous:?}"
    );
    assert_eq!(h.balance(&user).await, balance);
    assert_eq!(h.ledger(&user).await, rows);

    // The operator may come from the environment instead of the flag.
    let from_env = admin(
        &[
            "grant",
            "--user",
            user.as_str(),
            "--credits",
            "5",
            "--reason",
            "promo-1",
        ],
        &[("ATELIER_OPERATOR", "ops@example.com")],
    )
    .await;
    assert_eq!(from_env.code, Some(0), "{from_env:?}");
    assert_eq!(
        operator_on_row(&h, &user, "grant:admin:promo-1")
            .await
            .as_deref(),
        Some("ops@example.com")
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn budget_share_overrides_one_users_share_with_its_operator_and_clear_returns_the_default() {
    let h = Harness::new().await;
    let user = h.user();

    let unnamed = admin(&["budget", "share", user.as_str(), "5000000"], &[]).await;
    let nothing = admin(
        &["budget", "share", user.as_str(), "--operator", "jane"],
        &[],
    )
    .await;
    let set = admin(
        &[
            "budget",
            "share",
            user.as_str(),
            "5000000",
            "--operator",
            "jane",
        ],
        &[],
    )
    .await;
    let stored = h.app.store.get_user_share(&user).await.expect("override");
    let cleared = admin(&["budget", "share", user.as_str(), "--clear"], &[]).await;
    let show = admin(&["budget", "show"], &[]).await;

    assert_eq!(
        unnamed.code,
        Some(2),
        "the operator is required: {unnamed:?}"
    );
    assert_eq!(
        nothing.code,
        Some(2),
        "a share or --clear is required: {nothing:?}"
    );
    assert_eq!(set.code, Some(0), "{set:?}");
    let set: serde_json::Value = serde_json::from_str(&set.stdout).expect("JSON");
    assert_eq!(set["share_micros"], 5_000_000);
    assert_eq!(set["overridden"], true);
    assert_eq!(stored.map(|s| s.operator), Some("jane".to_owned()));
    assert_eq!(cleared.code, Some(0), "{cleared:?}");
    let cleared: serde_json::Value = serde_json::from_str(&cleared.stdout).expect("JSON");
    assert_eq!(cleared["overridden"], false);
    assert_eq!(
        cleared["share_micros"],
        h.app.config.limits.user_daily_share_micros.get()
    );
    assert!(
        h.app
            .store
            .get_user_share(&user)
            .await
            .expect("read")
            .is_none()
    );
    assert_eq!(show.code, Some(0), "{show:?}");
    let show: serde_json::Value = serde_json::from_str(&show.stdout).expect("JSON");
    assert!(show["top_spenders"].is_array(), "{show}");
}

#[tokio::test]
async fn account_release_lifts_the_hold_a_refund_left_and_a_rerun_changes_nothing() {
    let stripe = atelier_tests::stripe::StripeStandIn::start().await;
    let h = Harness::new().await.with_stripe(&stripe);
    let user = h.user();
    let paid = h.buy(&stripe, &user, "starter").await;
    for i in 0..3 {
        let original = h.upload(&user, "original", Harness::png(8, 8)).await;
        let body = serde_json::json!({ "style": "origami", "target": "pet", "original_asset_id": original });
        let res = h.submit(&user, Some(&format!("spend-{i}")), &body).await;
        assert_eq!(res.status, http::StatusCode::ACCEPTED, "{res:?}");
    }
    let refund = stripe.refund(&paid.object("payment_intent")).await;
    assert_eq!(h.deliver(&refund).await.body["outcome"], "reversed");
    assert_eq!(h.account(&user).await.body["on_hold"], true);

    let without_operator = admin(&["account", "release", user.as_str()], &[]).await;
    let released = admin(
        &["account", "release", user.as_str(), "--operator", "jane"],
        &[],
    )
    .await;
    let again = admin(
        &["account", "release", user.as_str(), "--operator", "jane"],
        &[],
    )
    .await;

    assert_eq!(without_operator.code, Some(2), "{without_operator:?}");
    assert_eq!(released.code, Some(0), "{released:?}");
    assert!(released.stdout.contains("released"), "{released:?}");
    assert_eq!(again.code, Some(0), "{again:?}");
    assert!(again.stdout.contains("not on hold"), "{again:?}");
    assert_eq!(h.account(&user).await.body["on_hold"], false);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn user_delete_by_an_operator_closes_the_account_records_them_and_a_rerun_changes_nothing() {
    let h = Harness::new().await;
    let user = h.user();
    h.upload(&user, "original", atelier_tests::tiny_png(4, 4))
        .await;
    let ledger_before = h.ledger(&user).await.len();

    let anonymous = admin(&["user", "delete", user.as_str(), "--yes"], &[]).await;
    let unconfirmed = admin(
        &["user", "delete", user.as_str(), "--operator", "jane"],
        &[],
    )
    .await;
    assert_eq!(
        h.objects_of(&user).await.len(),
        1,
        "nothing deleted unconfirmed"
    );
    let deleted = admin(
        &[
            "user",
            "delete",
            user.as_str(),
            "--operator",
            "jane",
            "--yes",
        ],
        &[],
    )
    .await;
    let again = admin(
        &[
            "user",
            "delete",
            user.as_str(),
            "--operator",
            "joe",
            "--yes",
        ],
        &[],
    )
    .await;

    assert_eq!(
        anonymous.code,
        Some(2),
        "the operator is required: {anonymous:?}"
    );
    assert_eq!(unconfirmed.code, Some(2), "{unconfirmed:?}");
    assert!(unconfirmed.stderr.contains("pass --yes"), "{unconfirmed:?}");
    assert_eq!(deleted.code, Some(0), "{deleted:?}");
    assert!(deleted.stdout.contains("\"deleted\""), "{deleted:?}");
    assert_eq!(again.code, Some(0), "{again:?}");
    assert!(h.objects_of(&user).await.is_empty());
    let account = h
        .app
        .store
        .get_account(&user)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"))
        .unwrap_or_else(|| panic!("the closed account is the record"));
    assert_eq!(
        account.closed_by.as_deref(),
        Some("operator:jane"),
        "the first close is kept"
    );
    assert!(account.deleted_at.is_some());
    assert_eq!(h.ledger(&user).await.len(), ledger_before);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_missing_job_or_user_exits_3_and_a_malformed_id_exits_2() {
    let h = Harness::new().await;
    let stranger = h.user();
    let no_job = admin(&["job", "show", "job_00000000000000000000000000"], &[]).await;
    let no_user = admin(&["user", "show", stranger.as_str()], &[]).await;
    let malformed = admin(&["job", "show", "not-a-job"], &[]).await;

    assert_eq!(no_job.code, Some(3), "{no_job:?}");
    assert_eq!(no_user.code, Some(3), "{no_user:?}");
    assert_eq!(malformed.code, Some(2), "{malformed:?}");
}

#[tokio::test]
async fn budget_show_gives_dollars_beside_micro_dollars() {
    let _h = Harness::new().await;
    let shown = admin(&["budget", "show"], &[]).await;
    assert_eq!(shown.code, Some(0), "{shown:?}");
    let v: serde_json::Value =
        serde_json::from_str(&shown.stdout).unwrap_or_else(|e| panic!("{e}: {shown:?}"));
    let cap = v["cap_micros"].as_i64().unwrap_or(-1);
    let dollars = v["usd"]["cap"].as_str().unwrap_or_default();
    let (whole, fraction) = dollars.split_once('.').unwrap_or_default();
    let micros = format!("{whole}{fraction:0<6}")
        .parse::<i64>()
        .unwrap_or(-2);
    assert!(fraction.len() >= 2, "{v}");
    assert_eq!(micros, cap, "{v}");
}

/// DynamoDB answers a query at most 1 MB at a time: the audit's read of a user's ledger
/// follows `LastEvaluatedKey` to the end, so a long-lived account with more than a page of rows
/// is audited whole (the mutation pass's survivor `!k.is_empty()` → `false` stopped at the
/// first page).
#[tokio::test]
async fn a_ledger_longer_than_one_page_is_read_whole() {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    // Tables of its own: rows without an account stay out of every other test's audit.
    let h = Harness::isolated(|_| {}).await;
    let user = h.user();
    // 1,200 rows of about 1 KB each: over a page, whatever the emulator's item overhead.
    let note = "x".repeat(1_000);
    let rows: Vec<LedgerItem> = (0..1_200)
        .map(|i| {
            let mut row = LedgerItem::new(
                &user,
                format!("grant:op:page-{i:04}"),
                atelier_shared::domain::Credits::new(1),
                LedgerKind::Grant,
                "2026-12-06T00:00:00Z",
            );
            row.reason = Some(note.clone());
            row
        })
        .collect();
    for chunk in rows.chunks(25) {
        let writes = chunk.iter().map(|row| {
            let item = serde_dynamo::to_item(row).unwrap_or_else(|e| panic!("{e}"));
            let put = PutRequest::builder().set_item(Some(item)).build();
            WriteRequest::builder()
                .put_request(put.unwrap_or_else(|e| panic!("{e}")))
                .build()
        });
        let out = h
            .clients
            .dynamodb
            .batch_write_item()
            .request_items(&h.app.config.resources.ledger_table, writes.collect())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(
            out.unprocessed_items.unwrap_or_default().is_empty(),
            "every row written"
        );
    }
    let all = h.app.store.ledger_rows(&user).await.expect("the ledger");
    assert_eq!(all.len(), 1_200, "every row, across pages");
    let grants = h
        .app
        .store
        .ledger_rows_from(&user, "grant:op:page-1")
        .await
        .expect("the ledger");
    assert_eq!(grants.len(), 200, "rows 1000-1199 by their prefix");
}
