//! Reading the account and the catalogue: `styles`, `packs`, `balance`, `ledger`.

use serde::Deserialize;

use super::ctx::Ctx;
use super::wire::{Account, LedgerRow, Page, Style};

pub async fn styles(ctx: &Ctx) -> anyhow::Result<()> {
    let list: Page<Style> = ctx.fetch("/v1/styles").await?;
    for s in list.items {
        ctx.say(format!("{:<18} {:<18} {}", s.id, s.name, s.blurb));
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
struct Pack {
    id: String,
    credits: i64,
    amount: i64,
    currency: String,
}

pub async fn packs(ctx: &Ctx) -> anyhow::Result<()> {
    let list: Page<Pack> = ctx.fetch("/v1/packs").await?;
    for p in list.items {
        ctx.say(format!(
            "{:<12} {:>6} credits  {}.{:02} {}",
            p.id,
            p.credits,
            p.amount / 100,
            p.amount % 100,
            p.currency.to_uppercase()
        ));
    }
    Ok(())
}

pub async fn balance(ctx: &Ctx) -> anyhow::Result<()> {
    let a: Account = ctx.fetch("/v1/account").await?;
    ctx.say(format!(
        "{}: {} credits ({} of at most {} edits in flight)",
        a.user_id, a.balance, a.in_flight, a.max_in_flight
    ));
    Ok(())
}

pub async fn ledger(ctx: &Ctx, limit: u16) -> anyhow::Result<()> {
    let page: Page<LedgerRow> = ctx
        .fetch(&format!("/v1/account/ledger?limit={limit}"))
        .await?;
    for r in &page.items {
        ctx.say(format!(
            "{}  {:>+4}  {:<6}  {}{}",
            r.created_at,
            r.amount,
            r.kind,
            r.reference,
            r.reason
                .as_deref()
                .map(|x| format!("  ({x})"))
                .unwrap_or_default()
        ));
    }
    if page.items.is_empty() {
        ctx.say("(no ledger rows)");
    }
    if page.next_cursor.is_some() {
        ctx.say(format!(
            "(more rows: raise --limit, at most 100; showing {})",
            page.items.len()
        ));
    }
    Ok(())
}
