//! The tools and folders the checks share: the linters' venv, the CDK app's `node_modules`,
//! an environment without AWS credentials, the synthesized templates.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::venv::venv;
use crate::workspace::{root, run};

/// Linters of the infrastructure (their own venv: checkov's pins conflict with ministack's).
pub(super) const LINT_PINS: &[&str] = &["cfn-lint==1.58.0", "checkov==3.3.30"];

pub(super) fn lint_venv() -> PathBuf {
    venv().join("infra-lint")
}

pub(super) fn work_dir() -> PathBuf {
    root().join("target").join("infra-test")
}

/// `npm ci` when `node_modules` is missing or older than the lock file (also before a
/// deploy of the local cloud).
pub(crate) fn ensure_node_modules(infra: &Path) -> Result<()> {
    let installed = infra.join("node_modules").join(".package-lock.json");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let fresh = match (
        modified(&installed),
        modified(&infra.join("package-lock.json")),
    ) {
        (Some(i), Some(l)) => i >= l,
        _ => false,
    };
    if !fresh {
        eprintln!("xtask: npm ci in {}", infra.display());
        run(Command::new("npm").current_dir(infra).args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ]))
        .context("npm ci (is Node.js 20+ installed?)")?;
    }
    Ok(())
}

pub(super) fn npx(infra: &Path, bin: &str) -> Command {
    let mut cmd = Command::new(infra.join("node_modules").join(".bin").join(bin));
    cmd.current_dir(infra)
        .env("CDK_DISABLE_VERSION_CHECK", "1")
        .env("CDK_DISABLE_CLI_TELEMETRY", "true");
    cmd
}

/// The checks run offline and must not depend on (or use) anybody's AWS credentials.
pub(super) fn no_aws_credentials(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("AWS_")) {
            cmd.env_remove(k);
        }
    }
    cmd.env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
}

pub(super) fn templates(cdk_out: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for stage in std::fs::read_dir(cdk_out).context("no cdk.out: did synth run?")? {
        for f in std::fs::read_dir(stage?.path())? {
            let p = f?.path();
            if p.to_string_lossy().ends_with(".template.json") {
                found.push(p);
            }
        }
    }
    if found.is_empty() {
        bail!("no templates in {}", cdk_out.display());
    }
    found.sort();
    Ok(found)
}

pub(super) fn which(bin: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(bin))
        .find(|p| p.is_file())
        .with_context(|| format!("{bin} not found on PATH"))
}
