//! The dev issuer's OpenID Connect side, shaped as Cognito's managed login: discovery at
//! `{issuer}/.well-known/openid-configuration`, `/oauth2/authorize` (a small sign-in form:
//! an address is the user), `/oauth2/token` for `authorization_code` (PKCE S256 required)
//! and `refresh_token` grants, answering `id_token`, `access_token` and `refresh_token`.
//! Codes are single-use and live five minutes; both live in memory (a restart signs everyone
//! out, as a revoked refresh token would). Redirects go to loopback addresses only.
//! A sign-in also leaves the browser a session cookie, as Cognito's managed login does, so
//! `prompt=none` (a silent sign-in from a new tab) answers a code while it lasts and
//! `error=login_required` without it (OpenID Connect Core 3.1.2.6).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::issuer::{DevIssuer, Subject, Times, random_id, uuid_form};

/// Lifetime of ID and access tokens (Cognito's default: an hour).
const TOKEN_TTL: i64 = 3600;
/// Lifetime of an authorization code.
const CODE_TTL: i64 = 300;
/// Lifetime of the browser's session at the issuer (Cognito's managed login: an hour).
const BROWSER_SESSION_TTL: i64 = 3600;
/// The issuer's session cookie.
const SESSION_COOKIE: &str = "atelier_dev_issuer";

/// A signed-in session: what a code or a refresh token stands for.
#[derive(Debug, Clone)]
struct Session {
    subject: Subject,
    client_id: String,
    auth_time: i64,
    origin_jti: String,
}

#[derive(Debug, Clone)]
struct PendingCode {
    session: Session,
    redirect_uri: String,
    challenge: String,
    expires: i64,
}

#[derive(Default)]
struct Memory {
    codes: HashMap<String, PendingCode>,
    refresh: HashMap<String, Session>,
    /// Browser sessions by cookie value: the session and when it ends.
    browsers: HashMap<String, (Session, i64)>,
}

#[derive(Clone)]
struct Oidc {
    issuer: Arc<DevIssuer>,
    memory: Arc<Mutex<Memory>>,
}

/// The OIDC routes under `prefix` (the issuer's path).
pub fn router(issuer: DevIssuer, prefix: &str) -> Router {
    let state = Oidc {
        issuer: Arc::new(issuer),
        memory: Arc::default(),
    };
    Router::new()
        .route(
            &format!("{prefix}/.well-known/openid-configuration"),
            get(discovery),
        )
        .route(
            &format!("{prefix}/oauth2/authorize"),
            get(authorize_form).post(authorize),
        )
        .route(
            &format!("{prefix}/oauth2/token"),
            axum::routing::post(token),
        )
        .with_state(state)
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Cognito's discovery document, the endpoints on the host the request came to (through a
/// proxy or not); the issuer as configured (what the tokens' `iss` says).
async fn discovery(State(o): State<Oidc>, headers: HeaderMap) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let path = o
        .issuer
        .issuer()
        .splitn(4, '/')
        .nth(3)
        .map_or(String::new(), |p| format!("/{p}"));
    let base = format!("http://{host}{path}");
    let doc = json!({
        "issuer": o.issuer.issuer(),
        "authorization_endpoint": format!("{base}/oauth2/authorize"),
        "token_endpoint": format!("{base}/oauth2/token"),
        "jwks_uri": format!("{}/.well-known/jwks.json", o.issuer.issuer()),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "scopes_supported": ["openid", "email", "profile"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": ["sub", "email", "email_verified", "cognito:username", "aud", "iss", "exp", "iat", "auth_time", "token_use"],
    });
    cors(Json(doc).into_response())
}

/// Cognito's endpoints answer browsers of any origin; PKCE, not the origin, protects them.
fn cors(mut res: Response) -> Response {
    res.headers_mut().insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        header::HeaderValue::from_static("*"),
    );
    res
}

#[derive(Debug, Deserialize)]
struct AuthorizeRequest {
    response_type: String,
    client_id: String,
    redirect_uri: String,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    code_challenge: Option<String>,
    #[serde(default)]
    code_challenge_method: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    nonce: Option<String>,
    /// `none`: answer without showing anything (a code for the browser's session, or
    /// `login_required`).
    #[serde(default)]
    prompt: Option<String>,
    /// The sign-in form's field (POST only).
    #[serde(default)]
    email: Option<String>,
}

