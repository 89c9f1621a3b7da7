//! `cargo xtask bench`: one markdown table of figures measured in one run on the local stack
//! (xtask starts a private ministack and sets the local environment).
//!
//! - Calls per submit, replay, claim and job are counted on the wire by the wire proxy
//!   (`tools/wire-proxy`) placed between the code and the emulator: the API router runs
//!   in-process (as the tests drive it) and the consumer's `Processor` against the stand-in
//!   model server.
//! - Init time: each packaged Lambda binary is started against a tiny fake Lambda Runtime API;
//!   the time from spawn to its first `GET …/invocation/next` is the cold-start path (config,
//!   clients, the consumer's secret read).
//! - Submit latency against its own round trips made bare, same emulator, same run (the S3
//!   HeadObject of the asset, the transaction of the same items, the SQS send of the same body);
//!   jobs per second with an instant stand-in model and K consumers fed from the queue;
//!   zip sizes; peak memory of the consumer's image work on a 12 MP photo (the
//!   `imaging_12mp` example).
//! - Against the machine's limits (issue 33, `limits.rs`): the 12 MP path against its codec
//!   floor, each init against a bare `lambda_runtime`, zips against 4 MB per architecture,
//!   Lambda's cost of the image work per million jobs.
//!
//! Timings are printed, never asserted.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};
use atelier_model_server::samples;
use atelier_shared::adapters::assets::{Assets, Copied};
use atelier_shared::adapters::aws::Clients;
use atelier_shared::clock;
use atelier_shared::config::Config;
use atelier_shared::domain::{AssetId, AssetKind, IdempotencyKey, JobId, Operation, UserId};
use atelier_shared::services::process::Outcome;
use atelier_shared::services::{App, budget};
use atelier_shared::store::provision;
use atelier_shared::store::schema::{attr, user_day_key};
use atelier_tests::{Harness, StandIn};
use atelier_wire_proxy::{Counts, Proxy, Service};
use aws_config::BehaviorVersion;
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Put, TransactWriteItem, Update};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod limits;
mod peer;

const FUNCTIONS: [&str; 3] = ["atelier-api", "atelier-consumer", "atelier-sweeper"];

struct Args {
    /// Jobs for the throughput run.
    jobs: usize,
    /// Concurrent consumers in the throughput run.
    workers: usize,
    /// Submits (and bare transactions) for the latency figures.
    samples: usize,
    /// Jobs whose calls are counted.
    counted: usize,
    /// Cold starts per function.
    init_runs: usize,
    /// Interleaved runs of the 12 MP path and its codec floor.
    image_runs: usize,
}

fn args() -> Result<Args> {
    let mut a = Args {
        jobs: 100,
        workers: 4,
        samples: 60,
        counted: 10,
        init_runs: 5,
        image_runs: 3,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let value: usize = it
            .next()
            .with_context(|| format!("{flag} needs a value"))?
            .parse()
            .with_context(|| format!("{flag} takes a number"))?;
        match flag.as_str() {
            "--jobs" => a.jobs = value,
            "--workers" => a.workers = value,
            "--samples" => a.samples = value,
            "--counted" => a.counted = value,
            "--init-runs" => a.init_runs = value,
            "--image-runs" => a.image_runs = value,
            _ => bail!(
                "usage: atelier-bench [--jobs N] [--workers K] [--samples N] [--counted N] [--init-runs N] [--image-runs N]"
            ),
        }
    }
    Ok(a)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
}

/// Cargo's target directory (`CARGO_TARGET_DIR` when set): where built binaries are. The
/// zips stay under the project's `target/lambda-dist` whatever it is (xtask/src/package.rs).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// One table row.
struct Row {
    what: String,
    figure: String,
    how: String,
}

