//! Our side of the peer comparison (`cargo xtask bench-cloud`, issue 18 item 5):
//! `atelier-bench --peer-ours OUT.json [--samples N] [--counted N]` measures the paid submit
//! the way `tools/bench/cloud/peer_bench.py` measures the Powertools peer, and writes JSON:
//!
//! - calls per submit (fresh key) and per replay (same key, same body), on the wire proxy;
//! - latency p50/p95 of fresh-key submits, the API router in-process (no proxy);
//! - the 64-same-key storm and 200 different-key submits against a balance for 37, with real
//!   concurrency, as `tests/tests/submit.rs` does them;
//! - a failure after the commit: every SQS `SendMessage` refused (HTTP 500 on the wire, the
//!   SDK's retries included), then the client's retry with the same key.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use atelier_shared::adapters::aws::Clients;
use atelier_shared::config::Config;
use atelier_shared::domain::UserId;
use atelier_shared::services::App;
use atelier_shared::store::schema::LedgerItem;
use atelier_tests::Harness;
use atelier_wire_proxy::{Counts, FaultKind, FaultPlan, Proxy};
use aws_config::BehaviorVersion;
use serde_json::{Value, json};

/// `--peer-ours OUT.json` among the arguments: this mode, writing to OUT.json.
pub fn requested() -> Option<PathBuf> {
    let argv: Vec<String> = std::env::args().collect();
    argv.iter()
        .position(|a| a == "--peer-ours")
        .and_then(|i| argv.get(i + 1))
        .map(PathBuf::from)
}

