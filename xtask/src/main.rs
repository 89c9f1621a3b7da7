//! Project automation, as cargo commands:
//!
//! - `cargo xtask dev`   — install and start the local AWS (ministack), create the resources,
//!   and serve the API on http://127.0.0.1:8787 with the dev JWT issuer.
//! - `cargo xtask test`  — install and start a private ministack, then run every test.
//! - `cargo xtask token --user NAME` — print a dev bearer token.
//! - `cargo xtask admin …` — run `atelier-admin` against the local stack.
//! - `cargo xtask ministack` — only start the local AWS and wait.
//! - `cargo xtask package [--arch x86_64|arm64]` — build the three Lambda zips (`package.rs`).
//! - `cargo xtask infra-test` — every offline check of `infra/` (`infra.rs`).
//! - `cargo xtask infra-schema` — refresh `infra/schema.json`, `infra/env-names.json` and `infra/models.json`
//!   (`infra.rs`).
//! - `cargo xtask fuzz [--requests N] [--seed S]` — schemathesis against the local API, then
//!   the audit (`fuzz.rs`).
//! - `cargo xtask cloud` — deploy the packaged functions with the CDK app to a private
//!   ministack (the local cloud, `cloud.rs`); `cargo xtask cloud-test` — and test it end to end.
//! - `cargo xtask bench [--jobs N] [--workers K] [--no-cloud]` — the benchmark table on a
//!   private local stack (`bench.rs`, the program in `tools/bench`), then the pipeline and peer
//!   tables on the deployed local cloud (`bench_cloud.rs`; alone: `cargo xtask bench-cloud`).
//!
//! - `cargo xtask mutants -f FILE… [--suite NAME]…` — cargo-mutants over `atelier-shared` with
//!   the integration suites on a private local stack (`mutants.rs`; not in CI).
//! - `cargo xtask fn-lengths [--ratchet]` — the longest functions; fails on one over the limit
//!   that `xtask/long-functions.txt` does not list (`fn_lengths.rs`).
//!
//! The standard library, `anyhow`, and `syn` for `fn-lengths`, so this builds in seconds on a fresh machine.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

mod bench;
mod bench_cloud;
mod cloud;
mod deny;
mod fn_lengths;
mod fuzz;
mod infra;
mod mutants;
mod package;
mod release;
mod skips;
mod tf_docs;
mod web;

/// The local AWS, pinned.
const MINISTACK: &str = "ministack==1.5.33";
/// OpenAI's official Python client, pinned, which `tools/model-server/tests/official_client.rs`
/// drives the stand-in model with (a venv of its own, `.venv/openai`). The test reads the same
/// file to check the version it ran.
const OFFICIAL_CLIENT_REQUIREMENTS: &str =
    include_str!("../../tools/model-server/tests/official_client.requirements.txt");
const DEV_PORT: u16 = 4566;
const TEST_PORT: u16 = 4599;
const API_PORT: u16 = 8787;

/// The workspace this command was run in: the nearest folder upwards from the current one
/// whose `Cargo.toml` declares `[workspace]`. Not the folder xtask was compiled in: two
/// checkouts sharing one `CARGO_TARGET_DIR` would otherwise run each other's code.
/// Cargo's target directory (`CARGO_TARGET_DIR` when set): where built binaries are.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// A binary of the debug build.
fn debug_bin(name: &str) -> PathBuf {
    target_dir().join("debug").join(name)
}

/// Where the tests record the AWS calls each function makes (the fault harness, the local
/// cloud's functions) for the IAM check of `infra/iam` (`infra.rs`).
fn iam_calls_dir() -> PathBuf {
    target_dir().join("iam-calls")
}

