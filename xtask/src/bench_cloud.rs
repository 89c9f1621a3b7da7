//! `cargo xtask bench-cloud [--jobs N] [--model-ms L] [--levels 1,2,4] [--samples N]
//! [--counted N] [--cold-runs N]`: the benchmarks that need the deployed local cloud (issue 18,
//! items 4 and 5), in one run on one ministack. It is a command of its own, not a part of
//! `cargo xtask bench`: it deploys the release zips with the CDK app (`cargo xtask cloud`'s
//! code, its ports: `ATELIER_CLOUD_PORT`), which the in-process bench never needs. Like
//! `cargo xtask bench`, it never builds release itself: it deploys the zips `cargo xtask
//! package` left in `target/lambda-dist/x86_64/`.
//!
//! 1. The pipeline (`tools/bench/cloud/pipeline.py`): N jobs through the deployed HTTP API,
//!    consumed by the deployed consumer through the SQS event source, the stand-in model at a
//!    fixed latency per call, at consumer concurrency 1, 2 and 4.
//! 2. The peer: the same paid submit as a Python handler on Powertools' idempotency utility
//!    (`tools/bench/cloud/peer_handler.py`, pinned in `requirements.txt`, installed into
//!    `.venv/peer`), measured by `peer_bench.py` beside ours (`atelier-bench --peer-ours`):
//!    calls on the wire proxy, latency, the 64-same-key storm, the race for a balance of 37, a
//!    failure after the commit, and first invokes of both as functions on the local cloud.
//!
//! Prints two markdown tables (docs/benchmarks.md: "Pipeline" and "Peer").
//!
//! With `--load 10,50,100,200 [--load-secs N]` it runs instead the API under load (issue 33,
//! item 3; `tools/bench/cloud/load.py`, locust pinned in `load-requirements.txt`, installed
//! into `.venv/load`): the same zips deployed with IAM enforced (as `cargo xtask cloud`), one
//! level of concurrent customers after another, each level's figures, the CPU by process
//! group and `atelier-admin audit` on the deployed tables (docs/benchmarks.md: "The API under
//! load"). Not in CI: a run takes minutes.
//!
//! With `--chaos N [--seed S]` it runs the fault harness on the deployed stack (issue 33, item
//! 4b; `tools/bench/cloud/chaos.py`): the same zips deployed with IAM enforced, N paid edits
//! with client retries of one key, the stand-in model's faults, duplicate queue messages, the
//! consumer's process killed mid-edit, and seeded wire faults between each function and AWS
//! (each function's own `atelier-wire-proxy`, as `cargo xtask cloud-test` records them, here
//! injecting too), the sweeper invoked through the Lambda API, then the
//! money invariants and `atelier-admin audit` (docs/benchmarks.md: "The fault harness on the
//! deployed stack"). Exits non-zero on any violation. Not in CI: 1,000 jobs take most of an hour.
//!
//! With `--flood RATE [--flood-secs N]` one token sends RATE requests/s for N s while another
//! person's journey runs and a Stripe payment arrives (issue 47, item 3;
//! `tools/bench/cloud/flood.py`): each step idle and under the flood, the flooder's answers,
//! the pack granted once, the audit (docs/benchmarks.md: "One caller's flood").

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cloud;
use crate::local_env::local_env;
use crate::venv::{ensure_pip, venv};
use crate::workspace::{debug_bin, root, run};

const PEER_REQUIREMENTS: &str = include_str!("../../tools/bench/cloud/requirements.txt");
const LOAD_REQUIREMENTS: &str = include_str!("../../tools/bench/cloud/load-requirements.txt");

struct Args {
    jobs: usize,
    model_ms: u64,
    levels: String,
    samples: usize,
    counted: usize,
    cold_runs: usize,
    /// `--load`: the load levels (concurrent customers); none: the pipeline and the peer.
    load: Option<String>,
    load_secs: usize,
    /// `--chaos`: the fault harness's jobs on the deployed stack.
    chaos: Option<usize>,
    seed: u64,
    /// `--flood`: one caller's requests per second beside another's journey.
    flood: Option<usize>,
    flood_secs: usize,
}

