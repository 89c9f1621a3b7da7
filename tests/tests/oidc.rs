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

/// A browser at the issuer: no redirects followed, its cookie carried by hand.
struct Browser {
    http: reqwest::Client,
    cookie: Option<String>,
}

const CALLBACK: &str = "http://127.0.0.1:9/callback";
const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

impl Browser {
    fn new() -> Browser {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        Browser { http, cookie: None }
    }

    fn query(prompt: Option<&str>) -> String {
        use base64::Engine;
        use sha2::Digest;
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(sha2::Sha256::digest(VERIFIER.as_bytes()));
        let prompt = prompt.map(|p| format!("&prompt={p}")).unwrap_or_default();
        format!(
            "response_type=code&client_id={}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&state=s1&scope=openid+email&code_challenge={challenge}&code_challenge_method=S256{prompt}",
            atelier_local::AUDIENCE
        )
    }

    /// Where the issuer sends the browser back to (the `Location` of its `303`).
    async fn authorize(
        &mut self,
        issuer: &str,
        prompt: Option<&str>,
        email: Option<&str>,
    ) -> String {
        let url = format!("{issuer}/oauth2/authorize");
        let req = match email {
            Some(email) => self
                .http
                .post(&url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(format!(
                    "{}&email={}",
                    Browser::query(prompt),
                    email.replace('@', "%40")
                )),
            None => self.http.get(format!("{url}?{}", Browser::query(prompt))),
        };
        let req = match &self.cookie {
            Some(c) => req.header("cookie", c),
            None => req,
        };
        let res = req.send().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(res.status().as_u16(), 303, "a redirect: {res:?}");
        if let Some(set) = res
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
        {
            self.cookie = set.split(';').next().map(str::to_owned);
        }
        let location = res.headers().get("location").and_then(|v| v.to_str().ok());
        location.unwrap_or_default().to_owned()
    }
}

/// The ID token a code from `location` redeems for.
async fn redeem(issuer: &str, location: &str) -> String {
    let code = location
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("code="))
        .unwrap_or_else(|| panic!("a code in {location}"));
    let body = format!(
        "grant_type=authorization_code&code={code}&client_id={}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&code_verifier={VERIFIER}",
        atelier_local::AUDIENCE
    );
    let res = reqwest::Client::new()
        .post(format!("{issuer}/oauth2/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let tokens: Value = res.json().await.unwrap_or_else(|e| panic!("{e}"));
    tokens["id_token"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_silent_sign_in_answers_login_required_without_a_session_and_a_code_with_one() {
    let local = start().await;
    let address = email();
    let mut browser = Browser::new();

    let refused = browser.authorize(&local.issuer, Some("none"), None).await;
    assert_eq!(
        refused,
        format!("{CALLBACK}?error=login_required&state=s1"),
        "no session: nothing shown, login_required"
    );

    let signed_in = browser.authorize(&local.issuer, None, Some(&address)).await;
    assert!(
        browser.cookie.is_some(),
        "the sign-in leaves a session cookie"
    );
    let first = redeem(&local.issuer, &signed_in).await;

    let silent = browser.authorize(&local.issuer, Some("none"), None).await;
    assert!(silent.contains("&state=s1"), "{silent}");
    let again = redeem(&local.issuer, &silent).await;
    let first = local.account(&first).await;
    assert_eq!(
        local.account(&again).await["user_id"],
        first["user_id"],
        "the same person, silently"
    );

    let stranger = Browser::new()
        .authorize(&local.issuer, Some("none"), None)
        .await;
    assert!(
        stranger.contains("error=login_required"),
        "another browser has no session: {stranger}"
    );
}

/// The code goes only to this machine: `redirect_uri` is read as a browser reads it, so a
/// loopback name before an `@` (user info) or inside a longer host does not pass.
#[tokio::test]
async fn the_issuer_sends_codes_only_to_a_loopback_redirect_uri() {
    let local = start().await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let cases = [
        ("http://127.0.0.1:9/callback", 200, "IPv4 loopback"),
        ("http://localhost:8400/cb", 200, "localhost"),
        ("http://[::1]:8400/cb", 200, "IPv6 loopback"),
        (
            "http://localhost:@evil.example/cb",
            400,
            "user info, then another host",
        ),
        (
            "http://127.0.0.1:9@evil.example/cb",
            400,
            "a loopback user name",
        ),
        ("http://localhost.evil.example:9/cb", 400, "a longer host"),
        (
            "http://127.0.0.1.evil.example/cb",
            400,
            "an address as a subdomain",
        ),
        ("https://evil.example/cb", 400, "elsewhere"),
        ("ftp://127.0.0.1:9/cb", 400, "another scheme"),
        ("http://127.0.0.1:9/cb#frag", 400, "a fragment"),
        ("not a url", 400, "not a URL"),
    ];
    for (uri, want, why) in cases {
        let query = [
            ("response_type", "code"),
            ("client_id", atelier_local::AUDIENCE),
            ("redirect_uri", uri),
            ("state", "s1"),
            (
                "code_challenge",
                "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            ),
            ("code_challenge_method", "S256"),
        ];
        let query: Vec<String> = query
            .iter()
            .map(|(k, v)| format!("{k}={}", percent_encoded(v)))
            .collect();
        let res = http
            .get(format!(
                "{}/oauth2/authorize?{}",
                local.issuer,
                query.join("&")
            ))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(res.status().as_u16(), want, "{why}: {uri}");
    }
}

/// `value` with every byte but ASCII letters and digits percent-encoded.
fn percent_encoded(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
