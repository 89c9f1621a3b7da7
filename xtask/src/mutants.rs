//! `cargo xtask mutants -f FILE… [-F RE|-E RE]… [--suite NAME]… [--filter TEXT]…` —
//! cargo-mutants (pinned, installed here when absent) over `atelier-shared`, each mutant tested
//! by the integration suites of `atelier-tests` on a private local stack (the store and service
//! files of the money core are tested there, not by `--lib`; docs/testing.md, "Mutation pass on
//! the money core"). `-F`/`-E` keep or drop the mutants whose names match (cargo-mutants' own);
//! `--suite` names the suites to run (`--test NAME` of cargo test; default: every suite);
//! `--filter` keeps only the tests whose names contain one of the texts (the test binaries' own
//! filter, applied in every named suite). Not in CI: each mutant is a rebuild and its suites.

use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::ministack::start_ministack;
use crate::test_run::{test_env, test_port};
use crate::workspace::{cargo, root, run};

const MUTANTS_VERSION: &str = "27.1.0";

pub fn mutants(argv: &[String]) -> Result<ExitCode> {
    let Args {
        files,
        select,
        suites,
        filters,
    } = args(argv)?;
    ensure_cargo_mutants()?;
    let port = test_port();
    let state = root()
        .join("target")
        .join(format!("xtask-ministack-mutants-{port}"));
    let _ = std::fs::remove_dir_all(&state);
    let _ministack = start_ministack(port, &state)?;
    let mut cmd = cargo();
    cmd.current_dir(root())
        .args([
            "mutants",
            "-p",
            "atelier-shared",
            "--test-package",
            "atelier-tests",
        ])
        .args(["--output", "target/mutants"])
        // 27.1's baseline tests only the mutated package (lab.rs `run_baseline`), where the
        // suites do not live: it is skipped, and `cargo xtask test` is the baseline.
        .args(["--baseline=skip", "--timeout", "900"]);
    for f in &files {
        cmd.args(["-f", f]);
    }
    cmd.args(&select);
    // The suites go to every cargo command: 27.1 passes what follows `--` to `cargo test`
    // only, so its build step (`cargo test --no-run`) would build every suite for each mutant.
    cmd.args(suites.iter().map(|s| format!("--cargo-arg=--test={s}")));
    // The test binaries' name filters, after cargo test's own `--`.
    if !filters.is_empty() {
        cmd.arg("--cargo-test-arg=--");
        cmd.args(filters.iter().map(|f| format!("--cargo-test-arg={f}")));
    }
    cmd.envs(test_env(port)?);
    // The scratch copy builds into this checkout's target: the dependencies are built once,
    // and only the mutated crate and its dependents rebuild for each mutant.
    cmd.env("CARGO_TARGET_DIR", root().join("target"));
    // cargo-mutants exits 2 when a mutant survived: the report says which, and that is the
    // result, not a failure of this command.
    let status = cmd.status()?;
    touch(&files)?;
    eprintln!(
        "xtask: mutants: exit {status}; outcomes in target/mutants/mutants.out/outcomes.json"
    );
    Ok(match status.code() {
        Some(0 | 2) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

/// The scratch copy built into this checkout's target, so the target now holds the last
/// mutant's build and the checkout's older sources look unchanged to cargo: the next `cargo
/// test` here would run that mutant. Touching the mutated files makes cargo rebuild them.
fn touch(files: &[String]) -> Result<()> {
    let now = std::time::SystemTime::now();
    for f in files {
        std::fs::File::options()
            .write(true)
            .open(root().join(f))
            .and_then(|file| file.set_modified(now))
            .map_err(|e| anyhow::anyhow!("touching {f} after the pass: {e}"))?;
    }
    Ok(())
}

/// What to mutate and which tests judge it.
struct Args {
    files: Vec<String>,
    /// `-F RE` and `-E RE`, passed on as given.
    select: Vec<String>,
    suites: Vec<String>,
    filters: Vec<String>,
}

/// `-f FILE`s (at least one), `-F RE`s and `-E RE`s, `--suite NAME`s and `--filter TEXT`s.
fn args(argv: &[String]) -> Result<Args> {
    let (mut files, mut select) = (Vec::new(), Vec::new());
    let (mut suites, mut filters) = (Vec::new(), Vec::new());
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        match (flag.as_str(), it.next()) {
            ("-f", Some(f)) => files.push(f.clone()),
            ("-F" | "-E", Some(re)) => select.extend([flag.clone(), re.clone()]),
            ("--suite", Some(s)) => suites.push(s.clone()),
            ("--filter", Some(t)) => filters.push(t.clone()),
            _ => bail!(
                "usage: cargo xtask mutants -f FILE… [-F RE|-E RE]… [--suite NAME]… [--filter TEXT]…"
            ),
        }
    }
    if files.is_empty() {
        bail!("name the files to mutate: cargo xtask mutants -f shared/src/store/ledger.rs");
    }
    Ok(Args {
        files,
        select,
        suites,
        filters,
    })
}

fn ensure_cargo_mutants() -> Result<()> {
    let have = std::process::Command::new("cargo")
        .args(["mutants", "--version"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    if have.as_deref() == Some(&format!("cargo-mutants {MUTANTS_VERSION}")) {
        return Ok(());
    }
    run(cargo().args([
        "install",
        "--locked",
        "--version",
        MUTANTS_VERSION,
        "cargo-mutants",
    ]))
}
