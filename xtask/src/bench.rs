//! `cargo xtask bench [--jobs N] [--workers K] [--samples N] [--counted N] [--init-runs N]
//! [--image-runs N]`: starts a private ministack (port 4603, or `ATELIER_BENCH_PORT`) with
//! fresh state, builds the bench program (`tools/bench`) and the 12 MP example (release, its
//! path and codec floor are timed), and runs the bench with the local environment. It prints one markdown table (docs/benchmarks.md keeps the latest).
//!
//! The Lambda zips and release binaries are measured as `cargo xtask package` left them; the
//! bench never builds release itself.
//!
//! Then, in the same run, the tables that need the deployed local cloud (`bench_cloud.rs`:
//! the pipeline and the peer), unless `--no-cloud`. Flags are shared where both parts have
//! them (`--jobs`, `--samples`, `--counted`) and go to the one part that has them otherwise.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::local_env::local_env;
use crate::ministack::start_ministack;
use crate::workspace::{cargo, root, run};

const BENCH_PORT: u16 = 4603;

/// Flags only the in-process bench takes; only the cloud part takes; both take (a value each).
const LOCAL_FLAGS: [&str; 3] = ["--workers", "--init-runs", "--image-runs"];
const CLOUD_FLAGS: [&str; 3] = ["--model-ms", "--levels", "--cold-runs"];
const SHARED_FLAGS: [&str; 3] = ["--jobs", "--samples", "--counted"];

/// The arguments of each part, and whether the cloud part runs.
fn split_args(args: &[String]) -> Result<(Vec<String>, Vec<String>, bool)> {
    let (mut local, mut cloud, mut with_cloud) = (Vec::new(), Vec::new(), true);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--no-cloud" {
            with_cloud = false;
            continue;
        }
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        let pair = [flag.clone(), value.clone()];
        match flag.as_str() {
            f if LOCAL_FLAGS.contains(&f) => local.extend(pair),
            f if CLOUD_FLAGS.contains(&f) => cloud.extend(pair),
            f if SHARED_FLAGS.contains(&f) => {
                local.extend(pair.clone());
                cloud.extend(pair);
            }
            _ => anyhow::bail!(
                "usage: cargo xtask bench [--jobs N] [--workers K] [--samples N] [--counted N] \
                 [--init-runs N] [--image-runs N] [--model-ms L] [--levels 1,2,4] [--cold-runs N] [--no-cloud]"
            ),
        }
    }
    Ok((local, cloud, with_cloud))
}

/// `cargo xtask bench`: the in-process table, then the local cloud's (one run).
pub fn bench_all(args: &[String]) -> Result<ExitCode> {
    let (local, cloud, with_cloud) = split_args(args)?;
    if !bench(&local)? {
        return Ok(ExitCode::FAILURE);
    }
    if !with_cloud {
        return Ok(ExitCode::SUCCESS);
    }
    crate::bench_cloud::bench_cloud(&cloud)
}

/// The in-process bench; whether it succeeded.
fn bench(args: &[String]) -> Result<bool> {
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
    // The 12 MP path and its codec floor are timed in release, as the consumer runs them.
    run(cargo().current_dir(root()).args([
        "build",
        "--release",
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
    // Nor its few users' requests by the per-caller budget (the load curve measures the stack).
    env.push(("ATELIER_REQUESTS_PER_WINDOW".into(), "1000000".into()));
    let bin = crate::workspace::debug_bin("atelier-bench");
    let status = std::process::Command::new(&bin)
        .current_dir(root())
        .args(args)
        .envs(env)
        .status()
        .with_context(|| format!("running {}", bin.display()))?;
    Ok(status.success())
}

#[cfg(test)]
mod tests {
    use super::split_args;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn each_part_gets_its_own_flags_and_both_get_the_shared_ones() {
        let (local, cloud, with_cloud) = split_args(&strings(&[
            "--jobs",
            "8",
            "--init-runs",
            "9",
            "--model-ms",
            "500",
        ]))
        .unwrap();
        assert_eq!(local, strings(&["--jobs", "8", "--init-runs", "9"]));
        assert_eq!(cloud, strings(&["--jobs", "8", "--model-ms", "500"]));
        assert!(with_cloud);
    }

    #[test]
    fn no_cloud_skips_the_cloud_part_and_unknown_flags_are_refused() {
        let (_, _, with_cloud) = split_args(&strings(&["--no-cloud"])).unwrap();
        assert!(!with_cloud);
        assert!(split_args(&strings(&["--bogus", "1"])).is_err());
        assert!(split_args(&strings(&["--jobs"])).is_err());
    }
}
