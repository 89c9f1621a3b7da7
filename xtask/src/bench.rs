//! `cargo xtask bench [--jobs N] [--workers K] [--samples N] [--counted N] [--init-runs N]`:
//! starts a private ministack (port 4603, or `ATELIER_BENCH_PORT`) with fresh state, builds
//! the bench program (`tools/bench`) and the 12 MP example, and runs the bench with the local
//! environment. It prints one markdown table (README "Benchmarks" keeps the latest).
//!
//! The Lambda zips and release binaries are measured as `cargo xtask package` left them; the
//! bench never builds release itself.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::{cargo, local_env, root, run, start_ministack};

const BENCH_PORT: u16 = 4603;

pub fn bench(args: &[String]) -> Result<ExitCode> {
    let port = std::env::var("ATELIER_BENCH_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(BENCH_PORT);
    // The consumer's image work is generic code instantiated in `atelier-shared`, which the
    // dev profile leaves unoptimised (10-50x slower): optimise that crate for the bench only,
    // or jobs per second would measure the debug build.
    run(cargo()
        .current_dir(root())
        .env("CARGO_PROFILE_DEV_PACKAGE_ATELIER_SHARED_OPT_LEVEL", "3")
        .args(["build", "-p", "atelier-bench"]))?;
    run(cargo().current_dir(root()).args([
        "build",
        "-p",
        "atelier-model-server",
        "--example",
        "imaging_12mp",
    ]))?;
    let state = root()
        .join("target")
        .join(format!("xtask-ministack-{port}"));
    let _ = std::fs::remove_dir_all(&state);
    let _ministack = start_ministack(port, &state)?;
    let mut env = local_env(port, "atelier-bench");
    // The bench's jobs must not be stopped by the day's cap.
    env.push(("ATELIER_DAILY_CAP_MICROS".into(), "1000000000000".into()));
    let bin = crate::debug_bin("atelier-bench");
    let status = std::process::Command::new(&bin)
        .current_dir(root())
        .args(args)
        .envs(env)
        .status()
        .with_context(|| format!("running {}", bin.display()))?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