fn root() -> PathBuf {
    let compiled_in = || {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };
    let Ok(mut dir) = std::env::current_dir() else {
        return compiled_in();
    };
    loop {
        let manifest = dir.join("Cargo.toml");
        if std::fs::read_to_string(&manifest).is_ok_and(|m| m.contains("[workspace]")) {
            return dir;
        }
        if !dir.pop() {
            return compiled_in();
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("dev") => dev(),
        Some("test") => test(&args[1..]),
        Some("token") => token(&args[1..]),
        Some("admin") => admin(&args[1..]),
        Some("ministack") => ministack_only(),
        Some("package") => package::package(&args[1..]),
        Some("release") => release::release(&args[1..]),
        Some("infra-test") => infra::infra_test().map(|_| ExitCode::SUCCESS),
        Some("infra-schema") => infra::infra_schema(),
        Some("cloud") => cloud::cloud(),
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        Some("fn-lengths") => fn_lengths::fn_lengths(&args[1..]),
        Some("mutants") => mutants::mutants(&args[1..]),
        Some("deny") => deny::deny(),
        Some("web-test") => web_test_only(),
        Some("bench") => bench::bench_all(&args[1..]),
        Some("bench-cloud") => bench_cloud::bench_cloud(&args[1..]),
        Some("cloud-test") => cloud::cloud_test(false).map(|()| ExitCode::SUCCESS),
        _ => {
            eprintln!(
                "usage: cargo xtask <dev | test [cargo test args] | token --user NAME | admin ARGS | ministack | package [--arch x86_64|arm64] | release [--target T]... | infra-test | infra-schema | cloud | cloud-test | fuzz [--requests N] [--seed S] | fn-lengths [--ratchet] | deny | web-test | bench [--jobs N] [--workers K] [--model-ms L] [--no-cloud] | bench-cloud [--jobs N] [--model-ms L] | bench-cloud --chaos N [--seed S] | bench-cloud --flood RATE [--flood-secs N] | mutants -f FILE… [--suite NAME]…>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The environment every local process gets: dummy credentials (or the SDK falls through to
/// instance metadata), the endpoint, and the resource names for `prefix`.
fn local_env(port: u16, prefix: &str) -> Vec<(String, String)> {
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut env = vec![
        ("AWS_ACCESS_KEY_ID".into(), "test".into()),
        ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
        ("AWS_REGION".into(), "us-east-1".into()),
        ("AWS_ENDPOINT_URL".into(), endpoint.clone()),
        (
            "ATELIER_ACCOUNTS_TABLE".into(),
            format!("{prefix}-accounts"),
        ),
        ("ATELIER_LEDGER_TABLE".into(), format!("{prefix}-ledger")),
        ("ATELIER_JOBS_TABLE".into(), format!("{prefix}-jobs")),
        ("ATELIER_BUDGET_TABLE".into(), format!("{prefix}-budget")),
        (
            "ATELIER_ATTEMPTS_TABLE".into(),
            format!("{prefix}-attempts"),
        ),
        ("ATELIER_QUOTAS_TABLE".into(), format!("{prefix}-quotas")),
        (
            "ATELIER_PAYMENTS_TABLE".into(),
            format!("{prefix}-payments"),
        ),
        ("ATELIER_SIGNUPS_TABLE".into(), format!("{prefix}-signups")),
        (
            "ATELIER_WEBHOOKS_TABLE".into(),
            format!("{prefix}-webhooks"),
        ),
        // The key of the signup grant's address hashes: a local value (a deployment reads
        // its own from Secrets Manager, ATELIER_ADDRESS_KEY_SECRET_ID).
        (
            "ATELIER_ADDRESS_KEY".into(),
            "atelier-local-address-key-not-a-secret".into(),
        ),
        (
            "ATELIER_QUEUE_URL".into(),
            format!("{endpoint}/000000000000/{prefix}-jobs"),
        ),
        (
            "ATELIER_WEBHOOK_QUEUE_URL".into(),
            format!("{endpoint}/000000000000/{prefix}-webhooks"),
        ),
        ("ATELIER_BUCKET".into(), format!("{prefix}-assets")),
        (
            "ATELIER_STATE_DIR".into(),
            root().join(".atelier").display().to_string(),
        ),
        ("ATELIER_LOCAL_PORT".into(), API_PORT.to_string()),
        // Local runs' webhook receivers are on this machine; a deployment refuses them.
        ("ATELIER_WEBHOOK_PRIVATE_ADDRESSES".into(), "allow".into()),
    ];
    if prefix == "atelier-test" {
        // Tests share one UTC day: the cap must not be what stops them (the budget tests
        // use stacks of their own with small caps).
        env.push(("ATELIER_DAILY_CAP_MICROS".into(), "1000000000000".into()));
    }
    if std::env::var_os("AWS_LAMBDA_LOG_FORMAT").is_none() {
        env.push(("AWS_LAMBDA_LOG_FORMAT".into(), "Text".into()));
    }
    env
}

/// [`local_env`] for a private stack of one command (fuzz, web tests): the API on `api_port`,
/// the stand-in model on `model_port` as the model, and state in `state`.
fn private_stack_env(
    aws_port: u16,
    prefix: &str,
    api_port: u16,
    model_port: u16,
    state: &Path,
) -> Vec<(String, String)> {
    let mut env = local_env(aws_port, prefix);
    env.retain(|(k, _)| k != "ATELIER_LOCAL_PORT" && k != "ATELIER_STATE_DIR");
    env.extend([
        ("ATELIER_LOCAL_PORT".to_owned(), api_port.to_string()),
        (
            "ATELIER_MODEL_BASE_URL".to_owned(),
            format!("http://127.0.0.1:{model_port}"),
        ),
        ("ATELIER_STATE_DIR".to_owned(), state.display().to_string()),
    ]);
    env
}

fn venv() -> PathBuf {
    root().join(".venv")
}

/// Installs ministack into the project's virtual environment (once; a marker records the pin).
fn ensure_ministack() -> Result<PathBuf> {
    let venv = venv();
    let bin = venv.join("bin").join("ministack");
    let marker = venv.join(".atelier-pins");
    let pins = MINISTACK.to_owned();
    if bin.exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == pins) {
        return Ok(bin);
    }
    eprintln!("xtask: installing {MINISTACK} into {}", venv.display());
    if !venv.join("bin").join("python").exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))
            .context("python3 -m venv (is python3 installed?)")?;
    }
    run(Command::new(venv.join("bin").join("pip")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        MINISTACK,
    ]))?;
    std::fs::write(&marker, pins)?;
    Ok(bin)
}

