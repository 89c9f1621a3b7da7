//! `cargo xtask web-test` — the web app's checks and browser tests, also run by `cargo xtask
//! test`: `npm ci` from the lockfile, the generated API types against the committed OpenAPI
//! document, ESLint, the type-checked production build (its size printed), then Playwright Test
//! driving Debian's Chromium against the real local stack on ports of its own (ministack, the
//! local runner with API, consumer and sweeper, the stand-in model server, `vite preview`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::fuzz::{spawn, start_model_and_api, wait_ready};
use crate::local_env::private_stack_env;
use crate::ministack::start_ministack_strict;
use crate::workspace::{cargo, root, run};

/// Debian's Chromium (Playwright's own browser download is not used).
pub const CHROMIUM: &str = "/usr/bin/chromium";

fn web_dir() -> PathBuf {
    root().join("web")
}

/// Installs Chromium from the distribution's packages when it is absent.
fn ensure_chromium() -> Result<()> {
    if std::path::Path::new(CHROMIUM).exists() {
        return Ok(());
    }
    eprintln!("xtask: installing chromium (apt-get)");
    run(Command::new("apt-get").args(["install", "-y", "--no-install-recommends", "chromium"]))
        .context("apt-get install chromium (needs root; or install it yourself)")
}

/// `npm ci` when the lockfile changed since the last install (a marker keeps its copy).
pub(crate) fn ensure_node_modules() -> Result<()> {
    let dir = web_dir();
    let lock = std::fs::read_to_string(dir.join("package-lock.json"))?;
    let marker = dir.join("node_modules").join(".atelier-lock");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == lock) {
        return Ok(());
    }
    run(Command::new("npm")
        .current_dir(&dir)
        .args(["ci", "--no-audit", "--no-fund"])
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"))
    .context("npm ci in web/ (is Node.js installed?)")?;
    std::fs::write(&marker, lock)?;
    Ok(())
}

/// The web app's development server for `cargo xtask dev` on its own origin (it calls the API
/// at `VITE_API_BASE_URL` of `web/.env.development`), stopped when dropped.
pub(crate) fn dev_server(log: &std::path::Path) -> Result<crate::fuzz::Service> {
    ensure_node_modules()?;
    let service = spawn(
        "vite",
        &mut vite(&["--strictPort", "--host", "127.0.0.1", "--port", "5173"]),
        log,
    )?;
    eprintln!(
        "xtask: web app on http://127.0.0.1:5173 (log: {})",
        log.display()
    );
    Ok(service)
}

/// The web app's origin under `cargo xtask dev`.
pub(crate) const DEV_ORIGIN: &str = "http://127.0.0.1:5173";

/// What the API needs to serve the web app at `origin`: the one place both `cargo xtask dev`
/// and the browser tests take it from, so a flow that passes in a test works for a person
/// (buying credits returns to the app's own origin; the API and the bucket allow that origin
/// by CORS, as a deployment's `WebOrigins` / `web_origins` does).
pub(crate) fn app_env(origin: &str) -> Vec<(String, String)> {
    vec![
        (
            "ATELIER_CHECKOUT_RETURN_URLS".to_owned(),
            format!("{origin}/"),
        ),
        ("ATELIER_LOCAL_WEB_ORIGINS".to_owned(), origin.to_owned()),
    ]
}

/// Vite itself (its script runs as the `node` process), not through `npm exec`: dropping the
/// service kills the process it started, and `npm exec` would leave its `sh` and `node`
/// children serving the port after the run.
fn vite(args: &[&str]) -> Command {
    let mut c = Command::new(web_dir().join("node_modules/.bin/vite"));
    c.current_dir(web_dir()).args(args);
    c
}

fn npm(args: &[&str]) -> Command {
    let mut c = Command::new("npm");
    c.current_dir(web_dir()).args(args);
    c
}