fn args(argv: &[String]) -> Result<Args> {
    let mut a = Args {
        jobs: 8,
        model_ms: 500,
        levels: "1,2,4".into(),
        samples: 40,
        counted: 10,
        cold_runs: 3,
        load: None,
        load_secs: 60,
        chaos: None,
        seed: 33,
        flood: None,
        flood_secs: 60,
    };
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<usize>()
                .with_context(|| format!("{flag} takes a number"))
        };
        match flag.as_str() {
            "--jobs" => a.jobs = number()?,
            "--model-ms" => a.model_ms = number()? as u64,
            "--levels" => a.levels = value.clone(),
            "--samples" => a.samples = number()?,
            "--counted" => a.counted = number()?,
            "--cold-runs" => a.cold_runs = number()?,
            "--load" => a.load = Some(levels(value)?),
            "--load-secs" => a.load_secs = number()?,
            "--chaos" => a.chaos = Some(number()?),
            "--seed" => a.seed = number()? as u64,
            "--flood" => a.flood = Some(number()?),
            "--flood-secs" => a.flood_secs = number()?,
            _ => bail!(
                "usage: cargo xtask bench-cloud [--jobs N] [--model-ms L] [--levels 1,2,4] \
                 [--samples N] [--counted N] [--cold-runs N] | --load 10,50,100,200 \
                 [--load-secs N] | --chaos N [--seed S] | --flood RATE [--flood-secs N]"
            ),
        }
    }
    Ok(a)
}

/// `--load`'s levels: positive numbers, comma-separated.
fn levels(value: &str) -> Result<String> {
    for level in value.split(',') {
        match level.trim().parse::<usize>() {
            Ok(n) if n > 0 => {}
            _ => bail!("--load takes levels such as 10,50,100,200, not {value:?}"),
        }
    }
    Ok(value.replace(' ', ""))
}

