//! The signup grant goes to an ID token with a verified address, once per user and once per
//! address: an access token never gets it (it carries no e-mail claims, and one that did is
//! not trusted), and a new `sub` with an address that had its grant (a Cognito user who
//! deleted themselves and signed up again) gets a clear `address_used`, not a second grant.
//! Only the address's keyed hash is kept, never the address.

use std::collections::HashMap;

use atelier_shared::domain::{AddressHash, LedgerKind, UserId};
use atelier_tests::{Harness, Reply};
use axum::body::Body;
use futures::future::join_all;
use http::StatusCode;

async fn account_with(h: &Harness, claims: HashMap<String, String>) -> Reply {
    let req = http::Request::get("/v1/account")
        .body(Body::empty())
        .unwrap_or_else(|e| panic!("{e}"));
    h.call_with_claims(Some(claims), req).await
}

/// The claims of a Cognito access token: `client_id`, `token_use: access`, `username`, no
/// `aud` and no e-mail claims; `with_email` adds them, as a forged or customised one might.
fn access_claims(user: &UserId, with_email: Option<&str>) -> HashMap<String, String> {
    let mut claims = HashMap::from([
        ("sub".to_owned(), user.to_string()),
        ("token_use".to_owned(), "access".to_owned()),
        ("client_id".to_owned(), "atelier".to_owned()),
        ("username".to_owned(), user.to_string()),
        ("scope".to_owned(), "openid email".to_owned()),
    ]);
    if let Some(email) = with_email {
        claims.insert("email".to_owned(), email.to_owned());
        claims.insert("email_verified".to_owned(), "true".to_owned());
    }
    claims
}

fn signup_rows(h_rows: &[atelier_shared::store::schema::LedgerItem]) -> usize {
    h_rows
        .iter()
        .filter(|r| r.kind == LedgerKind::Grant && r.reference == "grant:signup")
        .count()
}

fn address(h: &Harness, tag: &str) -> String {
    format!("{tag}-{}@example.test", h.user())
}

fn hash_of(h: &Harness, address: &str) -> AddressHash {
    let key = h.app.config.identity.address_key.as_ref();
    key.and_then(|k| AddressHash::of(address, k))
        .unwrap_or_else(|| panic!("no address key in the test configuration"))
}

