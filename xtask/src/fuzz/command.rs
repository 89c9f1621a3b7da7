//! `cargo xtask fuzz`: the private stack, schemathesis against it, the checks, the audit and
//! the report.

use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::config::{API_PORT, AWS_PORT, MODEL_PORT, USER, parse_args};
use super::refusals::check_refusals;
use super::schemathesis::{ensure_schemathesis, report, run_schemathesis, summarise_events};
use super::service::{http, start_model_and_api};
use super::store_env::{fuzz_apple_env, fuzz_google_env};
use crate::local_env::private_stack_env;
use crate::ministack::start_ministack;
use crate::workspace::{cargo, root, run};

/// A dev token from the local issuer (`{"token": "…"}`; plain string search keeps xtask free of
/// a JSON library).
fn dev_token() -> Result<String> {
    let (status, body) = http(
        API_PORT,
        "POST",
        "/dev-issuer/token",
        Some(&format!(r#"{{"user":"{USER}"}}"#)),
    )?;
    if status != 200 {
        bail!("dev token: HTTP {status}: {body}");
    }
    let token = body
        .split_once(r#""token":""#)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(t, _)| t.to_owned())
        .filter(|t| !t.is_empty())
        .with_context(|| format!("no token in {body}"))?;
    Ok(token)
}

/// The operations in the served document (each `"get"`/`"post"`… under `"paths"`), to spread
/// the requested count over them.
fn operation_count() -> Result<u64> {
    let (status, doc) = http(API_PORT, "GET", "/v1/openapi.json", None)?;
    if status != 200 {
        bail!("GET /v1/openapi.json: HTTP {status}");
    }
    let doc: serde_json::Value = serde_json::from_str(&doc).context("the OpenAPI document")?;
    let methods = ["get", "post", "put", "patch", "delete"];
    let n = doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(serde_json::Value::as_object)
        .map(|item| {
            item.keys()
                .filter(|k| methods.contains(&k.as_str()))
                .count() as u64
        })
        .sum::<u64>();
    Ok(n.max(1))
}

/// `cargo xtask fuzz [--requests N] [--seed S]`.
pub fn fuzz(args: &[String]) -> Result<ExitCode> {
    let args = parse_args(args)?;
    let started = Instant::now();
    let schemathesis = ensure_schemathesis()?;
    run(cargo().current_dir(root()).args([
        "build",
        "--quiet",
        "-p",
        "atelier-local",
        "-p",
        "atelier-model-server",
        "-p",
        "atelier-admin",
    ]))?;
    let bin_dir = crate::workspace::target_dir().join("debug");

    let state = root().join("target").join(format!("xtask-fuzz-{AWS_PORT}"));
    let _ = std::fs::remove_dir_all(&state);
    std::fs::create_dir_all(&state)?;
    let _ministack = start_ministack(AWS_PORT, &state.join("ministack"))?;
    let mut env = private_stack_env(AWS_PORT, "atelier-fuzz", API_PORT, MODEL_PORT, &state);
    env.extend(fuzz_apple_env());
    env.extend(fuzz_google_env());
    // One token sends every request: with the product's per-caller budget most would be a
    // `429` before any handler runs, and the fuzz would prove nothing about them.
    env.push(("ATELIER_REQUESTS_PER_WINDOW".into(), "1000000".into()));
    let (model, api) = start_model_and_api(&bin_dir, &env, &state, MODEL_PORT, API_PORT)?;
    let token = dev_token()?;

    // Spread the count over the operations; the coverage and stateful phases add more.
    let operations = operation_count()?;
    let per_operation = args.requests.div_ceil(operations);
    eprintln!(
        "xtask: fuzz seed {} — {} requests asked, {operations} operations, up to {per_operation} examples each",
        args.seed, args.requests
    );
    let events = state.join("schemathesis-events.ndjson");
    let fuzz_started = Instant::now();
    let status = run_schemathesis(&schemathesis, &state, &args, per_operation, &token, &events)?;
    let fuzz_time = fuzz_started.elapsed();
    let (requests, histogram) = summarise_events(&events)?;
    let refusal_faults = check_refusals(&events, &token)?;
    let (audit_clean, audit_text) = audit(&bin_dir, &env)?;
    drop(api);
    drop(model);

    let server_errors = report(&args, requests, &histogram, fuzz_time);
    println!(
        "fuzz: schemathesis {}",
        if status.success() {
            "passed every check".to_owned()
        } else {
            format!("reported failures ({status})")
        }
    );
    println!(
        "fuzz: audit {} — {audit_text}",
        if audit_clean { "clean" } else { "NOT clean" }
    );
    println!("fuzz: wall time {:.1?}", started.elapsed());
    let ok = status.success()
        && server_errors == 0
        && refusal_faults == 0
        && audit_clean
        && requests >= args.requests;
    if !ok {
        eprintln!(
            "xtask: fuzz failed (replay with `cargo xtask fuzz --requests {} --seed {}`; logs in {})",
            args.requests,
            args.seed,
            state.display()
        );
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `atelier-admin audit` on the fuzzed stack: whether it is clean, and its summary line.
fn audit(bin_dir: &Path, env: &[(String, String)]) -> Result<(bool, String)> {
    let audit = Command::new(bin_dir.join("atelier-admin"))
        .arg("audit")
        .envs(env.iter().cloned())
        .output()
        .context("running atelier-admin audit")?;
    // The audit prints its report as JSON and then one summary line; keep the line.
    let line = format!(
        "{}{}",
        String::from_utf8_lossy(&audit.stdout),
        String::from_utf8_lossy(&audit.stderr)
    )
    .lines()
    .rev()
    .find(|l| !l.trim().is_empty())
    .unwrap_or_default()
    .trim()
    .to_owned();
    Ok((audit.status.success(), line))
}