fn row(what: impl Into<String>, figure: impl Into<String>, how: impl Into<String>) -> Row {
    Row {
        what: what.into(),
        figure: figure.into(),
        how: how.into(),
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    if let Some(out) = peer::requested() {
        return peer::run(out).await;
    }
    let args = args()?;
    let config = Config::from_env().context("run through `cargo xtask bench`")?;
    let upstream = std::env::var("AWS_ENDPOINT_URL").context("AWS_ENDPOINT_URL")?;
    let proxy = Proxy::start(&upstream, None).await?;
    let direct_clients = Clients::from_env().await;
    provision::ensure(&direct_clients, &config.resources)
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
        app: App::new(config.clone(), &direct_clients),
        clients: direct_clients,
    };
    let model = StandIn::start().await;
    let mut rows = Vec::new();

    eprintln!("bench: counting calls on the wire ({} jobs)", args.counted);
    rows.extend(call_counts(&counted, &proxy, &model, args.counted).await?);
    eprintln!("bench: submit latency ({} samples)", args.samples);
    rows.extend(latency(&direct, args.samples).await?);
    eprintln!(
        "bench: throughput ({} jobs, {} consumers)",
        args.jobs, args.workers
    );
    rows.extend(throughput(&direct, &model, args.jobs, args.workers).await?);
    eprintln!("bench: cold starts ({} per function)", args.init_runs);
    rows.extend(init_times(&direct, &proxy, &model, args.init_runs).await?);
    rows.extend(zip_sizes());
    eprintln!("bench: the 12 MP image path against its codec floor, peak memory");
    rows.extend(image_rows(args.image_runs).await);

    println!();
    println!("| what | figure | how |");
    println!("|---|---|---|");
    for r in rows {
        println!("| {} | {} | {} |", r.what, r.figure, r.how);
    }
    Ok(())
}

fn pet() -> Value {
    json!({ "style": "embroidery", "target": "pet" })
}

fn job_id(id: &str) -> Result<JobId> {
    JobId::parse(id).with_context(|| format!("job id {id:?}"))
}

/// Average counts over `n` samples, written `DynamoDB 1 (TransactWriteItems 1) · SQS 1 (…)`.
fn describe(total: &Counts, n: usize) -> String {
    let n = n.max(1) as f64;
    let fmt = |x: f64| {
        if (x - x.round()).abs() < 0.005 {
            format!("{}", x.round() as i64)
        } else {
            format!("{x:.2}")
        }
    };
    let mut parts = Vec::new();
    for (service, label) in [
        (Service::DynamoDb, "DynamoDB"),
        (Service::Sqs, "SQS"),
        (Service::S3, "S3"),
        (Service::SecretsManager, "Secrets Manager"),
    ] {
        let all = total.service(service) as f64 / n;
        if all == 0.0 {
            if service != Service::SecretsManager {
                parts.push(format!("{label} 0"));
            }
            continue;
        }
        let ops: Vec<String> = total
            .iter()
            .filter(|(op, _)| op.service == service)
            .map(|(op, c)| format!("{} {}", op.name, fmt(c as f64 / n)))
            .collect();
        parts.push(format!("{label} {} ({})", fmt(all), ops.join(", ")));
    }
    parts.join(" · ")
}

async fn snapshot_diff<F, Fut, T>(proxy: &Proxy, f: F) -> Result<(T, Counts)>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let before = proxy.counts();
    let out = f().await?;
    Ok((out, proxy.counts().since(&before)))
}