/// Runs everything; counts each browser test and each static check.
pub fn web_test(aws_port: u16) -> Result<crate::skips::Counts> {
    let started = Instant::now();
    ensure_chromium()?;
    ensure_node_modules()?;
    let (api_port, model_port, web_port) = (aws_port + 101, aws_port + 102, aws_port + 103);
    // The API is another origin than the app's, as in AWS (the stack output WebApiBaseUrl).
    let api_url = format!("http://127.0.0.1:{api_port}");
    let passed = static_checks(&api_url)?;

    run(cargo().current_dir(root()).args([
        "build",
        "--quiet",
        "-p",
        "atelier-local",
        "-p",
        "atelier-model-server",
    ]))?;
    let bin_dir = crate::workspace::target_dir().join("debug");
    let state = root().join("target").join(format!("xtask-web-{aws_port}"));
    let _ = std::fs::remove_dir_all(&state);
    std::fs::create_dir_all(&state)?;
    // IAM enforced, so ministack's S3 answers a browser only as the bucket's CORS rule allows
    // (without it, it allows every origin).
    let _ministack = start_ministack_strict(aws_port, &state.join("ministack"))?;
    let web_url = format!("http://127.0.0.1:{web_port}");
    let mut env = private_stack_env(aws_port, "atelier-web", api_port, model_port, &state);
    env.extend(app_env(&web_url));
    let (_model, _api) = start_model_and_api(&bin_dir, &env, &state, model_port, api_port)?;
    let mut web = spawn(
        "vite preview",
        &mut vite(&[
            "preview",
            "--strictPort",
            "--host",
            "127.0.0.1",
            "--port",
            &web_port.to_string(),
        ]),
        &state.join("vite.log"),
    )?;
    wait_ready(&mut web, web_port, "/", Duration::from_secs(60))?;

    let samples = state.join("samples");
    run(Command::new(bin_dir.join("atelier-model-server"))
        .arg("samples")
        .arg(&samples))?;
    let model_url = format!("http://127.0.0.1:{model_port}");
    let mut counts = playwright(&state, &web_url, &[&api_url, &model_url], &samples)?;
    eprintln!(
        "xtask: web tests finished in {:.1?} ({}; logs in {})",
        started.elapsed(),
        counts.line(),
        state.display()
    );
    counts.passed += passed;
    Ok(counts)
}

/// The generated types' freshness, eslint, the build, and no secret in the bundle: how many
/// passed (the first failure stops).
fn static_checks(api_url: &str) -> Result<u64> {
    let mut passed = 0;
    for (name, args) in [
        (
            "generated API types are current",
            &["run", "--silent", "check:api"][..],
        ),
        ("eslint", &["run", "--silent", "lint"][..]),
    ] {
        run(&mut npm(args)).with_context(|| format!("web: {name}"))?;
        passed += 1;
    }
    run(npm(&["run", "--silent", "build"]).env("VITE_API_BASE_URL", api_url))
        .context("web: build")?;
    passed += 1;
    eprintln!("xtask: web bundle {} bytes (dist/assets)", bundle_bytes()?);
    no_secret_in_bundle()?;
    passed += 1;
    Ok(passed)
}

