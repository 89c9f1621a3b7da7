//! `buy`: a credit pack through a Checkout Session (paid at once on the stand-in Stripe of a
//! local run).

use std::time::{Duration, Instant};

use anyhow::Context;
use reqwest::Method;
use serde::Deserialize;

use crate::client::Hook;

use super::auth::open_in_browser;
use super::ctx::Ctx;
use super::wire::Account;

#[derive(Debug, Deserialize)]
struct Checkout {
    id: String,
    url: String,
}

/// A checkout page on this machine is the stand-in Stripe's (a local run): real Stripe's
/// pages are on its own https host.
fn stand_in_checkout(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| {
        u.scheme() == "http"
            && matches!(u.host_str(), Some("127.0.0.1" | "localhost"))
            && u.path().starts_with("/checkout/")
    })
}

/// Buys a pack: a Checkout Session whose URL is printed (open it to pay). On a local run the
/// session is the stand-in Stripe's: it is paid there and the credits are awaited.
pub async fn buy(ctx: &Ctx, pack: &str, web: bool, timeout: u64) -> anyhow::Result<()> {
    let before: Account = ctx.api.get("/v1/account").await?;
    // A fresh key per purchase; a retry inside `send` reuses it, so one command is one session.
    let key = uuid::Uuid::new_v4().to_string();
    let body = serde_json::json!({ "pack": pack });
    let reply = ctx
        .api
        .send(
            "checkout",
            || {
                ctx.api
                    .request(Method::POST, "/v1/checkout")
                    .header("idempotency-key", &key)
                    .json(&body)
            },
            Hook::None,
        )
        .await?;
    if !reply.status.is_success() {
        return Err(reply.into_problem().into());
    }
    let checkout: Checkout = ctx.decode(reply.json("checkout")?, "checkout")?;
    ctx.say(format!("Checkout {}: pay at {}", checkout.id, checkout.url));
    if web {
        open_in_browser(&checkout.url);
    }
    if !stand_in_checkout(&checkout.url) {
        ctx.say("Credits arrive when Stripe confirms the payment; see `atelier balance`.");
        return Ok(());
    }
    let paid = ctx
        .api
        .external(Method::POST, &format!("{}/pay", checkout.url))
        .send()
        .await
        .context("paying on the stand-in Stripe")?;
    anyhow::ensure!(
        paid.status().is_success(),
        "the stand-in Stripe refused the payment: {}",
        paid.status()
    );
    let deadline = Instant::now() + Duration::from_secs(timeout);
    loop {
        let now: Account = ctx.api.get("/v1/account").await?;
        if now.balance > before.balance {
            ctx.say(format!(
                "Paid on the stand-in Stripe: {} credits now (was {})",
                now.balance, before.balance
            ));
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "paid, but no credits arrived within {timeout}s; check `atelier ledger` later"
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