async fn new_user_with_photo(h: &Harness) -> (UserId, String) {
    let user = h.user();
    let _ = h.balance(&user).await;
    let asset = h.upload(&user, "original", samples::single_pet()).await;
    (user, asset)
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

async fn call_counts(h: &Harness, proxy: &Proxy, model: &StandIn, n: usize) -> Result<Vec<Row>> {
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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// The submit's own transaction, rebuilt with fresh keys: the same four items (job put,
/// account update, ledger put, the user's share check) with the same attributes and sizes.
async fn bare_transaction(h: &Harness, user: &UserId, job: &str) -> Result<Vec<TransactWriteItem>> {
    let names = h.app.store.names().clone();
    let ddb = &h.clients.dynamodb;
    let item = ddb
        .get_item()
        .table_name(&names.jobs_table)
        .key("job_id", AttributeValue::S(job.to_owned()))
        .consistent_read(true)
        .send()
        .await?
        .item
        .context("the submitted job")?;
    let ledger = h
        .ledger(user)
        .await
        .into_iter()
        .find(|r| r.job_id.as_ref().map(JobId::as_str) == Some(job))
        .context("the submit's ledger row")?;
    let mut ledger: std::collections::HashMap<String, AttributeValue> =
        serde_dynamo::to_item(&ledger)?;
    let fresh = ulid::Ulid::new().to_string().to_lowercase();
    let mut job_item = item;
    job_item.insert("job_id".into(), AttributeValue::S(format!("bare-{fresh}")));
    ledger.insert("ref".into(), AttributeValue::S(format!("bare:{fresh}")));
    let put_job = Put::builder()
        .table_name(&names.jobs_table)
        .set_item(Some(job_item))
        .condition_expression("attribute_not_exists(job_id)")
        .build()?;
    let update = Update::builder()
        .table_name(&names.accounts_table)
        .key("user_id", AttributeValue::S(user.to_string()))
        .update_expression("SET #c = #c - :z, #f = #f + :z, #r = #r + :one")
        .condition_expression("attribute_exists(#u) AND #c >= :z AND #f < :max")
        .expression_attribute_names("#c", "credits")
        .expression_attribute_names("#f", "in_flight")
        .expression_attribute_names("#r", "rev")
        .expression_attribute_names("#u", "user_id")
        .expression_attribute_values(":z", AttributeValue::N("0".into()))
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .expression_attribute_values(":max", AttributeValue::N("1000".into()))
        .build()?;
    let put_ledger = Put::builder()
        .table_name(&names.ledger_table)
        .set_item(Some(ledger))
        .condition_expression("attribute_not_exists(#ref)")
        .expression_attribute_names("#ref", "ref")
        .build()?;
    let share_check = ConditionCheck::builder()
        .table_name(&names.budget_table)
        .key(
            attr::DAY,
            AttributeValue::S(user_day_key(&budget::day_of(clock::now()), user)),
        )
        .condition_expression(
            "attribute_not_exists(#day) OR (#headroom_micros > :zero AND \
             (attribute_not_exists(#refused_micros) OR #headroom_micros >= #refused_micros))",
        )
        .expression_attribute_names("#day", attr::DAY)
        .expression_attribute_names("#headroom_micros", attr::HEADROOM_MICROS)
        .expression_attribute_names("#refused_micros", attr::REFUSED_MICROS)
        .expression_attribute_values(":zero", AttributeValue::N("0".into()))
        .build()?;
    Ok(vec![
        TransactWriteItem::builder().put(put_job).build(),
        TransactWriteItem::builder().update(update).build(),
        TransactWriteItem::builder().put(put_ledger).build(),
        TransactWriteItem::builder()
            .condition_check(share_check)
            .build(),
    ])
}

/// p50 and p95 of `samples` (sorted here).
fn p50_p95(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    (percentile(samples, 0.5), percentile(samples, 0.95))
}

/// Times one round trip.
async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let out = f.await;
    (out, started.elapsed())
}

/// One sample of the submit's own round trips made bare, in the order the submit makes them:
/// the S3 `HeadObject` of the asset (the submit's existence check, which reads the ETag the
/// job records), the transaction of the same items, the SQS send of the same body. The
/// conditional `CopyObject` into a fresh key is timed beside them: the kept copy, which the
/// consumer makes after its claim, not the submit.
struct Bare {
    copy: Duration,
    head: Duration,
    transaction: Duration,
    send: Duration,
}

async fn bare_round_trips(h: &Harness, user: &UserId, asset: &str, job: &str) -> Result<Bare> {
    let asset = AssetId::parse(asset).with_context(|| format!("asset id {asset:?}"))?;
    let from = Assets::upload_key(user, AssetKind::Original, &asset);
    // A fresh job id derived as the submit derives its own, so the copy's key has its length.
    let key = IdempotencyKey::parse(&format!("bare-{}", ulid::Ulid::new()))
        .context("a fresh idempotency key")?;
    let fresh = JobId::derive(user, Operation::Edit, &key);
    let to = Assets::kept_input_key(user, &fresh, AssetKind::Original);
    let (etag, head) = timed(h.app.assets.etag(&from)).await;
    let Some(etag) = etag? else {
        bail!("bare HeadObject: the asset is missing");
    };
    let items = bare_transaction(h, user, job).await?;
    let (committed, transaction) = timed(
        h.clients
            .dynamodb
            .transact_write_items()
            .set_transact_items(Some(items))
            .send(),
    )
    .await;
    committed.context("bare TransactWriteItems")?;
    // The same body as the submit's (`{"jobId": …}` of the same id length) on the same queue;
    // the throughput phase purges the queue before it starts.
    let (sent, send) = timed(h.app.queue.send_job(&job_id(job)?, None)).await;
    sent.context("bare SendMessage")?;
    let (copied, copy) = timed(h.app.assets.copy_if_match(&from, &to, &etag)).await;
    if copied? != Copied::Done {
        bail!("bare CopyObject: the asset is missing or changed");
    }
    Ok(Bare {
        copy,
        head,
        transaction,
        send,
    })
}

/// The submit samples and, interleaved with them, the bare round trips of its own calls.
#[derive(Default)]
struct LatencySamples {
    submits: Vec<Duration>,
    copies: Vec<Duration>,
    heads: Vec<Duration>,
    transactions: Vec<Duration>,
    sends: Vec<Duration>,
    sums: Vec<Duration>,
}

async fn latency(h: &Harness, n: usize) -> Result<Vec<Row>> {
    let users: Vec<(UserId, String)> = futures::stream::iter(0..n)
        .map(|_| new_user_with_photo(h))
        .buffer_unordered(8)
        .collect()
        .await;
    let mut samples = LatencySamples::default();
    for (i, (user, asset)) in users.iter().enumerate() {
        let mut body = pet();
        body["original_asset_id"] = json!(asset);
        let (r, took) = timed(h.submit(user, Some(&format!("lat-{i}")), &body)).await;
        if r.status != http::StatusCode::ACCEPTED {
            bail!("submit: {r:?}");
        }
        let bare = bare_round_trips(h, user, asset, &r.str("id")).await?;
        // The first of each is a warm-up (connections, lazy statics).
        if i == 0 {
            continue;
        }
        samples.submits.push(took);
        samples.copies.push(bare.copy);
        samples.heads.push(bare.head);
        samples.transactions.push(bare.transaction);
        samples.sends.push(bare.send);
        samples.sums.push(bare.head + bare.transaction + bare.send);
    }
    Ok(latency_rows(samples))
}

fn latency_rows(s: LatencySamples) -> Vec<Row> {
    let LatencySamples {
        mut submits,
        mut copies,
        mut heads,
        mut transactions,
        mut sends,
        mut sums,
    } = s;
    let (s50, s95) = p50_p95(&mut submits);
    let (b50, b95) = p50_p95(&mut transactions);
    let (f50, f95) = p50_p95(&mut sums);
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    let pair = |(a, b): (Duration, Duration)| format!("p50 {} · p95 {}", ms(a), ms(b));
    let bare = |what: &str, p: (Duration, Duration), how: &str| {
        row(
            what,
            pair(p),
            format!("{how}; same emulator, interleaved with the submits"),
        )
    };
    vec![
        row(
            "submit latency, local stack",
            pair((s50, s95)),
            format!(
                "{} submits through the API router in-process (validation, HeadObject of the asset, the transaction, SQS send)",
                submits.len()
            ),
        ),
        bare(
            "bare HeadObject of the asset",
            p50_p95(&mut heads),
            "the submit's own S3 call (its existence check; the ETag the job records)",
        ),
        bare(
            "bare TransactWriteItems of the same 4 items",
            (b50, b95),
            "the submit's own items (job, debit, ledger row, share check) with fresh keys",
        ),
        bare(
            "bare SendMessage of the same body",
            p50_p95(&mut sends),
            "`{\"jobId\": …}` of the same job to the job queue",
        ),
        bare(
            "bare CopyObject of the asset, if-match its ETag",
            p50_p95(&mut copies),
            "not a submit call: the kept copy the consumer makes after its claim, to a fresh key",
        ),
        row(
            "sum of the submit's own bare round trips",
            pair((f50, f95)),
            "HeadObject + transaction + SendMessage, summed per sample: the floor for three sequential calls",
        ),
        row(
            "submit vs sum of its own bare round trips",
            format!(
                "{:.2}× at p50 · {:.2}× at p95",
                ratio(s50, f50),
                ratio(s95, f95)
            ),
            "same run; the rest is validation, pricing, the router and the SDK's own work",
        ),
        row(
            "submit / bare transaction",
            format!(
                "{:.2}× at p50 · {:.2}× at p95",
                ratio(s50, b50),
                ratio(s95, b95)
            ),
            "same run",
        ),
    ]
}

async fn throughput(h: &Harness, model: &StandIn, n: usize, workers: usize) -> Result<Vec<Row>> {
    let queue_url = h.app.config.resources.queue_url.clone();
    // Earlier phases left messages (of finished or never-consumed jobs) in the queue.
    let _ = h
        .clients
        .sqs
        .purge_queue()
        .queue_url(&queue_url)
        .send()
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let users: Vec<(UserId, String)> = futures::stream::iter(0..n)
        .map(|_| new_user_with_photo(h))
        .buffer_unordered(8)
        .collect()
        .await;
    let day = budget::day_of(clock::now());
    let used_before = budget::day(&h.app, &day)
        .await
        .map(|d| d.used_micros.get())
        .unwrap_or(0);
    let processor = Arc::new(h.processor(model));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(std::sync::Mutex::new(HashSet::<String>::new()));
    let started = Instant::now();
    let tasks: Vec<_> = (0..workers.max(1))
        .map(|_| {
            tokio::spawn(consume(
                processor.clone(),
                h.clients.clone(),
                queue_url.clone(),
                stop.clone(),
                done.clone(),
            ))
        })
        .collect();
    let ids: Vec<String> = futures::stream::iter(users.iter().enumerate())
        .map(|(i, (user, asset))| async move {
            let mut body = pet();
            body["original_asset_id"] = json!(asset);
            h.submit(user, Some(&format!("tp-{i}")), &body)
                .await
                .str("id")
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let wanted: HashSet<String> = ids.into_iter().collect();
    wait_for_all(&done, &wanted).await;
    let wall = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let succeeded = succeeded(h, &wanted).await?;
    let used_after = budget::day(&h.app, &day)
        .await
        .map(|d| d.used_micros.get())
        .unwrap_or(used_before);
    let per_job = (used_after - used_before) as f64 / wanted.len().max(1) as f64;
    Ok(vec![
        row(
            "end-to-end jobs per second, local stack",
            format!(
                "{:.1} jobs/s ({} jobs in {:.1} s, {succeeded} succeeded)",
                wanted.len() as f64 / wall.as_secs_f64(),
                wanted.len(),
                wall.as_secs_f64()
            ),
            format!(
                "submit (8 at a time) → SQS → {workers} consumers (receive, handle, delete), instant stand-in model; wall time from the first submit to the last job finished"
            ),
        ),
        row(
            "model spend booked per job (stand-in's usage)",
            format!("${:.4}", per_job / 1_000_000.0),
            "the day's budget `used` before/after ÷ jobs (check + edit + review at the price table)",
        ),
    ])
}

/// Until every one of `wanted` is in `done`, or ten minutes pass.
async fn wait_for_all(done: &std::sync::Mutex<HashSet<String>>, wanted: &HashSet<String>) {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let finished = done
            .lock()
            .map(|d| wanted.iter().filter(|id| d.contains(*id)).count())
            .unwrap_or(0);
        if finished >= wanted.len() || Instant::now() > deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One consumer, as the SQS event source drives it (receive one, handle, delete on
/// success), adding each finished job's id to `done` until `stop`.
async fn consume(
    processor: Arc<atelier_shared::services::process::Processor>,
    clients: Clients,
    url: String,
    stop: Arc<AtomicBool>,
    done: Arc<std::sync::Mutex<HashSet<String>>>,
) {
    let sqs = &clients.sqs;
    while !stop.load(Ordering::Relaxed) {
        let Ok(out) = sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(1)
            .wait_time_seconds(1)
            .send()
            .await
        else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        for m in out.messages.unwrap_or_default() {
            let mut record = SqsMessage::default();
            record.message_id = m.message_id.clone();
            record.receipt_handle = m.receipt_handle.clone();
            record.body = m.body.clone();
            let mut event = SqsEvent::default();
            event.records = vec![record];
            let res = atelier_consumer::handle(&processor, event).await;
            if !res.batch_item_failures.is_empty() {
                continue;
            }
            if let Some(handle) = m.receipt_handle {
                let _ = sqs
                    .delete_message()
                    .queue_url(&url)
                    .receipt_handle(handle)
                    .send()
                    .await;
            }
            let id = m
                .body
                .as_deref()
                .and_then(|b| serde_json::from_str::<Value>(b).ok())
                .and_then(|v| v["jobId"].as_str().map(str::to_owned));
            if let (Some(id), Ok(mut d)) = (id, done.lock()) {
                d.insert(id);
            }
        }
    }
}

/// How many of `ids` succeeded.
async fn succeeded(h: &Harness, ids: &HashSet<String>) -> Result<usize> {
    let mut succeeded = 0;
    for id in ids {
        let job = h.app.store.get_job(&job_id(id)?).await;
        if matches!(job, Ok(Some(ref j)) if format!("{:?}", j.status()).eq_ignore_ascii_case("succeeded"))
        {
            succeeded += 1;
        }
    }
    Ok(succeeded)
}

/// A fake Lambda Runtime API: records when the first `GET …/invocation/next` arrives and
/// never answers it (the function stays ready for its first event).
async fn time_to_first_next(binary: &Path, env: &[(String, String)]) -> Result<Duration> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let started = Instant::now();
    let mut child = tokio::process::Command::new(binary)
        .envs(env.iter().cloned())
        .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let wait = async {
        loop {
            let (mut stream, _) = listener.accept().await?;
            let mut buf = vec![0u8; 4096];
            let n = stream.read(&mut buf).await?;
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            if head.starts_with("GET /2018-06-01/runtime/invocation/next") {
                return Ok::<_, anyhow::Error>(started.elapsed());
            }
            // Anything else (an init error report): acknowledge and keep waiting.
            let _ = stream
                .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    };
    let exited = child.wait();
    let out = tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(20), wait) => r.context("no GET …/next within 20 s")?,
        status = exited => bail!("{} exited before asking for an event: {status:?}", binary.display()),
    };
    let _ = child.kill().await;
    out
}

fn release_binary(f: &str) -> Option<PathBuf> {
    let target = target_dir();
    [
        target
            .join("x86_64-unknown-linux-gnu")
            .join("release")
            .join(f),
        target
            .join("aarch64-unknown-linux-gnu")
            .join("release")
            .join(f),
    ]
    .into_iter()
    .find(|p| p.exists())
}

fn newest_source(dir: &Path) -> Option<SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(m) = e.metadata().and_then(|m| m.modified()) {
                newest = Some(newest.map_or(m, |n: SystemTime| n.max(m)));
            }
        }
    }
    newest
}

