//! schemathesis: installed pinned, run with this project's settings, its events summarised.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::config::{API_PORT, Args};
use crate::workspace::{root, run};

/// The fuzzer, pinned; a venv of its own (its dependencies are many and must not move
/// ministack's).
const SCHEMATHESIS: &str = "schemathesis==4.32.5";

/// Reads schemathesis' NDJSON event stream and prints one line per figure: every HTTP
/// interaction it recorded (`ScenarioFinished` → recorder → interactions), by status.
const SUMMARY_PY: &str = r#"
import collections, json, sys
statuses = collections.Counter()
with open(sys.argv[1]) as events:
    for line in events:
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if not finished:
            continue
        for interaction in finished.get("recorder", {}).get("interactions", {}).values():
            response = interaction.get("response")
            statuses[response["status_code"] if response else "no-response"] += 1
print("requests", sum(statuses.values()))
for status, n in sorted(statuses.items(), key=lambda kv: str(kv[0])):
    print("status", status, n)
"#;

/// What schemathesis cannot learn from the document. Its `positive_data_acceptance` check
/// expects a schema-valid request to be accepted, but some refusals depend on more than one
/// field or on state, which JSON Schema cannot state: a brushed target needs a mask, a mask
/// must be a PNG, sizes are per kind, asset ids must name an upload (422/404), credits can run
/// out (402), the fuzzer's own `DELETE /v1/account` closes its account (403 ACCOUNT_CLOSED on
/// later uploads and edits); and a cursor is valid only if the API issued it (400
/// INVALID_CURSOR, also the export's). A checkout's
/// return URLs must be under the allow-list (422). The Stripe webhook must refuse every request
/// the fuzzer can make (none carries Stripe's signature): only 400 is expected, so a 2xx there
/// fails the run. A device token's form depends on its platform (an APNs token is hex, an FCM
/// one is not), a device id must have its form (404) and an account holds at most 5 devices
/// (409). Every other check stays as it is.
const CONFIG_TOML: &str = r#"
[[operations]]
include-name = ["POST /v1/edits", "POST /v1/quotes", "POST /v1/uploads", "POST /v1/edits/{id}/repairs"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "402", "403", "404", "409", "422", "429"]

[[operations]]
include-name = ["GET /v1/edits", "GET /v1/account/ledger", "GET /v1/account/export"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "404"]

[[operations]]
include-name = ["POST /v1/checkout"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "409", "422"]

[[operations]]
include-name = ["POST /v1/webhooks/stripe"]
checks.positive_data_acceptance.expected-statuses = ["400"]

[[operations]]
include-name = ["POST /v1/purchases/apple"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "409", "422"]

[[operations]]
include-name = ["PUT /v1/devices/{id}"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "403", "404", "409", "422"]

[[operations]]
include-name = ["POST /v1/webhooks/apple"]
checks.positive_data_acceptance.expected-statuses = ["400", "422"]

[[operations]]
include-name = ["POST /v1/purchases/google"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "409", "422"]

[[operations]]
include-name = ["POST /v1/webhooks/google"]
checks.positive_data_acceptance.expected-statuses = ["400", "401"]
"#;

/// Installs schemathesis into `.venv/fuzz` (once; a marker records the pin).
pub(super) fn ensure_schemathesis() -> Result<PathBuf> {
    let venv = root().join(".venv").join("fuzz");
    let bin = venv.join("bin").join("schemathesis");
    let marker = venv.join(".atelier-fuzz-pins");
    if bin.exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == SCHEMATHESIS) {
        return Ok(bin);
    }
    if !venv.join("bin").join("python").exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))
            .context("python3 -m venv (is python3 installed?)")?;
    }
    eprintln!("xtask: installing {SCHEMATHESIS} into {}", venv.display());
    run(Command::new(venv.join("bin").join("pip")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        SCHEMATHESIS,
    ]))?;
    std::fs::write(&marker, SCHEMATHESIS)?;
    Ok(bin)
}

pub(super) fn run_schemathesis(
    schemathesis: &Path,
    state: &Path,
    args: &Args,
    per_operation: u64,
    token: &str,
    events: &Path,
) -> Result<std::process::ExitStatus> {
    let config = state.join("schemathesis.toml");
    std::fs::write(&config, CONFIG_TOML)?;
    Command::new(schemathesis)
        .current_dir(state)
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("http://127.0.0.1:{API_PORT}/v1/openapi.json"))
        .args(["--url", &format!("http://127.0.0.1:{API_PORT}")])
        .args(["--checks", "all"])
        .args(["--seed", &args.seed.to_string()])
        .args(["--max-examples", &per_operation.to_string()])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        // One worker: hypothesis parses lambdas' source with `ast` while generating, which
        // is not thread-safe on CPython 3.11 ("AST constructor recursion depth mismatch").
        // No stateful phase: the document has no links yet, and its per-operation check
        // settings (the opaque cursor above) are not applied there.
        .args(["--workers", "1", "--request-timeout", "30"])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--generation-database", "none", "--no-color"])
        .args(["--report", "ndjson", "--report-ndjson-path"])
        .arg(events)
        .status()
        .context("running schemathesis")
}

/// Prints what was sent and the statuses; returns the count of 5xx answers.
pub(super) fn report(
    args: &Args,
    requests: u64,
    histogram: &[(String, u64)],
    took: Duration,
) -> u64 {
    let server_errors: u64 = histogram
        .iter()
        .filter(|(code, _)| code.starts_with('5'))
        .map(|(_, n)| n)
        .sum();
    let histogram_text = histogram
        .iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    println!("fuzz: seed {}", args.seed);
    println!(
        "fuzz: {requests} requests sent ({} asked) in {took:.1?}",
        args.requests
    );
    println!("fuzz: statuses {histogram_text}");
    println!("fuzz: 5xx {server_errors}");
    server_errors
}

/// The requests sent and a count per status code, from schemathesis' event stream.
pub(super) fn summarise_events(events: &Path) -> Result<(u64, Vec<(String, u64)>)> {
    let summary = Command::new(root().join(".venv/fuzz/bin/python"))
        .args(["-c", SUMMARY_PY])
        .arg(events)
        .output()
        .context("summarising the schemathesis events")?;
    let summary = String::from_utf8_lossy(&summary.stdout).into_owned();
    let mut requests = 0u64;
    let mut histogram: Vec<(String, u64)> = Vec::new();
    for line in summary.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["requests", n] => requests = n.parse().unwrap_or(0),
            ["status", code, n] => histogram.push(((*code).to_owned(), n.parse().unwrap_or(0))),
            _ => {}
        }
    }
    Ok((requests, histogram))
}
