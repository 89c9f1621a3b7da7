//! Calls on the wire per submit, upload, replay, claim, duplicate delivery and job, counted by
//! the wire proxy (the table's first rows).

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use atelier_model_server::samples;
use atelier_shared::clock;
use atelier_shared::domain::UserId;
use atelier_shared::services::process::Outcome;
use atelier_tests::{Harness, StandIn};
use atelier_wire_proxy::{Counts, Proxy};
use serde_json::{Value, json};

use crate::fixture::{job_id, new_user_with_photo, pet};
use crate::table::{Row, describe, row};

async fn snapshot_diff<F, Fut, T>(proxy: &Proxy, f: F) -> Result<(T, Counts)>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let before = proxy.counts();
    let out = f().await?;
    Ok((out, proxy.counts().since(&before)))
}

/// What the call-count rounds measured, summed over the rounds.
#[derive(Default)]
struct CallTally {
    submit: Counts,
    replay: Counts,
    job: Counts,
    duplicate: Counts,
    claim: Counts,
    lifecycle: Counts,
    delivered: usize,
    consumer_time: Duration,
}

/// A job of a new user with a photo, submitted under `key`; the reply.
async fn submit_new_job(h: &Harness, key: &str) -> (UserId, Value, atelier_tests::Reply) {
    let (user, asset) = new_user_with_photo(h).await;
    let mut body = pet();
    body["original_asset_id"] = json!(asset);
    let r = h.submit(&user, Some(key), &body).await;
    (user, body, r)
}

pub async fn call_counts(
    h: &Harness,
    proxy: &Proxy,
    model: &StandIn,
    n: usize,
) -> Result<Vec<Row>> {
    let processor = h.processor(model);
    // A warm-up job first: the first job of a UTC day also creates the day's budget item,
    // which is not a per-job cost.
    let (_, _, r) = submit_new_job(h, "warm").await;
    let _ = processor.process(&job_id(&r.str("id"))?).await;
    let mut tally = CallTally::default();
    for i in 0..n {
        call_round(h, proxy, &processor, &format!("bench-{i}"), &mut tally).await?;
        tally.claim.merge(&claim_alone(h, proxy).await?);
    }
    let (upload_new, upload) = upload_counts(h, proxy).await?;
    Ok(call_count_rows(&tally, &upload, &upload_new, n))
}

/// One job's submit, its replay, its processing and a duplicate delivery, each counted.
async fn call_round(
    h: &Harness,
    proxy: &Proxy,
    processor: &atelier_shared::services::process::Processor,
    key: &str,
    tally: &mut CallTally,
) -> Result<()> {
    let (user, asset) = new_user_with_photo(h).await;
    let mut body = pet();
    body["original_asset_id"] = json!(asset);
    let (id, c) = snapshot_diff(proxy, || async {
        let r = h.submit(&user, Some(key), &body).await;
        if r.status != http::StatusCode::ACCEPTED {
            bail!("submit: {r:?}");
        }
        Ok(r.str("id"))
    })
    .await?;
    tally.submit.merge(&c);
    tally.lifecycle.merge(&c);
    let (_, c) = snapshot_diff(proxy, || async {
        let r = h.submit(&user, Some(key), &body).await;
        if r.header("idempotent-replayed") != Some("true") {
            bail!("replay: {r:?}");
        }
        Ok(())
    })
    .await?;
    tally.replay.merge(&c);
    let id = job_id(&id)?;
    let t = Instant::now();
    let (outcome, c) = snapshot_diff(proxy, || async { Ok(processor.process(&id).await) }).await?;
    tally.consumer_time += t.elapsed();
    if matches!(outcome, Ok(Outcome::Delivered { .. })) {
        tally.delivered += 1;
    }
    tally.job.merge(&c);
    tally.lifecycle.merge(&c);
    // The same message delivered again: the claim is lost, nothing else happens.
    let (_, c) = snapshot_diff(proxy, || async { Ok(processor.process(&id).await) }).await?;
    tally.duplicate.merge(&c);
    Ok(())
}

/// The claim alone, on a job of its own.
async fn claim_alone(h: &Harness, proxy: &Proxy) -> Result<Counts> {
    let (_, _, r) = submit_new_job(h, "claim").await;
    let id = job_id(&r.str("id"))?;
    let (_, c) = snapshot_diff(proxy, || async {
        h.app
            .store
            .claim(&id, &clock::format(clock::now()))
            .await
            .map_err(|e| anyhow::anyhow!("claim: {e:?}"))
    })
    .await?;
    Ok(c)
}

/// The upload path of a job (slot + PUT): a new account's first, then another.
async fn upload_counts(h: &Harness, proxy: &Proxy) -> Result<(Counts, Counts)> {
    let user = h.user();
    let mut counted = Vec::new();
    for _ in 0..2 {
        let (_, c) = snapshot_diff(proxy, || async {
            let _ = h.upload(&user, "original", samples::single_pet()).await;
            Ok(())
        })
        .await?;
        counted.push(c);
    }
    let upload = counted.pop().unwrap_or_default();
    Ok((counted.pop().unwrap_or_default(), upload))
}

fn call_count_rows(t: &CallTally, upload: &Counts, upload_new: &Counts, n: usize) -> Vec<Row> {
    let how = format!("wire proxy, mean of {n}");
    vec![
        row("calls per submit", describe(&t.submit, n), how.clone()),
        row(
            "calls per upload (slot + PUT)",
            describe(upload, 1),
            "wire proxy; a new account's first request also creates the account",
        ),
        row(
            "calls per upload, a new account's first",
            describe(upload_new, 1),
            "wire proxy",
        ),
        row(
            "calls per replay (same key, same body)",
            describe(&t.replay, n),
            how.clone(),
        ),
        row("calls per claim", describe(&t.claim, n), how.clone()),
        row(
            "calls per duplicate delivery (claim lost)",
            describe(&t.duplicate, n),
            how.clone(),
        ),
        row(
            format!(
                "calls per successful job, consumer ({}/{n} delivered)",
                t.delivered
            ),
            describe(&t.job, n),
            format!(
                "{how}; claim → deliver; {:.2} s per job (dev build, `atelier-shared` optimised)",
                t.consumer_time.as_secs_f64() / n.max(1) as f64
            ),
        ),
        row(
            "calls per successful job, submit + consumer",
            describe(&t.lifecycle, n),
            format!("{how}; the upload's calls come on top"),
        ),
    ]
}