/// Whether a built artefact is older than the sources it came from.
fn stale(artefact: &Path, function: &str) -> bool {
    let Ok(built) = std::fs::metadata(artefact).and_then(|m| m.modified()) else {
        return false;
    };
    let dir = function.trim_start_matches("atelier-");
    [
        root().join("functions").join(dir).join("src"),
        root().join("shared").join("src"),
    ]
    .iter()
    .filter_map(|d| newest_source(d))
    .any(|src| src > built)
}

/// One binary's cold starts.
struct ColdStarts {
    name: &'static str,
    binary: PathBuf,
    env: Vec<(String, String)>,
    times: Vec<Duration>,
    /// Calls on the wire of its first cold start.
    calls: Option<Counts>,
    failure: Option<String>,
}

/// Each function's init, and the bare runtime's, cold-started in turn `runs` times (so a
/// busy moment on the machine falls on all of them alike).
async fn init_times(h: &Harness, proxy: &Proxy, model: &StandIn, runs: usize) -> Result<Vec<Row>> {
    // The consumer reads its provider key from Secrets Manager at cold start.
    let secret = format!(
        "bench-model-key-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    h.clients
        .secrets
        .create_secret()
        .name(&secret)
        .secret_string("sk-bench")
        .send()
        .await?;
    let mut out = Vec::new();
    let mut all = Vec::new();
    for name in FUNCTIONS.into_iter().chain([limits::BARE]) {
        match release_binary(name) {
            Some(binary) => all.push(ColdStarts {
                name,
                binary,
                env: lambda_env(name, &proxy.url(), &model.base_url, &secret),
                times: Vec::new(),
                calls: None,
                failure: None,
            }),
            None => out.push(row(
                format!("init time, {name}"),
                "not measured",
                "run `cargo xtask package` (the packaged release binary is absent)",
            )),
        }
    }
    for _ in 0..runs.max(1) {
        for c in all.iter_mut().filter(|c| c.failure.is_none()) {
            let before = proxy.counts();
            match time_to_first_next(&c.binary, &c.env).await {
                Ok(t) => c.times.push(t),
                Err(e) => c.failure = Some(format!("{e:#}")),
            }
            c.calls.get_or_insert_with(|| proxy.counts().since(&before));
        }
    }
    out.extend(all.iter_mut().map(init_row));
    let median = |c: &ColdStarts| (!c.times.is_empty()).then(|| percentile(&c.times, 0.5));
    let bare = all.iter().find(|c| c.name == limits::BARE).and_then(median);
    let ours: Vec<(&str, Duration)> = all
        .iter()
        .filter(|c| c.name != limits::BARE)
        .filter_map(|c| Some((c.name, median(c)?)))
        .collect();
    if let Some(bare) = bare {
        out.push(limits::init_ratio_row(&ours, bare));
    }
    Ok(out)
}

fn init_row(c: &mut ColdStarts) -> Row {
    let what = format!("init time, {}", c.name);
    c.times.sort();
    let (Some(first), Some(last)) = (c.times.first(), c.times.last()) else {
        return row(what, "failed", c.failure.clone().unwrap_or_default());
    };
    let mut how = format!(
        "spawn → first `GET /runtime/invocation/next` on a fake Runtime API; median of {}; calls per cold start: {}",
        c.times.len(),
        describe(&c.calls.clone().unwrap_or_default(), 1)
    );
    if c.name != limits::BARE && stale(&c.binary, c.name) {
        how.push_str("; **binary older than its sources: rerun `cargo xtask package`**");
    }
    if let Some(e) = &c.failure {
        how.push_str(&format!("; a later start failed: {e}"));
    }
    let figure = format!(
        "{} (min {}, max {})",
        ms(percentile(&c.times, 0.5)),
        ms(*first),
        ms(*last)
    );
    row(what, figure, how)
}

/// The environment Lambda gives function `f`, with AWS through `aws_url` and the model at
/// `model_url` with its key in `secret`.
fn lambda_env(f: &str, aws_url: &str, model_url: &str, secret: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("ATELIER_") || k.starts_with("AWS_"))
        .collect();
    env.retain(|(k, _)| k != "AWS_ENDPOINT_URL");
    env.extend([
        ("AWS_ENDPOINT_URL".to_owned(), aws_url.to_owned()),
        ("AWS_LAMBDA_FUNCTION_NAME".to_owned(), f.to_owned()),
        (
            "AWS_LAMBDA_FUNCTION_VERSION".to_owned(),
            "$LATEST".to_owned(),
        ),
        (
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE".to_owned(),
            "1024".to_owned(),
        ),
        (
            "AWS_LAMBDA_LOG_GROUP_NAME".to_owned(),
            format!("/aws/lambda/{f}"),
        ),
        ("AWS_LAMBDA_LOG_STREAM_NAME".to_owned(), "bench".to_owned()),
        ("ATELIER_MODEL_BASE_URL".to_owned(), model_url.to_owned()),
        (
            "ATELIER_MODEL_API_KEY_SECRET_ID".to_owned(),
            secret.to_owned(),
        ),
    ]);
    env
}