/// The pinned lines of a requirements file.
fn pins(requirements: &str) -> Vec<&str> {
    requirements
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// The release zips `cargo xtask package` left, or why not.
fn dist() -> Result<PathBuf> {
    let dist = crate::package::dist(crate::package::Arch::X86_64);
    for f in crate::package::FUNCTIONS {
        let zip = dist.join(f).join("bootstrap.zip");
        if !zip.exists() {
            bail!(
                "{} is missing: run `cargo xtask package` first",
                zip.display()
            );
        }
    }
    Ok(dist)
}

pub fn bench_cloud(argv: &[String]) -> Result<ExitCode> {
    let a = args(argv)?;
    if let Some(levels) = &a.load {
        return load(levels, a.load_secs);
    }
    if let Some(jobs) = a.chaos {
        return chaos(jobs, a.seed);
    }
    if let Some(rate) = a.flood {
        return flood(rate, a.flood_secs);
    }
    let peer_venv = venv().join("peer");
    ensure_pip(&peer_venv, ".atelier-peer-pins", &pins(PEER_REQUIREMENTS))?;
    let dist = dist()?;
    cloud::build_host_tools()?;
    let cloud = cloud::deploy_zips(Some(dist.clone()), cloud::Iam::Off)?;
    let bench = Bench {
        cloud: &cloud,
        python: peer_venv.join("bin").join("python"),
        dir: root().join("tools").join("bench").join("cloud"),
        out: cloud.state().join("bench"),
        args: &a,
    };
    std::fs::create_dir_all(&bench.out)?;
    run(Command::new(debug_bin("atelier-model-server"))
        .arg("samples")
        .arg(&bench.out)
        .stdout(Stdio::null()))?;
    let pipeline = bench.pipeline()?;
    let ours = bench.ours()?;
    let peer_table = bench.peer_table(&ours, &dist, &peer_venv)?;
    println!("\n### Pipeline\n\n| what | figure | how |\n|---|---|---|\n{pipeline}");
    println!("\n### Peer\n\n{peer_table}");
    drop(cloud);
    Ok(ExitCode::SUCCESS)
}

/// The API under load (`tools/bench/cloud/load.py`): prints its tables.
fn load(levels: &str, secs: usize) -> Result<ExitCode> {
    let python = load_python()?;
    let (cloud, out) = deploy_enforced()?;
    eprintln!("xtask: bench-cloud: the API under load, levels {levels}, {secs} s each");
    let mut cmd = driver(&python, "load.py", &cloud);
    cmd.arg(cloud.api_url())
        .arg(cloud.issuer_url())
        .arg(cloud.outputs_file())
        .arg(out.join("single_pet.png"))
        .arg(debug_bin("atelier-admin"))
        .arg(cloud::STACK)
        .arg(levels)
        .arg(secs.to_string());
    let tables = output(&mut cmd).context("the load bench")?;
    println!("\n### The API under load\n\n{tables}");
    drop(cloud);
    Ok(ExitCode::SUCCESS)
}

/// One caller's flood beside another's journey (`tools/bench/cloud/flood.py`): prints its
/// table; fails when the person's journey broke, the pack was not granted once, or the audit
/// found anything.
fn flood(rate: usize, secs: usize) -> Result<ExitCode> {
    let python = load_python()?;
    let (cloud, out) = deploy_enforced()?;
    eprintln!("xtask: bench-cloud: one caller at {rate} requests/s for {secs} s beside a journey");
    let mut cmd = driver(&python, "flood.py", &cloud);
    cmd.arg(cloud.api_url())
        .arg(cloud.issuer_url())
        .arg(out.join("single_pet.png"))
        .arg(debug_bin("atelier-admin"))
        .arg(cloud::STACK)
        .arg(rate.to_string())
        .arg(secs.to_string())
        .env("FLOOD_STRIPE_WEBHOOK_SECRET", cloud::STRIPE_WEBHOOK_SECRET);
    let status = cmd.stderr(Stdio::inherit()).status()?;
    drop(cloud);
    Ok(verdict(status, "the flood broke something"))
}

/// The load venv's python (locust and gevent, pinned), installed when absent.
fn load_python() -> Result<PathBuf> {
    let load_venv = venv().join("load");
    ensure_pip(&load_venv, ".atelier-load-pins", &pins(LOAD_REQUIREMENTS))?;
    Ok(load_venv.join("bin").join("python"))
}

/// A driver's exit as the command's, saying what failed.
fn verdict(status: std::process::ExitStatus, failed: &str) -> ExitCode {
    if status.success() {
        ExitCode::SUCCESS
    } else {
        eprintln!("xtask: bench-cloud: {failed} ({status})");
        ExitCode::FAILURE
    }
}

/// The wire faults between each deployed function and DynamoDB, SQS, S3 and Secrets Manager:
/// the in-process harness's kinds and rates (`tests/tests/chaos.rs`), drawn by each function's
/// proxy from the run's seed. A dropped reply after a `TransactWriteItems` the emulator
/// answered 200 is the lost reply after a committed transaction.
const WIRE_FAULTS: [(&str, f64); 6] = [
    ("transaction_conflict", 0.03),
    ("throttling", 0.02),
    ("provisioned_throughput_exceeded", 0.01),
    ("internal_error", 0.01),
    ("drop_after_forward", 0.01),
    ("latency", 0.02),
];

/// The fault harness on the deployed stack (`tools/bench/cloud/chaos.py`): prints its
/// figures; fails when it found a violation.
fn chaos(jobs: usize, seed: u64) -> Result<ExitCode> {
    let (mut cloud, out) = deploy_enforced()?;
    let faults = cloud::WireFaults {
        seed,
        rates: &WIRE_FAULTS,
    };
    let dir = cloud.state().join("wire");
    let proxies = cloud::route_through_proxies(&mut cloud, &dir, Some(&faults))?;
    eprintln!(
        "xtask: bench-cloud: the fault harness, {jobs} jobs, seed {seed}, through {proxies:?}"
    );
    let rates: Vec<String> = WIRE_FAULTS
        .iter()
        .map(|(k, r)| format!("{k}={r}"))
        .collect();
    // botocore is ministack's own dependency: the driver needs nothing more installed.
    let mut cmd = driver(&venv().join("bin").join("python"), "chaos.py", &cloud);
    cmd.arg(cloud.api_url())
        .arg(cloud.issuer_url())
        .arg(cloud.model_url())
        .arg(cloud.outputs_file())
        .arg(out.join("single_pet.png"))
        .arg(debug_bin("atelier-admin"))
        .arg(cloud::STACK)
        .arg(jobs.to_string())
        .arg(seed.to_string())
        .env("CHAOS_PROXIES", proxies.join(","))
        .env("CHAOS_WIRE_RATES", rates.join(","));
    let status = cmd.stderr(Stdio::inherit()).status()?;
    drop(cloud);
    Ok(verdict(status, "the fault harness failed"))
}

/// The release zips deployed with IAM enforced (as `cargo xtask cloud`), and the stand-in's
/// sample photos in the run's output folder.
fn deploy_enforced() -> Result<(cloud::Cloud, PathBuf)> {
    let dist = dist()?;
    cloud::build_host_tools()?;
    let cloud = cloud::deploy_zips(Some(dist), cloud::Iam::Enforced)?;
    let out = cloud.state().join("bench");
    std::fs::create_dir_all(&out)?;
    run(Command::new(debug_bin("atelier-model-server"))
        .arg("samples")
        .arg(&out)
        .stdout(Stdio::null()))?;
    Ok((cloud, out))
}

/// `python tools/bench/cloud/<script>` with the local cloud's AWS environment.
fn driver(python: &Path, script: &str, cloud: &cloud::Cloud) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg(
        root()
            .join("tools")
            .join("bench")
            .join("cloud")
            .join(script),
    );
    // The operator's admin tool finds the deployment by the stack's outputs, as in the cloud
    // end-to-end test: no ATELIER_* variable of this shell may point it elsewhere.
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("ATELIER_")) {
            cmd.env_remove(k);
        }
    }
    cloud.aws(&mut cmd);
    cmd.env("GATEWAY_PORT", cloud.aws_port().to_string());
    cmd
}

