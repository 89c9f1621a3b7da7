//! `cargo xtask fuzz [--requests N] [--seed S]` — schemathesis against the served OpenAPI
//! document of a private local run, then `atelier-admin audit` on the same tables.
//!
//! It starts its own ministack (port 4604), the stand-in model server (8805) and
//! `atelier-local serve` (8804, with the dev issuer), gets a dev token, and runs the pinned
//! schemathesis (its own venv, `.venv/fuzz`) with every check and a printed seed: the same seed
//! replays the same requests. The run fails on any 5xx, any schemathesis failure, fewer
//! requests than asked for, a refusal that is not problem+json or a JSON body that is not an
//! object accepted ([`REFUSALS_PY`]), or an audit that is not clean. It prints the requests sent, the
//! status histogram, the 5xx count, the audit result and the wall time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use super::{cargo, private_stack_env, root, run, start_ministack};

/// The fuzzer, pinned; a venv of its own (its dependencies are many and must not move
/// ministack's).
const SCHEMATHESIS: &str = "schemathesis==4.32.5";
/// Ports of this run, apart from the test stack (4599), `dev` (4566/8787/8788) and each other.
const AWS_PORT: u16 = 4604;
const API_PORT: u16 = 8804;
const MODEL_PORT: u16 = 8805;
/// The user the fuzzer acts as.
const USER: &str = "fuzz-1";
const DEFAULT_REQUESTS: u64 = 1000;

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

/// The refusal rules, checked over everything the run saw and then probed directly: every
/// 4xx/5xx answer schemathesis recorded is `application/problem+json` with a string `code`;
/// a JSON body that is not an object (`[true]`, `"x"`, `1`, `null`) is never accepted, by any
/// operation that takes a JSON body (schemathesis rarely sends one, so each is also sent to
/// each such operation, with the fuzzer's token and a fresh `Idempotency-Key`). Prints
/// `checked N` (answers looked at), `probed N` (probes sent) and one `bad …` line per
/// violation.
const REFUSALS_PY: &str = r#"
import base64, json, sys, urllib.request, uuid
events_path, base, token = sys.argv[1], sys.argv[2], sys.argv[3]

def decoded(value):
    if isinstance(value, dict) and "$base64" in value:
        return base64.b64decode(value["$base64"])
    return value.encode() if isinstance(value, str) else b""

def is_problem(content_type, body):
    if content_type.split(";")[0].strip().lower() != "application/problem+json":
        return False
    try:
        doc = json.loads(body)
    except ValueError:
        return False
    return isinstance(doc, dict) and isinstance(doc.get("code"), str)

checked = 0
with open(events_path) as events:
    for line in events:
        finished = json.loads(line).get("ScenarioFinished")
        for interaction in (finished or {}).get("recorder", {}).get("interactions", {}).values():
            response, request = interaction.get("response"), interaction.get("request", {})
            if not response or response["status_code"] < 400:
                continue
            checked += 1
            content_type = (response.get("headers", {}).get("content-type") or [""])[0]
            if not is_problem(content_type, decoded(response.get("content"))):
                print("bad not-problem", response["status_code"], request.get("method"), request.get("uri"), repr(content_type))
print("checked", checked)

document = json.load(urllib.request.urlopen(base + "/v1/openapi.json"))
probed = 0
for path, item in document["paths"].items():
    for method, operation in item.items():
        if "application/json" not in operation.get("requestBody", {}).get("content", {}):
            continue
        url = base + "/".join("x" if part.startswith("{") else part for part in path.split("/"))
        for body in ("[true]", '"x"', "1", "null"):
            request = urllib.request.Request(url, data=body.encode(), method=method.upper(), headers={
                "Authorization": "Bearer " + token, "Content-Type": "application/json",
                "Idempotency-Key": uuid.uuid4().hex})
            try:
                with urllib.request.urlopen(request) as answer:
                    status, content_type, content = answer.status, answer.headers.get("content-type", ""), answer.read()
            except urllib.error.HTTPError as refusal:
                status, content_type, content = refusal.code, refusal.headers.get("content-type", ""), refusal.read()
            probed += 1
            if status < 400 or not is_problem(content_type, content):
                print("bad non-object-accepted" if status < 400 else "bad not-problem", status, method.upper(), path, body, repr(content_type))
print("probed", probed)
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

/// App Store purchases are on in the fuzzed stack, trusting a root whose key was never kept:
/// every JWS the fuzzer makes up is refused (`400`), none is `503 PAYMENTS_NOT_CONFIGURED`.
const FUZZ_APPLE_ROOT: &str = include_str!("../../tests/official-app-store/fuzz-root.pem");

/// The App Store settings of the fuzzed stack.
fn fuzz_apple_env() -> [(String, String); 3] {
    [
        ("ATELIER_APPLE_ROOT_CERTS".into(), FUZZ_APPLE_ROOT.into()),
        (
            "ATELIER_APPLE_BUNDLE_ID".into(),
            "com.example.atelier".into(),
        ),
        ("ATELIER_APPLE_ENVIRONMENT".into(), "Sandbox".into()),
    ]
}

