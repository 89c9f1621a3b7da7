//! `atelier login --oidc`: OpenID Connect authorization code + PKCE (S256) with a loopback
//! redirect, the shape of `gh auth login` and of RFC 8252: the client listens on
//! `127.0.0.1:<any port>`, prints the issuer's sign-in URL, takes the code from the browser's
//! redirect, and redeems it with the verifier. The ID token is what the API takes; the refresh
//! token renews it. The same code signs in at Cognito's managed login and the local issuer.
//!
//! Where no browser can reach the loopback (`--no-browser` on a remote shell), the address the
//! browser ends on can be pasted instead: it carries the same code and state. Cognito has no
//! device authorization endpoint (RFC 8628), so this is the headless sign-in that works against
//! it, as `gcloud auth login --no-browser` and rclone's remote authorize do.

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Url;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What renews a login: the token endpoint, the client and its refresh token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Refresh {
    pub token_endpoint: String,
    pub client_id: String,
    pub refresh_token: String,
}

/// The token endpoint's answer (Cognito's names).
#[derive(Debug, Deserialize)]
pub struct Tokens {
    pub id_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    pub expires_in: u64,
}

#[derive(Deserialize)]
struct Discovery {
    authorization_endpoint: String,
    token_endpoint: String,
}

/// 32 random bytes, base64url: a PKCE verifier or a state.
fn random_token() -> String {
    let (a, b) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    URL_SAFE_NO_PAD.encode([a.as_bytes().as_slice(), b.as_bytes().as_slice()].concat())
}

/// Signs in at `issuer` for `client_id`: `show` gets the URL to open. The tokens and what
/// renews them.
pub async fn sign_in(
    http: &reqwest::Client,
    issuer: &str,
    client_id: &str,
    paste: bool,
    show: impl Fn(&str),
) -> anyhow::Result<(Tokens, Refresh)> {
    let url = format!("{issuer}/.well-known/openid-configuration");
    let meta: Discovery = http
        .get(&url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .with_context(|| format!("discovery at {url}"))?
        .json()
        .await
        .with_context(|| format!("discovery at {url}"))?;
    for (what, endpoint) in [
        ("the authorization endpoint", &meta.authorization_endpoint),
        ("the token endpoint", &meta.token_endpoint),
    ] {
        crate::secure::require_secure(what, endpoint)?;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let redirect = format!(
        "http://127.0.0.1:{}/callback",
        listener.local_addr()?.port()
    );
    let (verifier, state) = (random_token(), random_token());
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let authorize = Url::parse_with_params(
        &meta.authorization_endpoint,
        [
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", &redirect),
            ("scope", "openid email"),
            ("state", &state),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
        ],
    )?;
    show(authorize.as_str());
    let code = match paste {
        false => await_code(&listener, &state).await?,
        true => tokio::select! {
            code = await_code(&listener, &state) => code?,
            code = pasted_code(&state) => code?,
        },
    };
    let form = [
        ("grant_type", "authorization_code"),
        ("client_id", client_id),
        ("code", &code),
        ("redirect_uri", &redirect),
        ("code_verifier", &verifier),
    ];
    let tokens = token_call(http, &meta.token_endpoint, &form).await?;
    let refresh = Refresh {
        token_endpoint: meta.token_endpoint,
        client_id: client_id.to_owned(),
        refresh_token: tokens.refresh_token.clone().unwrap_or_default(),
    };
    Ok((tokens, refresh))
}

/// New tokens for a saved login.
pub async fn renew(http: &reqwest::Client, r: &Refresh) -> anyhow::Result<Tokens> {
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", r.client_id.as_str()),
        ("refresh_token", r.refresh_token.as_str()),
    ];
    token_call(http, &r.token_endpoint, &form).await
}

async fn token_call(
    http: &reqwest::Client,
    endpoint: &str,
    form: &[(&str, &str)],
) -> anyhow::Result<Tokens> {
    // application/x-www-form-urlencoded, encoded as a URL's query is.
    let mut encoded = Url::parse("http://form.invalid/")?;
    encoded.query_pairs_mut().extend_pairs(form);
    let res = http
        .post(endpoint)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(encoded.query().unwrap_or_default().to_owned())
        .send()
        .await
        .with_context(|| format!("calling {endpoint}"))?;
    let status = res.status();
    let body = res.text().await.unwrap_or_default();
    if !status.is_success() {
        bail!(
            "the token endpoint {endpoint} answered {status}: {}",
            oauth_error(&body)
        );
    }
    // The answer holds the tokens: an error names what is wrong with it, never its text.
    serde_json::from_str(&body).map_err(|e| {
        anyhow::anyhow!(
            "the token endpoint {endpoint} answered {status} without a usable token response ({:?} at line {}, column {}; {} bytes, not shown)",
            e.classify(),
            e.line(),
            e.column(),
            body.len()
        )
    })
}

/// What an error answer of the token endpoint may show: its OAuth `error` and
/// `error_description` (RFC 6749 §5.2), nothing else (a misbehaving endpoint could echo a
/// code or a refresh token in the rest).
fn oauth_error(body: &str) -> String {
    #[derive(Deserialize)]
    struct OAuthError {
        error: String,
        #[serde(default)]
        error_description: Option<String>,
    }
    match serde_json::from_str::<OAuthError>(body) {
        Ok(OAuthError {
            error,
            error_description: Some(why),
        }) => format!("{error}: {why}"),
        Ok(OAuthError { error, .. }) => error,
        Err(_) => format!(
            "{} bytes that are not an OAuth error (not shown)",
            body.len()
        ),
    }
}

/// The code in a redirect address, when its state is ours; `None` when it carries no answer.
fn code_in(url: &Url, state: &str) -> Option<anyhow::Result<String>> {
    let get = |k: &str| {
        url.query_pairs()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.into_owned())
    };
    let (code, error) = (get("code"), get("error"));
    if code.is_none() && error.is_none() {
        return None;
    }
    if get("state").as_deref() != Some(state) {
        return Some(Err(anyhow::anyhow!(
            "the sign-in answered with another state: not our request"
        )));
    }
    Some(code.with_context(|| format!("the issuer refused: {}", error.unwrap_or_default())))
}