fn zip_sizes() -> Vec<Row> {
    let mut out = Vec::new();
    for arch in ["x86_64", "arm64"] {
        let dir = root().join("target").join("lambda-dist").join(arch);
        if !dir.exists() {
            let why = match (arch, limits::arm64_unbuildable()) {
                ("arm64", Some(why)) => why,
                _ => format!("not measured: run `cargo xtask package --arch {arch}`"),
            };
            out.push(row(format!("zip size ({arch})"), why, ""));
            continue;
        }
        let mut parts = Vec::new();
        let (mut stale_any, mut all_met) = (false, true);
        for f in FUNCTIONS {
            let zip = dir.join(f).join("bootstrap.zip");
            let name = f.trim_start_matches("atelier-");
            match std::fs::metadata(&zip) {
                Ok(m) => {
                    all_met &= m.len() <= limits::ZIP_MAX_BYTES;
                    parts.push(format!("{name} {}", mb(m.len())));
                    stale_any |= stale(&zip, f);
                }
                Err(_) => parts.push(format!("{name} absent")),
            }
        }
        let bare = root()
            .join("target")
            .join("lambda-dist")
            .join("floor")
            .join(arch)
            .join(limits::BARE)
            .join("bootstrap.zip");
        let mut how = format!(
            "`target/lambda-dist/{arch}/*/bootstrap.zip` from `cargo xtask package`; MB = 10^6 bytes; the bare lambda_runtime's zip: {}",
            std::fs::metadata(&bare).map_or("absent".to_owned(), |m| mb(m.len()))
        );
        if stale_any {
            how.push_str("; **a zip is older than its sources: rerun `cargo xtask package`**");
        }
        let figure = format!(
            "{} (goal ≤ 4 MB each: {})",
            parts.join(", "),
            limits::verdict(all_met)
        );
        out.push(row(format!("zip size ({arch})"), figure, how));
    }
    out
}

