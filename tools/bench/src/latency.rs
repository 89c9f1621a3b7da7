//! Submit latency against its own round trips made bare (the S3 `HeadObject`, the same
//! transaction, the same SQS send), interleaved in one run.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use atelier_shared::adapters::assets::{Assets, Copied};
use atelier_shared::clock;
use atelier_shared::domain::{AssetId, AssetKind, IdempotencyKey, JobId, Operation, UserId};
use atelier_shared::services::budget;
use atelier_shared::store::schema::{attr, user_day_key};
use atelier_tests::Harness;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Put, TransactWriteItem, Update};
use futures::StreamExt;
use serde_json::json;

use crate::fixture::{job_id, new_user_with_photo, pet};
use crate::table::{Row, ms, percentile, row};

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

pub async fn latency(h: &Harness, n: usize) -> Result<Vec<Row>> {
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
