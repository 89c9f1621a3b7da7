//! Where things are (the workspace, the build's binaries) and running a command: what every
//! other command of xtask uses.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The workspace this command was run in: the nearest folder upwards from the current one
/// whose `Cargo.toml` declares `[workspace]`. Not the folder xtask was compiled in: two
/// checkouts sharing one `CARGO_TARGET_DIR` would otherwise run each other's code.
pub(crate) fn root() -> PathBuf {
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

/// Cargo's target directory (`CARGO_TARGET_DIR` when set): where built binaries are.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// A binary of the debug build.
pub(crate) fn debug_bin(name: &str) -> PathBuf {
    target_dir().join("debug").join(name)
}

/// Where the tests record the AWS calls each function makes (the fault harness, the local
/// cloud's functions) for the IAM check of `infra/iam` (`infra.rs`).
pub(crate) fn iam_calls_dir() -> PathBuf {
    target_dir().join("iam-calls")
}

pub(crate) fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}