/// Installs the official OpenAI client into `.venv/openai` (once; a marker records the pins) and
/// returns that venv's python.
fn ensure_official_client() -> Result<PathBuf> {
    ensure_requirements(
        "openai",
        ".atelier-openai-pins",
        OFFICIAL_CLIENT_REQUIREMENTS,
    )
}

/// Installs a requirements file's pins (comments and blank lines skipped) into
/// `.venv/<name>` and returns that venv's python.
fn ensure_requirements(name: &str, marker: &str, requirements: &str) -> Result<PathBuf> {
    let dir = venv().join(name);
    let pins: Vec<&str> = requirements
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    ensure_pip(&dir, marker, &pins)?;
    Ok(dir.join("bin").join("python"))
}

/// Stripe's official Node library, pinned, which `tests/tests/purchases.rs` drives against the
/// stand-in Stripe and the webhook (its test-signature helper is Node's alone).
const OFFICIAL_STRIPE: &str = include_str!("../../tests/official-stripe/requirement.txt");

/// Installs the official Stripe library into `.venv/stripe-node` (once; a marker records the
/// pin) and returns its `node_modules`.
fn ensure_official_stripe() -> Result<PathBuf> {
    let dir = venv().join("stripe-node");
    let pin = OFFICIAL_STRIPE.trim();
    let marker = dir.join(".atelier-stripe-pin");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == pin) {
        return Ok(dir.join("node_modules"));
    }
    std::fs::create_dir_all(&dir)?;
    eprintln!("xtask: installing {pin} into {}", dir.display());
    run(Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .arg(pin))
    .context("npm install (is Node.js installed?)")?;
    std::fs::write(&marker, pin)?;
    Ok(dir.join("node_modules"))
}

/// The official Standard Webhooks library, pinned, which `tests/tests/webhooks.rs` verifies
/// our signed deliveries with (a venv of its own, `.venv/standardwebhooks`).
const OFFICIAL_WEBHOOKS_REQUIREMENTS: &str =
    include_str!("../../tests/official-standardwebhooks/requirements.txt");