/// The browser tests, counted from Playwright's report. A missing report or one that ran no
/// test fails; a skipped test is a skip (under `CI=true` a failure, `skips.rs`).
/// `[api_url, model_url]`: the API's origin, and the stand-in model's, whose answers a test
/// may script (a repair's comparison). `ATELIER_WEB_GREP` runs only the tests whose title
/// matches (Playwright's `--grep`), for a focused run.
fn playwright(
    state: &Path,
    web_url: &str,
    [api_url, model_url]: &[&str; 2],
    samples: &Path,
) -> Result<crate::skips::Counts> {
    let report = state.join("playwright.json");
    let _ = std::fs::remove_file(&report);
    // `ATELIER_WEB_GREP=regex` runs only the browser tests whose titles match (a focused run).
    let grep: Vec<String> = std::env::var("ATELIER_WEB_GREP")
        .map(|g| vec!["--grep".to_owned(), g])
        .unwrap_or_default();
    let status = npm(&["exec", "--", "playwright", "test"])
        .args(&grep)
        .env("ATELIER_WEB_URL", web_url)
        .env("ATELIER_API_URL", api_url)
        .env("ATELIER_MODEL_URL", model_url)
        .env("ATELIER_SAMPLES", samples)
        .env("PLAYWRIGHT_JSON_OUTPUT_NAME", &report)
        .status()
        .context("running playwright")?;
    let text = std::fs::read_to_string(&report)
        .with_context(|| format!("playwright wrote no report at {}", report.display()))?;
    let mut counts = playwright_counts(&text)?;
    if counts.failed > 0 {
        print_error_contexts(&web_dir().join("test-results"));
    }
    if !status.success() && counts.failed == 0 {
        bail!("playwright failed before reporting (see above)");
    }
    if counts.skipped > 0
        && crate::skips::count_skip(
            "browser-tests",
            &format!("{} browser tests skipped", counts.skipped),
        ) == crate::skips::Verdict::Failed
    {
        (counts.failed, counts.skipped) = (counts.failed + counts.skipped, 0);
    }
    Ok(counts)
}

/// Prints what the page showed when each failed test stopped (Playwright's `error-context.md`,
/// its accessibility snapshot): a CI log then says which screen a timed-out wait was on.
fn print_error_contexts(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.path().join("error-context.md");
        if let Ok(text) = std::fs::read_to_string(&file) {
            eprintln!("xtask: {}:\n{text}", file.display());
        }
    }
}

/// `expected`, `unexpected` (with `flaky`) and `skipped` from Playwright's JSON report's
/// `stats`; a report without them, or that ran no test, is an error.
fn playwright_counts(report: &str) -> Result<crate::skips::Counts> {
    let count = |key: &str| -> Result<u64> {
        report
            .rsplit_once(&format!("\"{key}\":"))
            .and_then(|(_, rest)| {
                rest.trim_start()
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|n| n.parse().ok())
            })
            .with_context(|| format!("playwright's report has no stats.{key}"))
    };
    let counts = crate::skips::Counts {
        passed: count("expected")?,
        failed: count("unexpected")? + count("flaky")?,
        skipped: count("skipped")?,
    };
    if counts.passed + counts.failed == 0 {
        bail!("playwright ran no test ({} skipped)", counts.skipped);
    }
    Ok(counts)
}

/// What must never ship to a browser: payment keys, webhook secrets, private keys, AWS keys.
const SECRET_MARKERS: [&str; 5] = ["sk_test_", "sk_live_", "whsec_", "PRIVATE KEY", "AKIA"];

fn no_secret_in_bundle() -> Result<()> {
    for e in std::fs::read_dir(web_dir().join("dist").join("assets"))? {
        let path = e?.path();
        let text = String::from_utf8_lossy(&std::fs::read(&path)?).into_owned();
        if let Some(m) = SECRET_MARKERS.iter().find(|m| text.contains(*m)) {
            bail!(
                "web: {} contains {m:?}: a secret in the bundle",
                path.display()
            );
        }
    }
    Ok(())
}

fn bundle_bytes() -> Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(web_dir().join("dist").join("assets"))? {
        total += e?.metadata()?.len();
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_that_ran_no_test_or_has_no_stats_fails() {
        let stats = |e: u64, u: u64, f: u64, s: u64| {
            format!(
                r#"{{"suites": [], "stats": {{"expected": {e}, "skipped": {s}, "unexpected": {u}, "flaky": {f}}}}}"#
            )
        };
        let c = playwright_counts(&stats(17, 1, 1, 2)).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!((c.passed, c.failed, c.skipped), (17, 2, 2));
        assert!(playwright_counts(&stats(0, 0, 0, 3)).is_err());
        assert!(playwright_counts("").is_err());
        assert!(playwright_counts(r#"{"stats": {"expected": 3}}"#).is_err());
    }
}
