//! `cargo xtask test` (every runner on a private stack, one closing count) and
//! `cargo xtask web-test`.

use std::process::{ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::local_env::local_env;
use crate::ministack::start_ministack;
use crate::official::{
    ensure_official_app_store, ensure_official_authlib, ensure_official_c2pa,
    ensure_official_client, ensure_official_google, ensure_official_push, ensure_official_stripe,
    ensure_official_webhooks, ensure_openapi_generator, ensure_secret_service,
};
use crate::workspace::{cargo, debug_bin, iam_calls_dir, root, run};
use crate::{cloud, infra, skips, web};

const TEST_PORT: u16 = 4599;

/// The test stack's port: 4599, or `ATELIER_TEST_PORT` so that two test runs on one machine
/// (two worktrees, two people) do not stop each other's local AWS.
pub(crate) fn test_port() -> u16 {
    std::env::var("ATELIER_TEST_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(TEST_PORT)
}

pub(crate) fn test(extra: &[String]) -> Result<ExitCode> {
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
pub(crate) fn test_env(port: u16) -> Result<Vec<(String, String)>> {
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
        "ATELIER_C2PA_PYTHON".into(),
        ensure_official_c2pa()?.display().to_string(),
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

/// `cargo xtask web-test`: only the web app's checks and browser tests.
pub(crate) fn web_test_only() -> Result<ExitCode> {
    let counts = web::web_test(test_port())?;
    println!("{}", counts.line());
    Ok(if counts.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
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