fn flag(name: &str, default: usize) -> usize {
    let argv: Vec<String> = std::env::args().collect();
    argv.iter()
        .position(|a| a == name)
        .and_then(|i| argv.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub async fn run(out: PathBuf) -> Result<()> {
    let mut config = Config::from_env().context("run through `cargo xtask bench-cloud`")?;
    // As the race test: the per-user in-flight cap must not be what refuses the 163.
    config.limits.max_in_flight = 1000;
    let upstream = std::env::var("AWS_ENDPOINT_URL").context("AWS_ENDPOINT_URL")?;
    let proxy = Proxy::start(&upstream, None).await?;
    let direct_clients = Clients::from_env().await?;
    atelier_shared::store::provision::ensure(&direct_clients, &config.resources)
        .await
        .map_err(|e| anyhow::anyhow!("provisioning: {e:?}"))?;
    let counted_sdk = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(proxy.url())
        .load()
        .await;
    let counted_clients = Clients::new(&counted_sdk);
    let counted = Harness {
        app: App::new(config.clone(), &counted_clients),
        clients: counted_clients,
    };
    let direct = Harness {
        app: App::new(config, &direct_clients),
        clients: direct_clients,
    };
    let n = flag("--counted", 10);
    let (submit, replay) = counts(&counted, &proxy, n).await?;
    let (p50, p95) = latency(&direct, flag("--samples", 40)).await?;
    let result = json!({
        "n": n,
        "submit": submit,
        "replay": replay,
        "samples": flag("--samples", 40),
        "p50": p50,
        "p95": p95,
        "storm": storm(&direct).await?,
        "race": race(&direct).await?,
        "failure_after_commit": failure_after_commit(&counted, &proxy).await?,
    });
    std::fs::write(&out, serde_json::to_string_pretty(&result)?)
        .with_context(|| format!("writing {}", out.display()))
}

async fn user_with_photo(h: &Harness) -> (UserId, Value) {
    let user = h.user();
    let _ = h.balance(&user).await;
    let asset = h.upload(&user, "original", Harness::png(8, 8)).await;
    let body = json!({ "style": "embroidery", "target": "pet", "original_asset_id": asset });
    (user, body)
}

async fn counts(h: &Harness, proxy: &Proxy, n: usize) -> Result<(Counts, Counts)> {
    let mut users = Vec::new();
    for _ in 0..n {
        users.push(user_with_photo(h).await);
    }
    let before = proxy.counts();
    for (user, body) in &users {
        let r = h.submit(user, Some("k"), body).await;
        anyhow::ensure!(r.status == http::StatusCode::ACCEPTED, "submit: {r:?}");
    }
    let submit = proxy.counts().since(&before);
    let before = proxy.counts();
    for (user, body) in &users {
        let r = h.submit(user, Some("k"), body).await;
        anyhow::ensure!(r.status == http::StatusCode::OK, "replay: {r:?}");
    }
    Ok((submit, proxy.counts().since(&before)))
}

async fn latency(h: &Harness, n: usize) -> Result<(f64, f64)> {
    let mut took = Vec::new();
    for i in 0..n + 3 {
        let (user, body) = user_with_photo(h).await;
        let started = Instant::now();
        let r = h.submit(&user, Some("k"), &body).await;
        anyhow::ensure!(r.status == http::StatusCode::ACCEPTED, "submit: {r:?}");
        // The first few pay the clients' connection setup, as in the peer's driver.
        if i >= 3 {
            took.push(started.elapsed());
        }
    }
    took.sort();
    let at = |p: f64| {
        let i = ((took.len().max(1) - 1) as f64 * p).round() as usize;
        took.get(i).copied().unwrap_or(Duration::ZERO).as_secs_f64() * 1000.0
    };
    Ok((at(0.5), at(0.95)))
}

fn debits(rows: &[LedgerItem]) -> usize {
    rows.iter()
        .filter(|r| r.kind == atelier_shared::domain::LedgerKind::Debit)
        .count()
}

fn tally(statuses: impl IntoIterator<Item = u16>) -> Value {
    let mut out = serde_json::Map::new();
    for s in statuses {
        let n = out.get(&s.to_string()).and_then(Value::as_u64).unwrap_or(0);
        out.insert(s.to_string(), json!(n + 1));
    }
    Value::Object(out)
}

async fn storm(h: &Harness) -> Result<Value> {
    let (user, body) = user_with_photo(h).await;
    let start = h.balance(&user).await;
    let replies = futures::future::join_all((0..64).map(|_| {
        let (h, user, body) = (h.clone(), user.clone(), body.clone());
        tokio::spawn(async move { h.submit(&user, Some("one-key"), &body).await.status })
    }))
    .await;
    let statuses = replies.into_iter().map(|r| r.map_or(599, |s| s.as_u16()));
    Ok(json!({
        "outcomes": tally(statuses),
        "charges": debits(&h.ledger(&user).await),
        "balance": h.balance(&user).await,
        "start": start,
    }))
}

async fn race(h: &Harness) -> Result<Value> {
    let (user, body) = user_with_photo(h).await;
    let price = h.quote(&user, &body).await.body["credits"]
        .as_i64()
        .context("the quote's price")?;
    h.fund_to(&user, 37 * price).await;
    let replies = futures::future::join_all((0..200).map(|i| {
        let (h, user, body) = (h.clone(), user.clone(), body.clone());
        tokio::spawn(async move { h.submit(&user, Some(&format!("k-{i}")), &body).await.status })
    }))
    .await;
    let statuses = replies.into_iter().map(|r| r.map_or(599, |s| s.as_u16()));
    Ok(json!({
        "outcomes": tally(statuses),
        "ledger_rows": debits(&h.ledger(&user).await),
        "balance": h.balance(&user).await,
        "start": 37 * price,
    }))
}

async fn failure_after_commit(h: &Harness, proxy: &Proxy) -> Result<Value> {
    let (user, body) = user_with_photo(h).await;
    let start = h.balance(&user).await;
    proxy.set_plan(Some(
        FaultPlan::new(1)
            .only(["SendMessage"])
            .rate(FaultKind::InternalError, 1.0),
    ));
    let first = h.submit(&user, Some("retry-key"), &body).await;
    proxy.set_plan(None);
    let retry = h.submit(&user, Some("retry-key"), &body).await;
    Ok(json!({
        "first": first.status.as_u16(),
        "retry": retry.status.as_u16(),
        "charges": debits(&h.ledger(&user).await),
        "balance": h.balance(&user).await,
        "start": start,
    }))
}