/// Installs the official Standard Webhooks library into `.venv/standardwebhooks` (once; a
/// marker records the pins) and returns that venv's python.
fn ensure_official_webhooks() -> Result<PathBuf> {
    ensure_requirements(
        "standardwebhooks",
        ".atelier-standardwebhooks-pins",
        OFFICIAL_WEBHOOKS_REQUIREMENTS,
    )
}

/// Apple's official App Store Server Library, pinned, which `tests/tests/apple_purchases.rs`
/// verifies the stand-in App Store's signed data with (a venv of its own, `.venv/app-store`).
const OFFICIAL_APP_STORE_REQUIREMENTS: &str =
    include_str!("../../tests/official-app-store/requirements.txt");

fn ensure_official_app_store() -> Result<PathBuf> {
    ensure_requirements(
        "app-store",
        ".atelier-app-store-pins",
        OFFICIAL_APP_STORE_REQUIREMENTS,
    )
}

/// The OpenAPI Generator, pinned, which `tests/tests/java_client.rs` makes the Java client
/// for app developers with (a venv of its own, `.venv/openapi-generator`; the JDK is the
/// machine's).
const OPENAPI_GENERATOR_REQUIREMENTS: &str = include_str!("../../clients/java/requirements.txt");

fn ensure_openapi_generator() -> Result<PathBuf> {
    // The generated client is compiled and run with a JDK: Debian's, when there is none.
    if Command::new("javac").arg("-version").output().is_err() {
        eprintln!("xtask: installing a JDK (apt-get)");
        run(Command::new("apt-get").args(["install", "-y", "-q", "default-jdk-headless"]))
            .context("apt-get install default-jdk-headless (needs root; or install a JDK)")?;
    }
    ensure_requirements(
        "openapi-generator",
        ".atelier-openapi-generator-pins",
        OPENAPI_GENERATOR_REQUIREMENTS,
    )
}

/// A Secret Service for the CLI's keychain test (`tests/src/keychain.rs`): Debian's D-Bus,
/// GNOME Keyring and libsecret's `secret-tool`, when any is missing.
fn ensure_secret_service() -> Result<()> {
    let present = |tool: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ["dbus-daemon", "gnome-keyring-daemon", "secret-tool"]
        .iter()
        .all(|t| present(t))
    {
        return Ok(());
    }
    eprintln!("xtask: installing a Secret Service (apt-get)");
    let packages = ["dbus-daemon", "gnome-keyring", "libsecret-tools"];
    run(Command::new("apt-get")
        .args(["install", "-y", "-q", "--no-install-recommends"])
        .args(packages))
    .context("apt-get install dbus-daemon gnome-keyring libsecret-tools (needs root)")
}

/// The push services' client libraries, pinned (`firebase-admin`, `aioapns`), which
/// `tests/tests/push_official.rs` drives against the stand-in APNs and FCM (a venv of its own,
/// `.venv/push`).
const OFFICIAL_PUSH_REQUIREMENTS: &str = include_str!("../../tests/official-push/requirements.txt");

fn ensure_official_push() -> Result<PathBuf> {
    ensure_requirements("push", ".atelier-push-pins", OFFICIAL_PUSH_REQUIREMENTS)
}

/// Google's official Python clients (google-api-python-client, google-auth), pinned, which
/// `tests/tests/google_purchases.rs` proves the stand-in Google Play with (a venv of its own,
/// `.venv/google`).
const OFFICIAL_GOOGLE_REQUIREMENTS: &str =
    include_str!("../../tests/official-google/requirements.txt");

fn ensure_official_google() -> Result<PathBuf> {
    ensure_requirements(
        "google",
        ".atelier-google-pins",
        OFFICIAL_GOOGLE_REQUIREMENTS,
    )
}

/// Authlib, a maintained OpenID Connect client, pinned, which `tests/tests/oidc.rs` signs in
/// at the local issuer with (a venv of its own, `.venv/authlib`).
const OFFICIAL_AUTHLIB_REQUIREMENTS: &str =
    include_str!("../../tests/official-authlib/requirements.txt");

