//! Reading and cancelling edits: `jobs`, `job`, `cancel`, and how a job's review or failure is
//! printed.

use reqwest::Method;
use serde_json::Value;

use crate::client::Hook;

use super::ctx::Ctx;
use super::wire::{Failure, Job, JobResult, Page};

pub async fn jobs(ctx: &Ctx, limit: u16) -> anyhow::Result<()> {
    let page: Page<Job> = ctx.fetch(&format!("/v1/edits?limit={limit}")).await?;
    for j in &page.items {
        ctx.say(format!(
            "{}  {:<10}  {:<6}  {:<28}  {:>2} cr  {}",
            j.id,
            j.status,
            j.operation,
            settings_summary(&j.settings),
            j.credits,
            j.created_at
        ));
    }
    if page.items.is_empty() {
        ctx.say("(no edits yet)");
    }
    Ok(())
}

pub async fn job(ctx: &Ctx, id: &str) -> anyhow::Result<()> {
    let job: Job = ctx.fetch(&format!("/v1/edits/{id}")).await?;
    ctx.say(format!(
        "{}  {}  {}  {}  {} credits  created {}",
        job.id,
        job.status,
        job.operation,
        settings_summary(&job.settings),
        job.credits,
        job.created_at
    ));
    if let Some(r) = &job.result {
        ctx.say(format!("Result: {} ({}x{})", r.url, r.width, r.height));
        print_review(ctx, r, &job);
    }
    if let Some(f) = &job.failure {
        print_failure(ctx, f, &job);
    }
    if let Some(l) = &job.lineage {
        ctx.say(format!(
            "Current version: {}; repairs left: {}",
            l.current_job_id, l.repairs_left
        ));
    }
    Ok(())
}

pub async fn cancel(ctx: &Ctx, id: &str) -> anyhow::Result<()> {
    let path = format!("/v1/edits/{id}/cancel");
    let reply = ctx
        .api
        .send(
            "cancel",
            || ctx.api.request(Method::POST, &path),
            Hook::None,
        )
        .await?;
    let job: Job = ctx.decode(reply.json("cancel")?, "cancel")?;
    ctx.say(format!(
        "{} is {}; {} credits refunded",
        job.id, job.status, job.credits
    ));
    Ok(())
}

fn settings_summary(settings: &Value) -> String {
    let s = |k: &str| settings.get(k).and_then(Value::as_str).unwrap_or("?");
    format!("{} on {}", s("style"), s("target"))
}

/// What a delivered result says: its content credentials' label and sentence ("Edited with
/// AI: …"), the review, a repair's comparison, the leakage.
pub fn print_review(ctx: &Ctx, r: &JobResult, job: &Job) {
    if let Some(c) = &r.content_credentials {
        ctx.say(format!("{}: {}", c.label, c.summary));
    }
    let notes = if r.review.notes.is_empty() {
        String::new()
    } else {
        format!(" — {}", r.review.notes)
    };
    ctx.say(format!("Review: {}{notes}", r.review.verdict));
    if let Some(c) = &r.comparison {
        ctx.say(format!(
            "Compared with the previous version: {}{}",
            c.outcome,
            if c.notes.is_empty() {
                String::new()
            } else {
                format!(" — {}", c.notes)
            }
        ));
    }
    if r.retained_previous {
        ctx.say("The repair did not improve on the previous version: that version is kept (and is what was saved).");
    }
    if let Some(l) = &r.leakage {
        let target = job
            .settings
            .get("target")
            .and_then(Value::as_str)
            .map_or(
                "selection",
                |t| if t == "brush" { "brushed area" } else { t },
            );
        let against = if l.basis == "mask" {
            "the mask"
        } else {
            "the checker's box"
        };
        ctx.say(format!(
            "Leakage: {:.2}% of the pixels outside the {target} changed ({} of {}, measured against {against})",
            l.ratio_ppm as f64 / 10_000.0,
            l.changed_outside,
            l.outside
        ));
    }
}

pub fn print_failure(ctx: &Ctx, f: &Failure, job: &Job) {
    ctx.say(format!(
        "{} {}: {} — {}",
        job.id, job.status, f.code, f.message
    ));
    for q in &f.questions {
        ctx.say(format!("  ? {q}"));
    }
    for c in &f.candidates {
        let a = &c.area;
        ctx.say(format!(
            "  [] {}: x {}–{} ‰, y {}–{} ‰ of the photo",
            c.label, a.x0, a.x1, a.y0, a.y1
        ));
    }
    ctx.say(format!(
        "{} credits were refunded (see `atelier ledger`)",
        job.credits
    ));
}
