//! The project's Python virtual environments (`.venv`), each installed once from its pins.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::workspace::{root, run};

pub(crate) fn venv() -> PathBuf {
    root().join(".venv")
}

/// Installs a requirements file's pins (comments and blank lines skipped) into
/// `.venv/<name>` and returns that venv's python.
pub(crate) fn ensure_requirements(name: &str, marker: &str, requirements: &str) -> Result<PathBuf> {
    let dir = venv().join(name);
    let pins: Vec<&str> = requirements
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    ensure_pip(&dir, marker, &pins)?;
    Ok(dir.join("bin").join("python"))
}

/// Installs `pins` into the venv at `dir` (created when missing). A marker file named
/// `marker` records what was installed, so a second call costs nothing.
pub(crate) fn ensure_pip(dir: &Path, marker: &str, pins: &[&str]) -> Result<()> {
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