/// Google Play purchases are on in the fuzzed stack too, with a test key and every Google URL
/// a closed local port: no pack is sold in Google Play, so every purchase the fuzzer makes up
/// is refused before Google is asked (`422`), and no push carries Pub/Sub's token (`401`).
fn fuzz_google_env() -> [(String, String); 7] {
    let key = serde_json::json!({
        "client_email": "fuzz@atelier-fuzz.iam.gserviceaccount.com",
        "private_key": include_str!("../../tests/fixtures/google/play-service-account.pem"),
    });
    let nowhere = "http://127.0.0.1:9";
    [
        (
            "ATELIER_GOOGLE_PLAY_PACKAGE_NAME".into(),
            "com.example.atelier".into(),
        ),
        ("ATELIER_GOOGLE_PLAY_KEY".into(), key.to_string()),
        (
            "ATELIER_GOOGLE_PLAY_PUSH_AUDIENCE".into(),
            "atelier-fuzz".into(),
        ),
        (
            "ATELIER_GOOGLE_PLAY_PUSH_SERVICE_ACCOUNT".into(),
            "push@atelier-fuzz.iam.gserviceaccount.com".into(),
        ),
        ("ATELIER_GOOGLE_PLAY_PUBLISHER_URL".into(), nowhere.into()),
        (
            "ATELIER_GOOGLE_PLAY_TOKEN_URL".into(),
            format!("{nowhere}/token"),
        ),
        (
            "ATELIER_GOOGLE_CERTS_URL".into(),
            format!("{nowhere}/certs"),
        ),
    ]
}

struct Args {
    requests: u64,
    seed: u64,
}

fn parse_args(args: &[String]) -> Result<Args> {
    let mut out = Args {
        requests: DEFAULT_REQUESTS,
        seed: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() % 1_000_000)
            .unwrap_or(1),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| -> Result<u64> {
            let raw = it.next().map(String::as_str).unwrap_or_default();
            raw.parse()
                .with_context(|| format!("{name} needs a number, got {raw:?}"))
        };
        match a.as_str() {
            "--requests" => out.requests = value("--requests")?.max(1),
            "--seed" => out.seed = value("--seed")?,
            other => bail!("usage: cargo xtask fuzz [--requests N] [--seed S] (got {other:?})"),
        }
    }
    Ok(out)
}

/// A child process stopped when dropped.
pub(crate) struct Service {
    name: &'static str,
    child: Child,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stand-in model server and the local runner (API, consumer, sweeper) of a test stack,
/// started with `env` and ready; both stopped when dropped.
pub(crate) fn start_model_and_api(
    bin_dir: &Path,
    env: &[(String, String)],
    state: &Path,
    model_port: u16,
    api_port: u16,
) -> Result<(Service, Service)> {
    let mut model = spawn(
        "stand-in model server",
        Command::new(bin_dir.join("atelier-model-server"))
            .args(["--port", &model_port.to_string()])
            .envs(env.iter().cloned()),
        &state.join("model-server.log"),
    )?;
    wait_ready(
        &mut model,
        model_port,
        "/_stand-in/calls",
        Duration::from_secs(30),
    )?;
    let mut api = spawn(
        "atelier-local serve",
        Command::new(bin_dir.join("atelier-local"))
            .arg("serve")
            .envs(env.iter().cloned()),
        &state.join("api.log"),
    )?;
    wait_ready(&mut api, api_port, "/healthz", Duration::from_secs(120))?;
    Ok((model, api))
}

pub(crate) fn spawn(name: &'static str, cmd: &mut Command, log: &Path) -> Result<Service> {
    let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let child = cmd
        .stdout(Stdio::from(file.try_clone()?))
        .stderr(Stdio::from(file))
        .spawn()
        .with_context(|| format!("starting {name}"))?;
    Ok(Service { name, child })
}

/// One plain HTTP/1.1 request on loopback; returns (status, body).
fn http(port: u16, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// Waits until `GET path` answers 200, or the service exits, or `limit` passes.
pub(crate) fn wait_ready(
    service: &mut Service,
    port: u16,
    path: &str,
    limit: Duration,
) -> Result<()> {
    let start = Instant::now();
    loop {
        if let Ok((200, _)) = http(port, "GET", path, None) {
            eprintln!(
                "xtask: {} ready on 127.0.0.1:{port} in {:.1?}",
                service.name,
                start.elapsed()
            );
            return Ok(());
        }
        if let Some(status) = service.child.try_wait()? {
            bail!("{} exited with {status} before it was ready", service.name);
        }
        if start.elapsed() > limit {
            bail!(
                "{} did not answer GET {path} within {limit:?}",
                service.name
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

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

/// Installs schemathesis into `.venv/fuzz` (once; a marker records the pin).
fn ensure_schemathesis() -> Result<PathBuf> {
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
    let bin_dir = crate::target_dir().join("debug");

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

fn run_schemathesis(
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
fn report(args: &Args, requests: u64, histogram: &[(String, u64)], took: Duration) -> u64 {
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
fn summarise_events(events: &Path) -> Result<(u64, Vec<(String, u64)>)> {
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

/// Runs [`REFUSALS_PY`] over the events and against the API; prints its figures and every
/// violation, and returns how many there were. A check that could not run, or looked at
/// nothing, fails (it would otherwise pass by seeing nothing).
fn check_refusals(events: &Path, token: &str) -> Result<u64> {
    let out = Command::new(root().join(".venv/fuzz/bin/python"))
        .args(["-c", REFUSALS_PY])
        .arg(events)
        .arg(format!("http://127.0.0.1:{API_PORT}"))
        .arg(token)
        .output()
        .context("checking the refusals")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let figure = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (checked, probed) = (figure("checked "), figure("probed "));
    let bad: Vec<&str> = text.lines().filter(|l| l.starts_with("bad ")).collect();
    println!(
        "fuzz: refusals {checked} answers checked, {probed} non-object bodies probed, {} not as promised",
        bad.len()
    );
    for line in &bad {
        println!("fuzz:   {line}");
    }
    if !out.status.success() || checked == 0 || probed == 0 {
        bail!(
            "the refusal check did not run whole ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(bad.len() as u64)
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
