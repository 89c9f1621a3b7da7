//! The local authorizer behaves like API Gateway's JWT authorizer: RS256 with a `kid` from
//! the issuer's JWKS; issuer, audience, expiry and not-before checked; anything else is 401.
//! Unknown `kid`s do not make every request fetch the JWKS.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use atelier_local::authorizer::{AuthError, Authorizer};
use atelier_local::issuer::DevIssuer;
use atelier_local::serve::ISSUER_PATH;
use atelier_tests::Harness;
use futures::future::join_all;
use serde_json::Value;

type Local = atelier_tests::LocalApi;

async fn start() -> Local {
    Local::start(Harness::new().await.app).await
}

/// An HS256 token (shared-secret signature): API Gateway refuses the algorithm outright.
fn hs256_token(sub: &str, issuer: &str) -> String {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT","kid":"x"}"#);
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_else(|e| panic!("the clock is before 1970: {e}"))
        + 3600;
    let claims = URL_SAFE_NO_PAD.encode(format!(
        r#"{{"sub":"{sub}","iss":"{issuer}","aud":"atelier","exp":{exp}}}"#
    ));
    format!(
        "{header}.{claims}.{}",
        URL_SAFE_NO_PAD.encode(b"not-a-real-signature")
    )
}

#[tokio::test]
async fn a_valid_dev_token_reaches_the_handler_as_its_sub() {
    let local = start().await;
    let token = local
        .issuer
        .token("alice-auth-test", 300)
        .expect("a dev token");
    let (status, body) = local.account(Some(&token)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["user_id"], "alice-auth-test");
}

#[tokio::test]
async fn missing_bad_expired_foreign_and_hs256_tokens_are_401() {
    let local = start().await;
    let other_issuer =
        DevIssuer::ephemeral("http://127.0.0.1:1/elsewhere").unwrap_or_else(|e| panic!("{e}"));
    let tampered = {
        let t = local.issuer.token("mallory", 300).expect("a dev token");
        let mut parts: Vec<String> = t.split('.').map(str::to_owned).collect();
        parts[1] = base64::Engine::encode(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            format!(
                r#"{{"sub":"admin","iss":"{}","aud":"atelier","exp":9999999999}}"#,
                local.issuer.issuer()
            ),
        );
        parts.join(".")
    };
    let cases: Vec<(&str, Option<String>)> = vec![
        ("no token", None),
        ("garbage", Some("not.a.jwt".into())),
        ("expired", local.issuer.token("bob", -120).ok()),
        (
            "wrong audience",
            local.issuer.token_with("bob", "someone-else", 300).ok(),
        ),
        ("another issuer's key", other_issuer.token("bob", 300).ok()),
        ("tampered claims", Some(tampered)),
        ("HS256", Some(hs256_token("bob", local.issuer.issuer()))),
    ];
    for (why, token) in cases {
        let (status, body) = local.account(token.as_deref()).await;
        assert_eq!(status, 401, "{why}: {body}");
        assert_eq!(body["code"], "UNAUTHENTICATED", "{why}");
    }
}

#[tokio::test]
async fn the_dev_issuer_serves_its_jwks_with_the_tokens_kid() {
    let local = start().await;
    let jwks: Value = local
        .http
        .get(format!("{}{ISSUER_PATH}/.well-known/jwks.json", local.base))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or(Value::Null);
    assert_eq!(jwks["keys"][0]["kid"], local.issuer.kid());
    assert_eq!(jwks["keys"][0]["alg"], "RS256");
}

#[tokio::test]
async fn a_token_before_its_nbf_is_401_and_after_it_reaches_the_handler() {
    let local = start().await;
    let early = local
        .issuer
        .token_not_before("carol-nbf-test", 120, 600)
        .expect("a dev token");
    let due = local
        .issuer
        .token_not_before("carol-nbf-test", -5, 600)
        .expect("a dev token");

    let (early_status, early_body) = local.account(Some(&early)).await;
    let (due_status, due_body) = local.account(Some(&due)).await;

    assert_eq!(early_status, 401, "{early_body}");
    assert_eq!(early_body["code"], "UNAUTHENTICATED");
    assert_eq!(due_status, 200, "{due_body}");
}