/// One run's deployed cloud, its peer venv's python, the scripts' folder and the output folder.
struct Bench<'a> {
    cloud: &'a cloud::Cloud,
    python: PathBuf,
    dir: PathBuf,
    out: PathBuf,
    args: &'a Args,
}

impl Bench<'_> {
    /// The pipeline table's rows (`tools/bench/cloud/pipeline.py`).
    fn pipeline(&self) -> Result<String> {
        let (a, cloud) = (self.args, self.cloud);
        eprintln!(
            "xtask: bench-cloud: pipeline ({} jobs per level, levels {}, model {} ms per call)",
            a.jobs, a.levels, a.model_ms
        );
        let mut cmd = Command::new(&self.python);
        cmd.arg(self.dir.join("pipeline.py"))
            .arg(cloud.endpoint())
            .arg(cloud.api_url())
            .arg(cloud.issuer_url())
            .arg(cloud.model_url())
            .arg(cloud.outputs_file())
            .arg(self.out.join("single_pet.png"))
            .arg(a.jobs.to_string())
            .arg(a.model_ms.to_string())
            .arg(&a.levels);
        cloud.aws(&mut cmd);
        output(&mut cmd).context("the pipeline bench")
    }

    /// Our side of the peer comparison (`atelier-bench --peer-ours`), as a JSON file.
    fn ours(&self) -> Result<PathBuf> {
        eprintln!("xtask: bench-cloud: ours (atelier-bench --peer-ours)");
        let ours = self.out.join("ours.json");
        let mut cmd = Command::new(debug_bin("atelier-bench"));
        cmd.current_dir(root())
            .arg("--peer-ours")
            .arg(&ours)
            .args(["--samples", &self.args.samples.to_string()])
            .args(["--counted", &self.args.counted.to_string()]);
        self.cloud.aws(&mut cmd);
        cmd.envs(local_env(self.cloud.aws_port(), "atelier-bench"));
        run(&mut cmd).context("our side of the peer bench")?;
        Ok(ours)
    }

    /// One mode of `peer_bench.py` against `endpoint`, as a JSON file.
    fn peer(&self, mode: &str, endpoint: &str, extra: &[String]) -> Result<PathBuf> {
        eprintln!("xtask: bench-cloud: the peer, {mode}");
        let file = self.out.join(format!("peer-{mode}.json"));
        let mut cmd = Command::new(&self.python);
        cmd.current_dir(&self.dir)
            .arg("peer_bench.py")
            .arg(mode)
            .arg(&file)
            .args(extra);
        self.cloud.aws(&mut cmd);
        cmd.env("AWS_ENDPOINT_URL", endpoint)
            .env("AWS_ENDPOINT_URL_S3", endpoint)
            .env("PEER_DIRECT_ENDPOINT", self.cloud.endpoint())
            .env("PROXY_URL", endpoint);
        run(&mut cmd)?;
        Ok(file)
    }

    /// The peer's counts (through the wire proxy), timing and cold starts, beside ours.
    fn peer_table(&self, ours: &Path, dist: &Path, peer_venv: &Path) -> Result<String> {
        let (a, cloud) = (self.args, self.cloud);
        let proxy_port = cloud
            .aws_port()
            .checked_add(4202)
            .context("no port for the wire proxy")?;
        let proxy = WireProxy::start(&cloud.endpoint(), proxy_port)?;
        let counts = self.peer("counts", &proxy.url, &[a.counted.to_string()])?;
        drop(proxy);
        let timing = self.peer("timing", &cloud.endpoint(), &[a.samples.to_string()])?;
        let api_zip = dist.join("atelier-api").join("bootstrap.zip");
        let site_packages = site_packages(peer_venv)?;
        let cold = self.peer(
            "coldstart",
            &cloud.endpoint(),
            &[
                a.cold_runs.to_string(),
                api_zip.display().to_string(),
                site_packages.display().to_string(),
            ],
        )?;
        let mut cmd = Command::new(&self.python);
        cmd.current_dir(&self.dir)
            .arg("peer_bench.py")
            .arg("report")
            .arg(ours)
            .args([&counts, &timing, &cold]);
        output(&mut cmd).context("the peer table")
    }
}