fn mb(bytes: u64) -> String {
    format!("{:.2} MB", bytes as f64 / 1_000_000.0)
}

/// The 12 MP rows: the path against its codec floor, peak memory, result sizes, and Lambda's
/// cost of the image work.
async fn image_rows(runs: usize) -> Vec<Row> {
    let how = "the same example's `measure` (release build): decode 4032×3024 JPEG, mask, downscale and the model's and vision calls' PNGs, restyle at 1536 px, composite with its leakage, PNG, JPEG and thumbnail encode, the review's PNG; VmHWM";
    let limits::ImagePath {
        mut rows,
        measured,
        path_ms,
    } = limits::image_path(runs).await;
    if let Some(text) = measured {
        rows.push(memory_row(&text, how));
        rows.extend(result_sizes(&text));
    }
    rows.extend(path_ms.map(limits::cost_row));
    rows
}

/// The peak by step from the example's `NAME  … peak N MiB` lines.
fn memory_row(text: &str, how: &str) -> Row {
    let mut steps = Vec::new();
    let mut peak = 0u64;
    for line in text.lines() {
        let Some((name, rest)) = line.split_once("  ") else {
            continue;
        };
        let Some(mib) = rest
            .split("peak")
            .nth(1)
            .and_then(|p| p.trim().trim_end_matches("MiB").trim().parse::<u64>().ok())
        else {
            continue;
        };
        peak = peak.max(mib);
        steps.push(format!("{} {mib}", name.trim()));
    }
    row(
        "consumer peak memory, 12 MP photo, brushed mask",
        limits::peak_verdict(peak),
        format!("{how} (by step, MiB: {})", steps.join(", ")),
    )
}

/// The 12 MP result's download size per format, from the example's `sizes: png N jpeg N`.
fn result_sizes(text: &str) -> Option<Row> {
    let line = text.lines().find_map(|l| l.strip_prefix("sizes: "))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let size = |name: &str| -> Option<f64> {
        let at = words.iter().position(|w| *w == name)?;
        Some(words.get(at + 1)?.parse::<f64>().ok()? / 1_000_000.0)
    };
    let (png, jpeg) = (size("png")?, size("jpeg")?);
    Some(row(
        "12 MP result size, per format",
        format!(
            "JPEG (default download) {jpeg:.2} MB · PNG master {png:.2} MB ({:.1}× smaller)",
            png / jpeg
        ),
        "the same example's composite (a noisy synthetic photo, 4032×3024) encoded as the consumer stores it: JPEG quality 85, PNG fast compression",
    ))
}
