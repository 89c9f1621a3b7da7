//! `login` and `logout`: getting a token (given, from the dev issuer, or by OpenID Connect in a
//! browser) and keeping or forgetting it.

use std::io::IsTerminal;

use anyhow::Context;
use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use crate::client::Hook;
use crate::config::Saved;
use crate::login::Login;

use super::ctx::Ctx;

/// How `login` gets its token.
#[derive(Debug, Clone, Copy)]
pub enum LoginWith<'a> {
    /// A token the user already has.
    Token(&'a str),
    /// A dev token for this user from the local issuer (`POST {issuer}/token`).
    DevUser(&'a str),
    /// OpenID Connect in a browser: code + PKCE with a loopback redirect.
    Oidc {
        client_id: &'a str,
        /// Open the address in the user's browser (only on a terminal: a script or a test
        /// reads the printed address instead).
        open_browser: bool,
    },
}

/// A dev ID token from the local issuer.
async fn dev_login(ctx: &Ctx, user: &str, issuer: &str) -> anyhow::Result<Login> {
    let url = format!("{issuer}/token");
    // Twelve hours: a working session; the issuer caps it anyway.
    let body = json!({ "user": user, "ttl": 43_200 });
    let reply = ctx
        .api
        .send(
            "the dev issuer",
            || ctx.api.external(Method::POST, &url).json(&body),
            Hook::None,
        )
        .await?;
    #[derive(Deserialize)]
    struct Issued {
        token: String,
        expires_in: u64,
    }
    let issued: Issued = reply.json(&url).with_context(|| {
        format!("getting a dev token from {url} (only a local run serves the dev issuer; elsewhere `atelier login` signs in in a browser)")
    })?;
    Ok(Login {
        user: crate::config::token_subject(&issued.token).or(Some(user.to_owned())),
        token: issued.token,
        expires_at: Some(crate::config::now_secs() + issued.expires_in),
        refresh: None,
    })
}

pub async fn login(ctx: &Ctx, with: LoginWith<'_>, issuer: Option<&str>) -> anyhow::Result<()> {
    let api = ctx.api.base().to_owned();
    let issuer = issuer
        .map(|i| i.trim_end_matches('/').to_owned())
        .unwrap_or_else(|| format!("{api}/dev-issuer"));
    if !matches!(with, LoginWith::Token(_)) {
        crate::secure::require_secure("the issuer", &issuer)?;
    }
    let login = match with {
        LoginWith::Token(token) => Login {
            token: token.trim().to_owned(),
            user: crate::config::token_subject(token),
            expires_at: None,
            refresh: None,
        },
        LoginWith::DevUser(user) => dev_login(ctx, user, &issuer).await?,
        LoginWith::Oidc {
            client_id,
            open_browser,
        } => {
            let http = reqwest::Client::new();
            let paste = !open_browser;
            let (tokens, refresh) = crate::oidc::sign_in(&http, &issuer, client_id, paste, |url| {
                eprintln!("Open this address in a browser to sign in:\n  {url}");
                if open_browser {
                    open_in_browser(url);
                } else {
                    eprintln!(
                        "If that browser is on another machine, paste here the address it ends on\n(its page will not load; the address holds the sign-in's answer):"
                    );
                }
            })
            .await?;
            Login {
                user: crate::config::token_subject(&tokens.id_token),
                token: tokens.id_token,
                expires_at: Some(crate::config::now_secs() + tokens.expires_in),
                refresh: Some(refresh).filter(|r| !r.refresh_token.is_empty()),
            }
        }
    };
    let mut saved = Saved::load(&ctx.home)?;
    let who = login
        .user
        .clone()
        .unwrap_or_else(|| "(unknown user)".into());
    saved.api = Some(api.clone());
    let choice = crate::vault::Choice::from_env()?;
    let kept = match saved.store(&ctx.home, &api, login, choice)? {
        crate::vault::Place::Keychain => "the token is in the OS keychain".to_owned(),
        crate::vault::Place::File => format!("saved in {}", ctx.home.join("config.json").display()),
    };
    ctx.say(format!("Logged in to {api} as {who} ({kept})"));
    Ok(())
}

/// `logout`: forgets the saved login for the API (other APIs' logins stay).
pub fn logout(ctx: &Ctx) -> anyhow::Result<()> {
    let mut saved = Saved::load(&ctx.home)?;
    let api = ctx.api.base().to_owned();
    if !saved.forget(&ctx.home, &api)? {
        ctx.say(format!("Not logged in to {api}"));
        return Ok(());
    }
    ctx.say(format!("Logged out of {api}"));
    Ok(())
}

/// Opens `url` in the user's browser when a person is at the terminal; a script, a test or a
/// remote shell gets the printed address only.
pub fn open_in_browser(url: &str) {
    if std::io::stderr().is_terminal() && webbrowser::open(url).is_err() {
        eprintln!("(no browser could be opened here: open the address yourself)");
    }
}