/// An issuer's JWKS served by a tiny server that counts its fetches.
async fn counting_issuer() -> (DevIssuer, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let issuer = DevIssuer::ephemeral(&format!("http://{addr}")).unwrap_or_else(|e| panic!("{e}"));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (jwks, count) = (issuer.jwks(), fetches.clone());
    let router = axum::Router::new().route(
        "/.well-known/jwks.json",
        axum::routing::get(move || {
            count.fetch_add(1, Ordering::SeqCst);
            let jwks = jwks.clone();
            async move { axum::Json(jwks) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    (issuer, fetches)
}

#[tokio::test]
async fn tokens_with_unknown_kids_fetch_the_jwks_at_most_once_per_minute() {
    let (issuer, fetches) = counting_issuer().await;
    // Same issuer URL, another key: every token of it names a kid the JWKS does not have.
    let forger = DevIssuer::ephemeral(issuer.issuer()).unwrap_or_else(|e| panic!("{e}"));
    let authorizer = Authorizer::new(issuer.issuer(), "atelier");
    let forged: Vec<String> = (0..20)
        .map(|i| forger.token(&format!("mallory-{i}"), 300).expect("a token"))
        .collect();

    let headers: Vec<String> = forged.iter().map(|t| format!("Bearer {t}")).collect();
    let refused = join_all(headers.iter().map(|h| authorizer.verify(Some(h)))).await;
    let again = authorizer
        .verify(Some(&format!("Bearer {}", forged[0])))
        .await;
    let genuine = issuer.token("dora-jwks-test", 300).expect("a token");
    let accepted = authorizer.verify(Some(&format!("Bearer {genuine}"))).await;

    assert!(refused.iter().all(Result::is_err), "{refused:?}");
    assert!(matches!(again, Err(AuthError::UnknownKid(_))), "{again:?}");
    assert_eq!(
        accepted.ok().and_then(|c| c.get("sub").cloned()).as_deref(),
        Some("dora-jwks-test")
    );
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        1,
        "21 unknown kids and one known: one fetch"
    );
}

#[tokio::test]
async fn the_signup_grant_needs_the_dev_tokens_verified_email_and_comes_once_it_is() {
    let local = start().await;
    let user = format!(
        "auth-verify-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let unverified = local
        .issuer
        .token_unverified(&user, 300)
        .expect("a dev token");
    let (status, body) = local.account(Some(&unverified)).await;
    assert_eq!((status, &body["balance"]), (200, &Value::from(0)), "{body}");
    // The dev issuer's verified token carries `email_verified` as a JSON boolean, as Cognito's
    // does; the authorizer passes it on as "true", as API Gateway's context does.
    let verified = local.issuer.token(&user, 300).expect("a dev token");
    let (status, body) = local.account(Some(&verified)).await;
    assert_eq!((status, &body["balance"]), (200, &Value::from(6)), "{body}");
    let (_, body) = local.account(Some(&verified)).await;
    assert_eq!(body["balance"], 6, "granted once");
}

#[tokio::test]
async fn an_access_token_passes_by_its_client_id_as_api_gateway_checks_it_but_gets_no_grant() {
    let local = start().await;
    let token = local
        .issuer
        .access_token("erin-access-test", 300)
        .expect("an access token");

    let (status, body) = local.account(Some(&token)).await;

    assert_eq!(status, 200, "no aud: checked by client_id: {body}");
    assert_eq!(body["user_id"], "erin-access-test");
    assert_eq!(
        (&body["balance"], &body["signup_grant"]),
        (&0.into(), &"pending".into())
    );
}
