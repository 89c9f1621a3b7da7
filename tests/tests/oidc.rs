//! The local issuer is an OpenID Connect provider shaped as Cognito's managed login, proven
//! with a maintained client (Authlib, pinned): discovery, authorization code + PKCE, the
//! sign-in form, the token endpoint, the ID token verified against the JWKS, a refresh. Its
//! tokens carry Cognito's claim sets, and the API gives the signup grant to the ID token only.

use atelier_tests::Harness;
use serde_json::Value;

struct Local {
    api: atelier_tests::LocalApi,
    issuer: String,
}

async fn start() -> Local {
    let api = atelier_tests::LocalApi::start(Harness::new().await.app).await;
    let issuer = api.issuer.issuer().to_owned();
    Local { api, issuer }
}

/// Runs Authlib's sign-in for `email`; its JSON report.
fn authlib_sign_in(issuer: &str, email: &str) -> Value {
    let python = std::env::var("ATELIER_AUTHLIB_PYTHON")
        .unwrap_or_else(|_| panic!("ATELIER_AUTHLIB_PYTHON is unset: run with `cargo xtask test`"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/official-authlib/flow.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .args([
            issuer,
            atelier_local::AUDIENCE,
            "http://127.0.0.1:9/callback",
            email,
        ])
        .output()
        .unwrap_or_else(|e| panic!("running {script}: {e}"));
    assert!(
        out.status.success(),
        "authlib: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("authlib's report: {e}"))
}

impl Local {
    async fn account(&self, token: &str) -> Value {
        let (status, body) = self.api.account(Some(token)).await;
        assert_eq!(status, 200, "{body}");
        body
    }
}

fn email() -> String {
    format!(
        "oidc-{}@example.test",
        ulid::Ulid::new().to_string().to_lowercase()
    )
}

#[tokio::test]
async fn authlib_signs_in_with_code_and_pkce_and_refreshes_cognito_shaped_tokens() {
    let local = start().await;
    let address = email();
    let report = tokio::task::spawn_blocking({
        let (issuer, address) = (local.issuer.clone(), address.clone());
        move || authlib_sign_in(&issuer, &address)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));

    let (id, access) = (&report["id"], &report["access"]);
    assert_eq!(report["state_kept"], true);
    for (claim, want) in [
        ("token_use", Value::from("id")),
        ("aud", Value::from(atelier_local::AUDIENCE)),
        ("iss", Value::from(local.issuer.as_str())),
        ("email", Value::from(address.as_str())),
        ("email_verified", Value::from(true)),
    ] {
        assert_eq!(id[claim], want, "ID token {claim}: {id}");
    }
    for claim in [
        "cognito:username",
        "auth_time",
        "jti",
        "origin_jti",
        "iat",
        "exp",
        "sub",
    ] {
        assert!(!id[claim].is_null(), "ID token has {claim}: {id}");
    }
    assert_eq!(access["token_use"], "access");
    assert_eq!(access["client_id"], atelier_local::AUDIENCE);
    assert_eq!(access["scope"], "openid email");
    assert_eq!(access["sub"], id["sub"]);
    for claim in ["aud", "email", "email_verified"] {
        assert!(
            access[claim].is_null(),
            "no {claim} in an access token: {access}"
        );
    }
    let refreshed = &report["refreshed_id"];
    assert_eq!(refreshed["sub"], id["sub"]);
    assert_eq!(
        refreshed["auth_time"], id["auth_time"],
        "the sign-in's time stays"
    );
    assert_ne!(refreshed["jti"], id["jti"]);
}

#[tokio::test]
async fn the_flows_access_token_is_served_without_the_grant_and_its_id_token_gets_it() {
    let local = start().await;
    let report = tokio::task::spawn_blocking({
        let issuer = local.issuer.clone();
        move || authlib_sign_in(&issuer, &email())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let (id_token, access_token) = (
        report["id_token"].as_str().unwrap_or_default(),
        report["access_token"].as_str().unwrap_or_default(),
    );

    let by_access = local.account(access_token).await;
    let by_id = local.account(id_token).await;

    assert_eq!(by_access["balance"], 0, "{by_access}");
    assert_eq!(by_access["signup_grant"], "pending");
    assert_eq!(by_id["balance"], 6, "{by_id}");
    assert_eq!(by_id["signup_grant"], "given");
    assert_eq!(by_id["user_id"], report["id"]["sub"]);
}