impl AuthorizeRequest {
    /// Why the request cannot go on, as an OAuth error code and a sentence.
    fn problem(&self) -> Option<(&'static str, &'static str)> {
        if self.response_type != "code" {
            return Some(("unsupported_response_type", "response_type must be code"));
        }
        if self.client_id != crate::AUDIENCE {
            return Some(("invalid_client", "unknown client_id"));
        }
        if !loopback(&self.redirect_uri) {
            return Some(("invalid_request", "redirect_uri must be a loopback URL"));
        }
        let pkce = self.code_challenge_method.as_deref() == Some("S256")
            && self
                .code_challenge
                .as_deref()
                .is_some_and(|c| c.len() >= 43);
        if !pkce {
            return Some(("invalid_request", "PKCE with S256 is required"));
        }
        None
    }
}

/// Whether `uri` sends the code back to this machine (RFC 8252 §7.3): read as a browser
/// reads it (the WHATWG URL parser), plain `http`, no user info (`http://localhost:@evil/`
/// is a user name and the host `evil`), the host exactly `127.0.0.1`, `[::1]` or `localhost`,
/// no fragment (RFC 6749 §3.1.2).
fn loopback(uri: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(uri) else {
        return false;
    };
    // The parser writes addresses canonically (`127.1` is `127.0.0.1`, `[0::1]` is `[::1]`).
    let host = matches!(url.host_str(), Some("127.0.0.1" | "[::1]" | "localhost"));
    host && url.scheme() == "http"
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The sign-in form, carrying the request's parameters along; with `prompt=none`, the
/// browser's session answered at once instead.
async fn authorize_form(
    State(o): State<Oidc>,
    headers: HeaderMap,
    Query(req): Query<AuthorizeRequest>,
) -> Response {
    if let Some((_, why)) = req.problem() {
        return (StatusCode::BAD_REQUEST, why).into_response();
    }
    if req.prompt.as_deref() == Some("none") {
        return match browser_session(&o, &headers) {
            Some(session) => issue_code(&o, &req, session),
            None => back_to_client(&req, "error=login_required"),
        };
    }
    let hidden = [
        ("response_type", Some(req.response_type.as_str())),
        ("client_id", Some(req.client_id.as_str())),
        ("redirect_uri", Some(req.redirect_uri.as_str())),
        ("state", req.state.as_deref()),
        ("code_challenge", req.code_challenge.as_deref()),
        (
            "code_challenge_method",
            req.code_challenge_method.as_deref(),
        ),
        ("scope", req.scope.as_deref()),
        ("nonce", req.nonce.as_deref()),
    ]
    .iter()
    .filter_map(|(k, v)| {
        v.map(|v| format!(r#"<input type="hidden" name="{k}" value="{}">"#, escape(v)))
    })
    .collect::<String>();
    Html(format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head>
<body><main><h1>Sign in (local issuer)</h1>
<form method="post"><label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required>{hidden}
<button type="submit">Sign in</button></form></main></body></html>"#
    ))
    .into_response()
}

/// The form's answer: a code for the address, back to the client's redirect URI, and the
/// browser's session cookie for later silent sign-ins.
async fn authorize(State(o): State<Oidc>, Form(req): Form<AuthorizeRequest>) -> Response {
    if let Some((_, why)) = req.problem() {
        return (StatusCode::BAD_REQUEST, why).into_response();
    }
    let email = req.email.as_deref().map(str::trim).unwrap_or_default();
    if !email.contains('@') || email.len() > 254 {
        return (StatusCode::BAD_REQUEST, "email: an address").into_response();
    }
    let session = Session {
        subject: subject_of(email),
        client_id: req.client_id.clone(),
        auth_time: now(),
        origin_jti: random_id(),
    };
    let cookie = random_id();
    if let Ok(mut m) = o.memory.lock() {
        let until = now() + BROWSER_SESSION_TTL;
        m.browsers.insert(cookie.clone(), (session.clone(), until));
    }
    let mut res = issue_code(&o, &req, session);
    let set = format!(
        "{SESSION_COOKIE}={cookie}; Path=/; Max-Age={BROWSER_SESSION_TTL}; HttpOnly; SameSite=Lax"
    );
    if let Ok(v) = header::HeaderValue::from_str(&set) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res
}

/// A single-use code for `session`, sent back to the client's redirect URI.
fn issue_code(o: &Oidc, req: &AuthorizeRequest, session: Session) -> Response {
    let code = random_id();
    let pending = PendingCode {
        session,
        redirect_uri: req.redirect_uri.clone(),
        challenge: req.code_challenge.clone().unwrap_or_default(),
        expires: now() + CODE_TTL,
    };
    if let Ok(mut m) = o.memory.lock() {
        m.codes.insert(code.clone(), pending);
    }
    back_to_client(req, &format!("code={code}"))
}

/// A redirect to the client's (checked) redirect URI with `answer` and the request's state.
fn back_to_client(req: &AuthorizeRequest, answer: &str) -> Response {
    let sep = if req.redirect_uri.contains('?') {
        '&'
    } else {
        '?'
    };
    let state = req
        .state
        .as_deref()
        .map(|s| format!("&state={}", urlencode(s)))
        .unwrap_or_default();
    Redirect::to(&format!("{}{sep}{answer}{state}", req.redirect_uri)).into_response()
}

/// The browser's live session at the issuer, from its cookie.
fn browser_session(o: &Oidc, headers: &HeaderMap) -> Option<Session> {
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            c.trim()
                .strip_prefix(&format!("{SESSION_COOKIE}="))
                .map(str::to_owned)
        })?;
    let memory = o.memory.lock().ok()?;
    let (session, until) = memory.browsers.get(&cookie)?;
    // A new token family (its own `origin_jti`), as each sign-in is.
    (*until >= now()).then(|| Session {
        origin_jti: random_id(),
        ..session.clone()
    })
}