fn ensure_official_authlib() -> Result<PathBuf> {
    ensure_requirements(
        "authlib",
        ".atelier-authlib-pins",
        OFFICIAL_AUTHLIB_REQUIREMENTS,
    )
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Installs `pins` into the venv at `dir` (created when missing). A marker file named
/// `marker` records what was installed, so a second call costs nothing.
fn ensure_pip(dir: &Path, marker: &str, pins: &[&str]) -> Result<()> {
    let marker = dir.join(marker);
    let wanted = pins.join("\n");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
        return Ok(());
    }
    if !dir.join("bin").join("python").exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(dir))
            .context("python3 -m venv (is python3 installed?)")?;
    }
    eprintln!(
        "xtask: installing {} into {}",
        pins.join(" "),
        dir.display()
    );
    run(Command::new(dir.join("bin").join("pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(pins))?;
    std::fs::write(&marker, wanted)?;
    Ok(())
}

fn healthy(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(300))
    else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!(
        "GET /_ministack/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200") || buf.starts_with("HTTP/1.0 200")
}

/// A ministack process that is stopped when dropped.
struct Ministack {
    child: Option<Child>,
}

impl Drop for Ministack {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn start_ministack(port: u16, state: &Path) -> Result<Ministack> {
    start_ministack_with(port, state, false)
}

/// ministack with IAM enforced (`AUTH=true`; the local runner's root credentials may do
/// anything): its S3 then answers browsers by the bucket's CORS rule, as S3 does, instead of
/// allowing every origin. For the browser tests and `cargo xtask dev`.
fn start_ministack_strict(port: u16, state: &Path) -> Result<Ministack> {
    start_ministack_with(port, state, true)
}

fn start_ministack_with(port: u16, state: &Path, auth: bool) -> Result<Ministack> {
    let bin = ensure_ministack()?;
    if healthy(port) {
        eprintln!("xtask: ministack already answering on 127.0.0.1:{port}; using it");
        return Ok(Ministack { child: None });
    }
    std::fs::create_dir_all(state)?;
    let log = std::fs::File::create(state.join("ministack.log"))?;
    let child = Command::new(bin)
        .env("AUTH", if auth { "true" } else { "false" })
        .env("TMPDIR", state)
        .env("BIND_HOST", "127.0.0.1")
        .env("GATEWAY_PORT", port.to_string())
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log))
        .spawn()
        .context("starting ministack")?;
    let guard = Ministack { child: Some(child) };
    let start = Instant::now();
    while !healthy(port) {
        if start.elapsed() > Duration::from_secs(30) {
            bail!(
                "ministack did not become healthy on port {port} (log: {})",
                state.join("ministack.log").display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "xtask: ministack ready on 127.0.0.1:{port} in {:?}",
        start.elapsed()
    );
    Ok(guard)
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn dev() -> Result<ExitCode> {
    let _ministack = start_ministack_strict(DEV_PORT, &root().join(".atelier").join("ministack"))?;
    let _web = web::dev_server(&root().join(".atelier").join("vite.log"))?;
    let status = cargo()
        .current_dir(root())
        .args([
            "run",
            "--quiet",
            "--package",
            "atelier-local",
            "--",
            "serve",
        ])
        .envs(local_env(DEV_PORT, "atelier-local"))
        .envs(web::app_env(web::DEV_ORIGIN))
        .status()?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The test stack's port: 4599, or `ATELIER_TEST_PORT` so that two test runs on one machine
/// (two worktrees, two people) do not stop each other's local AWS.
fn test_port() -> u16 {
    std::env::var("ATELIER_TEST_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(TEST_PORT)
}

fn test(extra: &[String]) -> Result<ExitCode> {
    let port = test_port();
    let state = root()
        .join("target")
        .join(format!("xtask-ministack-{port}"));
    let _ = std::fs::remove_dir_all(&state);
    // One build of every target (tests, binaries, examples) with one feature set: the tests
    // and the binaries the infra checks run then share it instead of compiling twice.
    // A filtered run (`cargo xtask test -- -p x --test y`) builds only what it runs.
    if extra.is_empty() {
        run(cargo()
            .current_dir(root())
            .args(["build", "--workspace", "--all-targets"]))?;
        // The IAM check reads only what this run records.
        let _ = std::fs::remove_dir_all(iam_calls_dir());
    }
    let _ministack = start_ministack(port, &state)?;
    let started = Instant::now();
    // `cargo xtask test -- -p atelier-tests --test repairs` and without the `--` both work.
    let extra: Vec<String> = match extra.first().map(String::as_str) {
        Some("--") => extra[1..].to_vec(),
        _ => extra.to_vec(),
    };
    let packages = extra.iter().any(|a| a == "-p" || a == "--package");
    let scope: &[&str] = if packages { &[] } else { &["--workspace"] };
    let (mut ok, rust) = cargo_test(scope, &extra, &test_env(port)?)?;
    eprintln!("xtask: tests finished in {:.1?}", started.elapsed());
    drop(_ministack);
    let mut counts = rust.counts;
    if extra.is_empty() {
        // The ignored tests that name `cargo xtask cloud-test` run there, counted below.
        counts.skipped -= rust.run_by_cloud_test;
    }
    if counts.skipped > 0
        && skips::count_skip(
            "ignored-rust-tests",
            &format!("{} Rust tests ignored", counts.skipped),
        ) == skips::Verdict::Failed
    {
        (counts.failed, counts.skipped, ok) = (counts.failed + counts.skipped, 0, false);
    }
    if extra.is_empty() {
        let other = other_runners(port);
        ok &= other.failed == 0;
        counts.add(other);
    }
    // One plain closing line for every runner's results together.
    println!("{}", counts.line());
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The test stack's environment, with the official clients' installs the tests drive.
fn test_env(port: u16) -> Result<Vec<(String, String)>> {
    // The stand-in's check against the provider's own client runs with this venv's python.
    let mut env = local_env(port, "atelier-test");
    env.push((
        "ATELIER_OPENAI_PYTHON".into(),
        ensure_official_client()?.display().to_string(),
    ));
    env.push((
        "ATELIER_STRIPE_NODE_MODULES".into(),
        ensure_official_stripe()?.display().to_string(),
    ));
    env.push((
        "ATELIER_STANDARDWEBHOOKS_PYTHON".into(),
        ensure_official_webhooks()?.display().to_string(),
    ));
    env.push((
        "ATELIER_AUTHLIB_PYTHON".into(),
        ensure_official_authlib()?.display().to_string(),
    ));
    env.push((
        "ATELIER_APP_STORE_PYTHON".into(),
        ensure_official_app_store()?.display().to_string(),
    ));
    env.push((
        "ATELIER_OPENAPI_GENERATOR_PYTHON".into(),
        ensure_openapi_generator()?.display().to_string(),
    ));
    env.push((
        "ATELIER_PUSH_PYTHON".into(),
        ensure_official_push()?.display().to_string(),
    ));
    env.push((
        "ATELIER_GOOGLE_PYTHON".into(),
        ensure_official_google()?.display().to_string(),
    ));
    ensure_secret_service()?;
    env.push((
        "ATELIER_IAM_CALLS".into(),
        iam_calls_dir().display().to_string(),
    ));
    Ok(env)
}

/// Everything after the Rust tests of a full run, counted.
fn other_runners(port: u16) -> skips::Counts {
    let mut counts = skips::Counts::default();
    let mut count = |what: &str, result: Result<u64>| match result {
        Ok(skipped) => {
            counts.passed += 1;
            counts.skipped += skipped;
        }
        Err(e) => {
            eprintln!("xtask: {what} failed: {e:#}");
            counts.failed += 1;
        }
    };
    // The local cloud's end-to-end test (the release zips deployed by the CDK app to a private
    // ministack, then used through the deployed API) counts as one more, likewise.
    count("cloud-test", cloud::cloud_test(true).map(|()| 0));
    // The infrastructure's offline checks (synth, assertions, cdk-nag, cfn-lint, checkov, the
    // drift guard, and the IAM check of the calls the tests and the local cloud recorded, so
    // after both) count as one more test, unless only some Rust tests were asked for.
    // Built above with every target's features, so this is not a second compile.
    let _ = infra::ADMIN_BIN.set(debug_bin("atelier-admin"));
    count("infra-test", infra::infra_test());
    // The web app's checks and browser tests against a fresh stack on the same port.
    match web::web_test(port) {
        Ok(web) => counts.add(web),
        Err(e) => {
            eprintln!("xtask: web-test failed: {e:#}");
            counts.failed += 1;
        }
    }
    counts
}

/// What `cargo test` reported: its counts (ignored tests as skipped), and how many of the
/// ignored name `cargo xtask cloud-test`, the runner that runs them.
#[derive(Debug, Default, PartialEq, Eq)]
struct RustTests {
    counts: skips::Counts,
    run_by_cloud_test: u64,
}

impl RustTests {
    /// Adds one line of `cargo test`'s output: a `test result:` line's counts, and each
    /// `test NAME ... ignored[, reason]` line.
    fn read(&mut self, line: &str) {
        if line.starts_with("test ") && line.contains(" ... ignored") {
            if line.contains("cargo xtask cloud-test") {
                self.run_by_cloud_test += 1;
            }
            return;
        }
        let Some(rest) = line.strip_prefix("test result: ") else {
            return;
        };
        let count = |word: &str| -> u64 {
            rest.split(';')
                .find_map(|part| {
                    let part = part
                        .trim()
                        .trim_start_matches("ok. ")
                        .trim_start_matches("FAILED. ");
                    part.strip_suffix(word)
                })
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0)
        };
        self.counts.passed += count(" passed");
        self.counts.failed += count(" failed");
        self.counts.skipped += count(" ignored");
    }
}

/// Runs `cargo test`, echoing its output and adding up its `test result:` lines.
fn cargo_test(
    args: &[&str],
    extra: &[String],
    env: &[(String, String)],
) -> Result<(bool, RustTests)> {
    use std::io::{BufRead, BufReader};
    let mut child = cargo()
        .current_dir(root())
        .arg("test")
        // One failing suite does not hide the others' results: every suite runs, and the
        // closing line counts them all.
        .arg("--no-fail-fast")
        .args(args)
        .args(extra)
        .envs(env.iter().cloned())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting cargo test")?;
    let mut rust = RustTests::default();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line?;
            println!("{line}");
            rust.read(&line);
        }
    }
    let status = child.wait()?;
    Ok((status.success() && rust.counts.failed == 0, rust))
}

fn token(args: &[String]) -> Result<ExitCode> {
    let status = cargo()
        .current_dir(root())
        .args([
            "run",
            "--quiet",
            "--package",
            "atelier-local",
            "--",
            "token",
        ])
        .args(args)
        .envs(local_env(DEV_PORT, "atelier-local"))
        .status()?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn admin(args: &[String]) -> Result<ExitCode> {
    let status = cargo()
        .current_dir(root())
        .args(["run", "--quiet", "--package", "atelier-admin", "--"])
        .args(args)
        .envs(local_env(DEV_PORT, "atelier-local"))
        .status()?;
    Ok(ExitCode::from(
        status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(1),
    ))
}

/// `cargo xtask web-test`: only the web app's checks and browser tests.
fn web_test_only() -> Result<ExitCode> {
    let counts = web::web_test(test_port())?;
    println!("{}", counts.line());
    Ok(if counts.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn ministack_only() -> Result<ExitCode> {
    let _ministack = start_ministack_strict(DEV_PORT, &root().join(".atelier").join("ministack"))?;
    eprintln!("xtask: ministack on http://127.0.0.1:{DEV_PORT}; Ctrl-C to stop");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_tests_ignored_count_as_skipped_and_the_cloud_tests_are_named() {
        let mut rust = RustTests::default();
        for line in [
            "test a_test ... ok",
            "test deployed_edit ... ignored, needs the local cloud: cargo xtask cloud-test",
            "test forgotten ... ignored",
            "test result: ok. 3 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 1.0s",
            "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
        ] {
            rust.read(line);
        }
        assert_eq!(
            rust,
            RustTests {
                counts: skips::Counts {
                    passed: 4,
                    failed: 1,
                    skipped: 2
                },
                run_by_cloud_test: 1,
            }
        );
    }
}