#[tokio::test]
async fn an_access_token_never_gets_the_grant_and_the_id_token_of_the_same_user_does() {
    let h = Harness::new().await;
    let (user, email) = (h.user(), address(&h, "ana"));

    let bare = account_with(&h, access_claims(&user, None)).await;
    let forged = account_with(&h, access_claims(&user, Some(&email))).await;
    let id = account_with(&h, Harness::id_claims(&user, &email, "true")).await;

    assert_eq!(bare.status, StatusCode::OK, "{bare:?}");
    assert_eq!(
        (&bare.body["balance"], &bare.body["signup_grant"]),
        (&0.into(), &"pending".into())
    );
    assert_eq!(
        forged.body["balance"], 0,
        "an access token with e-mail claims: {forged:?}"
    );
    assert_eq!(
        (&id.body["balance"], &id.body["signup_grant"]),
        (&6.into(), &"given".into())
    );
    assert_eq!(signup_rows(&h.ledger(&user).await), 1);
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_new_sub_with_an_address_that_had_its_grant_gets_none_even_after_a_deletion() {
    let h = Harness::new().await;
    let (first, again) = (h.user(), h.user());
    let email = address(&h, "bo");
    let granted = account_with(&h, Harness::id_claims(&first, &email, "true")).await;
    assert_eq!(granted.body["balance"], 6, "{granted:?}");
    assert_eq!(h.delete_account(&first).await.status, StatusCode::OK);

    // The same mailbox, written another way, under a new sub (Cognito: DeleteUser, sign up).
    let same_mailbox = email.replace("@", "+again@").to_uppercase();
    let second = account_with(&h, Harness::id_claims(&again, &same_mailbox, "true")).await;
    let later = account_with(&h, Harness::id_claims(&again, &email, "true")).await;

    assert_eq!(
        second.status,
        StatusCode::OK,
        "a state, not an error: {second:?}"
    );
    assert_eq!(
        (&second.body["balance"], &second.body["signup_grant"]),
        (&0.into(), &"address_used".into())
    );
    assert_eq!(later.body["balance"], 0, "{later:?}");
    assert_eq!(signup_rows(&h.ledger(&again).await), 0);
    let record = h.app.store.signup_of(&hash_of(&h, &email)).await;
    let record = record.unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        record.map(|r| r.user_id),
        Some(first),
        "the first grant's record stays"
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn a_pending_account_whose_address_had_its_grant_is_told_so_once_verified() {
    let h = Harness::new().await;
    let (first, later) = (h.user(), h.user());
    let email = address(&h, "cy");
    assert_eq!(
        account_with(&h, Harness::id_claims(&first, &email, "true"))
            .await
            .body["balance"],
        6
    );

    let unverified = account_with(&h, Harness::id_claims(&later, &email, "false")).await;
    let verified = account_with(&h, Harness::id_claims(&later, &email, "true")).await;

    assert_eq!(unverified.body["signup_grant"], "pending", "{unverified:?}");
    assert_eq!(
        (&verified.body["balance"], &verified.body["signup_grant"]),
        (&0.into(), &"address_used".into())
    );
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn two_subs_with_one_address_signing_up_at_once_get_exactly_one_grant() {
    let h = Harness::new().await;
    for round in 0..4 {
        let email = address(&h, &format!("race{round}"));
        let users = [h.user(), h.user()];
        // Each sub's first calls race each other and the other sub's; half start unverified.
        let replies = join_all((0..12).map(|i| {
            let verified = if i % 3 == 2 { "false" } else { "true" };
            account_with(&h, Harness::id_claims(&users[i % 2], &email, verified))
        }))
        .await;
        assert!(
            replies.iter().all(|r| r.status == StatusCode::OK),
            "{replies:?}"
        );

        let mut balances = Vec::new();
        for user in &users {
            let settled = account_with(&h, Harness::id_claims(user, &email, "true")).await;
            balances.push(settled.body["balance"].as_i64().unwrap_or(-1));
        }
        balances.sort_unstable();
        assert_eq!(balances, [0, 6], "round {round}: exactly one grant");
        let mut rows = 0;
        for user in &users {
            rows += signup_rows(&h.ledger(user).await);
        }
        assert_eq!(rows, 1, "round {round}: one grant row");
    }
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn no_table_holds_the_address_only_its_keyed_hash() {
    let h = Harness::new().await;
    let user = h.user();
    let email = address(&h, "dee");
    assert_eq!(
        account_with(&h, Harness::id_claims(&user, &email, "true"))
            .await
            .body["balance"],
        6
    );
    assert_eq!(h.delete_account(&user).await.status, StatusCode::OK);

    let (ddb, names) = (&h.clients.dynamodb, &h.app.config.resources);
    let hash = hash_of(&h, &email);
    let account = ddb.get_item().table_name(&names.accounts_table);
    let account = account.key("user_id", s(user.as_str())).send().await;
    let ledger = ddb.query().table_name(&names.ledger_table);
    let ledger = ledger
        .key_condition_expression("user_id = :u")
        .expression_attribute_values(":u", s(user.as_str()))
        .send()
        .await;
    let signup = ddb.get_item().table_name(&names.signups_table);
    let signup = signup.key("address_hash", s(hash.as_str())).send().await;
    let dump = format!("{account:?} {ledger:?} {signup:?}");

    let local = email.split('@').next().unwrap_or_default();
    assert!(
        signup.is_ok_and(|s| s.item.is_some()),
        "the hash is kept: {dump}"
    );
    assert!(
        dump.contains("grant:signup"),
        "the reads saw the rows: {dump}"
    );
    assert!(!dump.contains(local), "the address is nowhere: {dump}");
}

/// A Gmail local part no other test uses.
fn fresh_gmail_name(h: &Harness) -> String {
    h.user().as_str().trim_start_matches("t-").to_owned()
}

#[tokio::test]
async fn one_gmail_inbox_written_with_dots_or_as_googlemail_gets_one_grant() {
    let h = Harness::new().await;
    let name = fresh_gmail_name(&h);
    let (first, second, third) = (h.user(), h.user(), h.user());
    let dotted = format!("j.ohn{name}@gmail.com");
    let googlemail = format!("john{name}@googlemail.com");
    let other_dots = format!("jo.hn.{name}+x@GMail.com");

    let granted = account_with(&h, Harness::id_claims(&first, &dotted, "true")).await;
    let refused = account_with(&h, Harness::id_claims(&second, &googlemail, "true")).await;
    let again = account_with(&h, Harness::id_claims(&third, &other_dots, "true")).await;

    assert_eq!(granted.body["balance"], 6, "{granted:?}");
    for reply in [&refused, &again] {
        assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
        assert_eq!(
            (&reply.body["balance"], &reply.body["signup_grant"]),
            (&0.into(), &"address_used".into()),
            "the same inbox: {reply:?}"
        );
    }
    let rows = signup_rows(&h.ledger(&second).await) + signup_rows(&h.ledger(&third).await);
    assert_eq!(rows, 0, "one grant for the inbox");
    h.assert_audit_clean().await;
}

#[tokio::test]
async fn an_address_granted_under_the_older_normalisation_gets_no_second_grant() {
    let h = Harness::new().await;
    let name = fresh_gmail_name(&h);
    let (before, after) = (h.user(), h.user());
    let dotted = format!("a.na{name}@gmail.com");
    // A grant recorded before the provider table: its hash is of the dotted form.
    let key = h.app.config.identity.address_key.as_ref();
    let legacy = key
        .and_then(|k| AddressHash::legacy_of(&dotted, k))
        .unwrap_or_else(|| panic!("no address key in the test configuration"));
    assert_ne!(legacy, hash_of(&h, &dotted), "the forms differ");
    let (ddb, names) = (&h.clients.dynamodb, &h.app.config.resources);
    ddb.put_item()
        .table_name(&names.signups_table)
        .item("address_hash", s(legacy.as_str()))
        .item("user_id", s(before.as_str()))
        .item("granted_at", s("2026-01-01T00:00:00Z"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));

    let reply = account_with(
        &h,
        Harness::id_claims(&after, &dotted.to_uppercase(), "true"),
    )
    .await;

    assert_eq!(
        (&reply.body["balance"], &reply.body["signup_grant"]),
        (&0.into(), &"address_used".into()),
        "{reply:?}"
    );
    assert_eq!(signup_rows(&h.ledger(&after).await), 0);
    h.assert_audit_clean().await;
}

fn s(v: &str) -> aws_sdk_dynamodb::types::AttributeValue {
    aws_sdk_dynamodb::types::AttributeValue::S(v.to_owned())
}