/// An address's user: one `sub` per address (lower-cased), in Cognito's UUID form, verified
/// (the local issuer stands in for Cognito's confirmation code).
fn subject_of(email: &str) -> Subject {
    let email = email.to_lowercase();
    let digest = Sha256::digest(email.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    Subject {
        sub: uuid_form(&bytes),
        email,
        email_verified: true,
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[derive(Debug, Deserialize)]
struct TokenRequest {
    grant_type: String,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    redirect_uri: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    code_verifier: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
}

/// An OAuth error answer, as Cognito's token endpoint gives it.
fn oauth_error(error: &str) -> Response {
    cors((StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response())
}

async fn token(State(o): State<Oidc>, Form(req): Form<TokenRequest>) -> Response {
    let session = match req.grant_type.as_str() {
        "authorization_code" => redeem_code(&o, &req),
        "refresh_token" => refreshed(&o, &req),
        _ => Err("unsupported_grant_type"),
    };
    let (session, with_refresh) = match session {
        Ok(s) => s,
        Err(e) => return oauth_error(e),
    };
    let times = Times {
        auth_time: session.auth_time,
        origin_jti: session.origin_jti.clone(),
        ..Times::new(TOKEN_TTL, None)
    };
    let tokens = o
        .issuer
        .id_token(&session.subject, &session.client_id, &times)
        .and_then(|id| Ok((id, o.issuer.access_token_for(&session.subject, &times)?)));
    let (id_token, access_token) = match tokens {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "dev_token_failed");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let mut body = json!({
        "id_token": id_token, "access_token": access_token,
        "token_type": "Bearer", "expires_in": TOKEN_TTL,
    });
    if with_refresh {
        let refresh = format!("{}{}", random_id(), random_id());
        if let Ok(mut m) = o.memory.lock() {
            m.refresh.insert(refresh.clone(), session);
        }
        body["refresh_token"] = refresh.into();
    }
    cors(Json(body).into_response())
}

/// The code's session, once: right client, same redirect URI, and the PKCE verifier whose
/// S256 is the challenge. A new refresh token comes with it.
fn redeem_code(o: &Oidc, req: &TokenRequest) -> Result<(Session, bool), &'static str> {
    let code = req.code.as_deref().ok_or("invalid_request")?;
    let pending = o
        .memory
        .lock()
        .map_err(|_| "server_error")?
        .codes
        .remove(code)
        .ok_or("invalid_grant")?;
    let verifier = req.code_verifier.as_deref().unwrap_or_default();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let valid = pending.expires >= now()
        && req.client_id.as_deref() == Some(pending.session.client_id.as_str())
        && req.redirect_uri.as_deref() == Some(pending.redirect_uri.as_str())
        && challenge == pending.challenge;
    if valid {
        Ok((pending.session, true))
    } else {
        Err("invalid_grant")
    }
}

/// The refresh token's session; Cognito gives no new refresh token on refresh.
fn refreshed(o: &Oidc, req: &TokenRequest) -> Result<(Session, bool), &'static str> {
    let token = req.refresh_token.as_deref().ok_or("invalid_request")?;
    let memory = o.memory.lock().map_err(|_| "server_error")?;
    let session = memory.refresh.get(token).ok_or("invalid_grant")?;
    if req.client_id.as_deref() != Some(session.client_id.as_str()) {
        return Err("invalid_grant");
    }
    Ok((session.clone(), false))
}
