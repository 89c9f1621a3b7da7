//! The refusal rules, checked over the fuzz run's answers and probed directly ([`REFUSALS_PY`]).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::config::API_PORT;
use crate::workspace::root;

/// The refusal rules, checked over everything the run saw and then probed directly: every
/// 4xx/5xx answer schemathesis recorded is `application/problem+json` with a string `code`;
/// a JSON body that is not an object (`[true]`, `"x"`, `1`, `null`) is never accepted, by any
/// operation that takes a JSON body (schemathesis rarely sends one, so each is also sent to
/// each such operation, with the fuzzer's token and a fresh `Idempotency-Key`). Prints
/// `checked N` (answers looked at), `probed N` (probes sent) and one `bad …` line per
/// violation.
pub(super) const REFUSALS_PY: &str = r#"
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

/// Runs [`REFUSALS_PY`] over the events and against the API; prints its figures and every
/// violation, and returns how many there were. A check that could not run, or looked at
/// nothing, fails (it would otherwise pass by seeing nothing).
pub(super) fn check_refusals(events: &Path, token: &str) -> Result<u64> {
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
