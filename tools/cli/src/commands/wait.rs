//! Waiting on a job (long-polls with its ETag, a spinner on a terminal) and downloading its
//! result.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use reqwest::Method;
use serde_json::Value;

use crate::client::Hook;

use super::ctx::Ctx;
use super::wire::Job;

fn is_terminal(status: &str) -> bool {
    matches!(status, "succeeded" | "failed" | "canceled")
}

/// Polls the job until it is finished, showing its state and the time taken.
/// The result's download format for a file: the JPEG rendition for `.jpg`/`.jpeg`, else the
/// lossless PNG master (a desktop client has the bandwidth; a phone app asks for `jpeg`).
pub fn download_format(out: &Path) -> &'static str {
    match out.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("jpg") || e.eq_ignore_ascii_case("jpeg") => "jpeg",
        _ => "png",
    }
}

pub async fn wait(
    ctx: &Ctx,
    id: &str,
    timeout: Duration,
    format: &str,
) -> anyhow::Result<(Value, Job)> {
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let path = format!("/v1/edits/{id}?format={format}");
    let mut last = String::new();
    // The job's ETag and body as last seen: each next read waits on the server until it
    // changes (a long-poll), instead of asking again and again.
    let mut held: Option<(String, Value)> = None;
    loop {
        let wait_secs = timeout
            .saturating_sub(started.elapsed())
            .as_secs()
            .clamp(1, LONG_POLL_SECS);
        let tag = held.as_ref().map(|(tag, _)| tag.clone());
        let request = ctx.api.send(
            &path,
            || {
                let req = ctx.api.request(Method::GET, &path);
                match &tag {
                    Some(tag) => req
                        .header("prefer", format!("wait={wait_secs}"))
                        .header("if-none-match", tag),
                    None => req,
                }
            },
            Hook::None,
        );
        let reply = spinning(request, tty, started, &last)
            .await
            .context("rerun the same command to keep waiting (nothing is charged twice)")?;
        let value = match held.take() {
            Some((tag, value)) if reply.status == reqwest::StatusCode::NOT_MODIFIED => {
                if reply.header("preference-applied").is_none() {
                    // Answered without waiting (this user holds the most waits the API
                    // allows): pause instead of asking again at once.
                    tokio::time::sleep(UNWAITED_PAUSE).await;
                }
                held = Some((tag, value.clone()));
                value
            }
            _ => {
                let tag = reply.header("etag").map(str::to_owned);
                let value: Value = reply
                    .json(&path)
                    .context("rerun the same command to keep waiting (nothing is charged twice)")?;
                held = tag.map(|tag| (tag, value.clone()));
                value
            }
        };
        let job: Job = serde_json::from_value(value.clone()).context("unexpected job")?;
        let secs = started.elapsed().as_secs();
        if !tty && job.status != last {
            eprintln!("atelier: {id} {} ({secs}s)", job.status);
        }
        last.clone_from(&job.status);
        if is_terminal(&job.status) {
            if tty {
                eprintln!();
            }
            return Ok((value, job));
        }
        if started.elapsed() > timeout {
            if tty {
                eprintln!();
            }
            bail!(
                "{id} is still {} after {secs}s; rerun the same command to keep waiting (nothing is charged twice), or `atelier job {id}`",
                job.status
            );
        }
    }
}

/// The longest a read of a job waits on the server for it to change (`Prefer: wait=20`, the
/// API's longest).
const LONG_POLL_SECS: u64 = 20;

/// The pause before asking again after an unchanged job was answered without the wait.
const UNWAITED_PAUSE: Duration = Duration::from_secs(2);

/// Awaits `request`, redrawing the spinner line (state, seconds waited) every 750 ms on a
/// terminal.
async fn spinning<T>(
    request: impl std::future::Future<Output = T>,
    tty: bool,
    started: Instant,
    status: &str,
) -> T {
    let frames = ['|', '/', '-', '\\'];
    let mut tick = 0usize;
    tokio::pin!(request);
    loop {
        tokio::select! {
            out = &mut request => return out,
            () = tokio::time::sleep(Duration::from_millis(750)), if tty => {
                let secs = started.elapsed().as_secs();
                eprint!("\r{} {status:<11} {secs:>4}s ", frames[tick % frames.len()]);
                tick += 1;
            }
        }
    }
}

/// Downloads the result to `out` (written whole or not at all).
pub async fn download(ctx: &Ctx, url: &str, out: &Path) -> anyhow::Result<()> {
    let reply = ctx
        .api
        .send(
            "downloading the result",
            || ctx.api.external(Method::GET, url),
            Hook::None,
        )
        .await?;
    if !reply.status.is_success() {
        return Err(reply.into_problem()).context("downloading the result");
    }
    let tmp = out.with_extension(format!("part-{}", std::process::id()));
    std::fs::write(&tmp, &reply.body).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, out).with_context(|| format!("saving {}", out.display()))
}
