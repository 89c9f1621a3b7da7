//! A paid request sent once: journaled before it leaves and with its job after, then followed
//! to its result, and only then is its journal entry forgotten.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, anyhow};
use reqwest::Method;
use serde_json::Value;

use crate::journal::{Entry, Journal};

use super::ctx::Ctx;
use super::jobs::{print_failure, print_review};
use super::wait::{download, download_format, wait};
use super::wire::Job;

pub struct Follow {
    /// Where to save the result (`None`: `<job id>.png` in the current folder).
    pub out: Option<PathBuf>,
    pub no_wait: bool,
    pub timeout: Duration,
}

/// Submits with the entry's key, records the job, waits, downloads, forgets the entry.
pub async fn submit_and_follow(
    ctx: &Ctx,
    journal: &Journal,
    entry: &mut Entry,
    path: &str,
    body: &Value,
    follow: &Follow,
) -> anyhow::Result<()> {
    let (value, job, replayed) = submit_journaled(ctx, journal, entry, path, body).await?;
    if replayed {
        eprintln!(
            "atelier: {} was already submitted by an earlier run; not charged again",
            job.id
        );
    } else {
        eprintln!("atelier: submitted {} ({} credits)", job.id, job.credits);
    }
    if follow.no_wait {
        if ctx.json {
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
        ctx.say(format!(
            "{} is {}. `atelier job {}` shows it; rerunning this command waits for it and downloads it without charging again.",
            job.id, job.status, job.id
        ));
        return Ok(());
    }
    wait_and_download(ctx, journal, entry, &job.id, follow).await
}

/// The paid request, journaled before it leaves and with its job after: (the job's JSON, the
/// job, whether an earlier run had submitted it).
async fn submit_journaled(
    ctx: &Ctx,
    journal: &Journal,
    entry: &mut Entry,
    path: &str,
    body: &Value,
) -> anyhow::Result<(Value, Job, bool)> {
    // Durable before the first byte of the paid request leaves.
    journal.save(entry)?;
    let key = entry.idempotency_key.clone();
    let resume_hint = "rerun the same command to resume: it reuses the same Idempotency-Key, so nothing is charged twice";
    let reply = ctx
        .api
        .send(
            "submit",
            || {
                ctx.api
                    .request(Method::POST, path)
                    .header("idempotency-key", &key)
                    .json(body)
            },
            ctx.hook,
        )
        .await
        .context(resume_hint)?;
    let status = reply.status;
    let replayed = reply.header("idempotent-replayed") == Some("true") || status.as_u16() == 200;
    if !status.is_success() {
        let refused = status.is_client_error() && status.as_u16() != 409;
        let err = reply.into_problem();
        if refused {
            // A refused request created no job and charged nothing: start clean next time.
            journal.remove(&entry.fingerprint)?;
            return Err(err.into());
        }
        return Err(anyhow::Error::from(err).context(if status.as_u16() == 409 {
            "pass --new to submit a new request"
        } else {
            resume_hint
        }));
    }
    let value: Value = reply.json("submit")?;
    let job: Job = serde_json::from_value(value.clone()).context("unexpected job")?;
    entry.job_id = Some(job.id.clone());
    journal.save(entry)?;
    Ok((value, job, replayed))
}

/// Waits for the job to end, then saves its image (or explains its failure); either way the
/// journal entry is done.
async fn wait_and_download(
    ctx: &Ctx,
    journal: &Journal,
    entry: &Entry,
    job_id: &str,
    follow: &Follow,
) -> anyhow::Result<()> {
    let out = follow
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{job_id}.png")));
    let (value, job) = wait(ctx, job_id, follow.timeout, download_format(&out)).await?;
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    }
    match (&job.result, &job.failure) {
        (Some(result), _) if job.status == "succeeded" => {
            download(ctx, &result.url, &out).await?;
            journal.remove(&entry.fingerprint)?;
            ctx.say(format!(
                "Saved {} ({}x{}) from {}",
                out.display(),
                result.width,
                result.height,
                job.id
            ));
            print_review(ctx, result, &job);
            Ok(())
        }
        (_, failure) => {
            journal.remove(&entry.fingerprint)?;
            match failure {
                // A preview that showed its area did what was asked.
                Some(f) if f.code == "PREVIEWED" => {
                    print_failure(ctx, f, &job);
                    Ok(())
                }
                Some(f) => {
                    print_failure(ctx, f, &job);
                    Err(anyhow!("{} {}: {}", job.id, job.status, f.code))
                }
                None => Err(anyhow!(
                    "{} {} ({} credits refunded)",
                    job.id,
                    job.status,
                    job.credits
                )),
            }
        }
    }
}