/// Runs `cmd` (stderr passed through) and returns its stdout.
fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed with {}", out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
}

/// `lib/python3.X/site-packages` of a venv.
fn site_packages(venv: &Path) -> Result<PathBuf> {
    let lib = venv.join("lib");
    std::fs::read_dir(&lib)
        .with_context(|| format!("reading {}", lib.display()))?
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .with_context(|| format!("no site-packages under {}", lib.display()))
}

/// `atelier-wire-proxy` as a process of its own (the peer's calls cross a process boundary),
/// stopped when dropped.
struct WireProxy {
    url: String,
    child: std::process::Child,
}

impl WireProxy {
    fn start(upstream: &str, port: u16) -> Result<WireProxy> {
        let listen = format!("127.0.0.1:{port}");
        let child = Command::new(debug_bin("atelier-wire-proxy"))
            .args(["--upstream", upstream, "--listen", &listen])
            .stdout(Stdio::null())
            .spawn()
            .context("starting atelier-wire-proxy")?;
        let url = format!("http://{listen}");
        let proxy = WireProxy { url, child };
        for _ in 0..100 {
            if std::net::TcpStream::connect(&listen).is_ok() {
                return Ok(proxy);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        bail!("the wire proxy did not listen on {listen}")
    }
}

impl Drop for WireProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn flags_override_the_defaults() {
        let a = args(&argv(&[
            "--jobs",
            "12",
            "--model-ms",
            "250",
            "--levels",
            "1,4",
        ]))
        .unwrap();
        assert_eq!((a.jobs, a.model_ms, a.levels.as_str()), (12, 250, "1,4"));
        assert_eq!((a.samples, a.counted, a.cold_runs), (40, 10, 3));
        assert_eq!((a.load, a.load_secs), (None, 60));
    }

    #[test]
    fn load_takes_its_levels_and_seconds() {
        let a = args(&argv(&["--load", "10,50, 200", "--load-secs", "30"])).unwrap();
        assert_eq!((a.load.as_deref(), a.load_secs), (Some("10,50,200"), 30));
    }

    #[test]
    fn chaos_takes_its_jobs_and_seed() {
        let a = args(&argv(&["--chaos", "40", "--seed", "7"])).unwrap();
        assert_eq!((a.chaos, a.seed), (Some(40), 7));
        assert_eq!(args(&argv(&[])).unwrap().chaos, None);
    }

    #[test]
    fn unknown_flags_and_missing_or_bad_values_are_refused() {
        for (bad, why) in [
            (&["--nope", "1"][..], "unknown flag"),
            (&["--jobs"][..], "missing value"),
            (&["--jobs", "many"][..], "not a number"),
            (&["--load", "10,0"][..], "a level of no one"),
            (&["--load", "ten"][..], "not a level"),
        ] {
            assert!(args(&argv(bad)).is_err(), "{why}: {bad:?}");
        }
    }
}
