//! End-to-end jobs per second: submits fed through the queue to K consumers, the stand-in model
//! instant; and the model spend booked per job.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use atelier_shared::adapters::aws::Clients;
use atelier_shared::clock;
use atelier_shared::domain::UserId;
use atelier_shared::services::budget;
use atelier_tests::{Harness, StandIn};
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::fixture::{job_id, new_user_with_photo, pet};
use crate::table::{Row, row};

pub async fn throughput(
    h: &Harness,
    model: &StandIn,
    n: usize,
    workers: usize,
) -> Result<Vec<Row>> {
    let queue_url = h.app.config.resources.queue_url.clone();
    // Earlier phases left messages (of finished or never-consumed jobs) in the queue.
    purge_queue(h, &queue_url).await;
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

/// Empties the job queue, then gives the purge half a second to take.
async fn purge_queue(h: &Harness, queue_url: &str) {
    let _ = h
        .clients
        .sqs
        .purge_queue()
        .queue_url(queue_url)
        .send()
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
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