/// Waits for the browser's redirect; the code, when its state is ours.
async fn await_code(listener: &tokio::net::TcpListener, state: &str) -> anyhow::Result<String> {
    loop {
        let (mut socket, _) = listener.accept().await?;
        let mut buf = vec![0u8; 8192];
        let n = socket.read(&mut buf).await?;
        let head = String::from_utf8_lossy(&buf[..n]);
        let target = head.split_whitespace().nth(1).unwrap_or("/");
        let url = Url::parse(&format!("http://127.0.0.1{target}"))?;
        let Some(answer) = code_in(&url, state) else {
            continue; // a favicon or a stray request
        };
        let page = if answer.is_ok() {
            "Signed in. You can close this tab and go back to the terminal."
        } else {
            "Sign-in failed. Go back to the terminal."
        };
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        socket.write_all(reply.as_bytes()).await?;
        return answer;
    }
}

/// The code from a redirect address pasted on standard input (one a line, up to 8 KiB).
async fn pasted_code(state: &str) -> anyhow::Result<String> {
    // A thread of its own: tokio's stdin would hold the runtime open after the loopback won.
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    while let Some(line) = lines.recv().await {
        let line = line.trim();
        let answer = Url::parse(line)
            .ok()
            .filter(|_| line.len() <= 8192)
            .and_then(|url| code_in(&url, state));
        match answer {
            Some(answer) => return answer,
            None if line.is_empty() => {}
            None => eprintln!("That address holds no sign-in answer; paste the whole address."),
        }
    }
    bail!("standard input closed before the browser's address was pasted")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn a_redirect_gives_its_code_only_with_our_state() {
        let ours = code_in(&url("http://127.0.0.1:9/callback?code=c1&state=s"), "s");
        assert_eq!(ours.and_then(Result::ok).as_deref(), Some("c1"));
        let theirs = code_in(&url("http://127.0.0.1:9/callback?code=c1&state=x"), "s");
        assert!(theirs.is_some_and(|r| r.is_err()));
        let refused = code_in(&url("http://h/cb?error=access_denied&state=s"), "s");
        let message = refused.and_then(|r| r.err()).map(|e| e.to_string());
        assert_eq!(
            message.as_deref(),
            Some("the issuer refused: access_denied")
        );
        assert!(code_in(&url("http://127.0.0.1:9/favicon.ico"), "s").is_none());
    }

    /// A token endpoint on a local socket answering `status` with `body`, once.
    async fn endpoint(status: &str, body: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let url = format!(
            "http://{}/token",
            listener.local_addr().unwrap_or_else(|e| panic!("{e}"))
        );
        let reply = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
            let mut buf = vec![0u8; 8192];
            let _ = socket.read(&mut buf).await;
            let _ = socket.write_all(reply.as_bytes()).await;
        });
        url
    }

    /// A token response is a secret: a renewal that fails says why, never what was answered.
    #[tokio::test]
    async fn a_failed_token_call_never_shows_the_tokens() {
        let cases = [
            (
                "200 OK",
                r#"{"id_token":"SECRET-ID","refresh_token":"SECRET-REFRESH"}"#,
                "no expires_in",
            ),
            (
                "200 OK",
                r#"{"id_token":"SECRET-ID","expires_in":"SECRET-3600"}"#,
                "a mistyped field",
            ),
            ("200 OK", "SECRET-ID not json", "not JSON"),
            (
                "400 Bad Request",
                r#"{"error":"invalid_grant","refresh_token":"SECRET-REFRESH"}"#,
                "an error echoing a token",
            ),
            ("502 Bad Gateway", "<html>SECRET-ID</html>", "an HTML error"),
        ];
        for (status, body, why) in cases {
            let refresh = Refresh {
                token_endpoint: endpoint(status, body).await,
                client_id: "atelier".to_owned(),
                refresh_token: "r".to_owned(),
            };
            let err = renew(&reqwest::Client::new(), &refresh).await.err();
            let message = err.map(|e| format!("{e:#}")).unwrap_or_default();
            assert!(!message.is_empty(), "{why}: refused");
            assert!(!message.contains("SECRET"), "{why}: {message}");
        }
    }
}
