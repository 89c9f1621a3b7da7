//! Release binaries of the `atelier` client: `cargo xtask release [--target T]...` builds
//! `atelier` with the release profile for each target, packs each as
//! `atelier-<version>-<target>.tar.gz` (the binary, README.md and LICENSE) under
//! `target/release-dist/`, and writes `SHA256SUMS` beside them in `sha256sum`'s format, so
//! `sha256sum -c SHA256SUMS` checks a download.
//!
//! Without `--target`, every target of [`TARGETS`] that rustup has installed; a listed target
//! that is missing is named with the command that adds it (this machine has only the host's:
//! rustup's downloads are not reachable here).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

use crate::workspace::{cargo, root, run};

/// What a release is built for: Linux and macOS, x86_64 and arm64.
pub const TARGETS: [&str; 4] = [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
];

/// The client's package and binary.
const PACKAGE: &str = "atelier-cli";
const BINARY: &str = "atelier";

pub fn release(args: &[String]) -> Result<ExitCode> {
    let asked: Vec<String> = args
        .chunks(2)
        .map(|pair| match pair {
            [flag, target] if flag == "--target" => Ok(target.clone()),
            _ => bail!("usage: cargo xtask release [--target TRIPLE]..."),
        })
        .collect::<Result<_>>()?;
    let installed = installed_targets()?;
    let targets = if asked.is_empty() {
        for missing in TARGETS
            .iter()
            .filter(|t| !installed.contains(&t.to_string()))
        {
            eprintln!("xtask: release: skipping {missing}: `rustup target add {missing}` first");
        }
        TARGETS
            .iter()
            .map(|t| t.to_string())
            .filter(|t| installed.contains(t))
            .collect()
    } else {
        asked
    };
    let dist = root().join("target").join("release-dist");
    std::fs::create_dir_all(&dist).with_context(|| format!("creating {}", dist.display()))?;
    let version = client_version()?;
    let mut archives = Vec::new();
    for target in &targets {
        archives.push(pack(target, &version, &dist)?);
    }
    write_checksums(&dist, &archives)?;
    Ok(ExitCode::SUCCESS)
}

/// The targets rustup has the standard library of.
fn installed_targets() -> Result<Vec<String>> {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("running rustup target list --installed")?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect())
}

/// The client's version, from its manifest (what `atelier --version` prints).
fn client_version() -> Result<String> {
    let manifest = root().join("tools").join("cli").join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .map(str::to_owned)
        .with_context(|| format!("no version in {}", manifest.display()))
}

/// Builds the client for `target` and packs it; the archive's file name.
fn pack(target: &str, version: &str, dist: &Path) -> Result<String> {
    run(cargo().current_dir(root()).args([
        "build",
        "--release",
        "--locked",
        "-p",
        PACKAGE,
        "--bin",
        BINARY,
        "--target",
        target,
    ]))?;
    let built: PathBuf = root().join("target").join(target).join("release");
    let stage = dist.join(format!("{BINARY}-{version}-{target}"));
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir_all(&stage)?;
    std::fs::copy(built.join(BINARY), stage.join(BINARY)).context("copying the binary")?;
    for doc in ["README.md", "LICENSE"] {
        std::fs::copy(root().join(doc), stage.join(doc))
            .with_context(|| format!("copying {doc}"))?;
    }
    let name = format!("{BINARY}-{version}-{target}.tar.gz");
    let folder = stage
        .file_name()
        .and_then(|f| f.to_str())
        .context("stage name")?;
    run(Command::new("tar")
        .current_dir(dist)
        .args(["czf", &name, folder]))?;
    std::fs::remove_dir_all(&stage)?;
    eprintln!("xtask: release: {}", dist.join(&name).display());
    Ok(name)
}

/// `SHA256SUMS` of `archives`, in `sha256sum`'s format, next to them.
fn write_checksums(dist: &Path, archives: &[String]) -> Result<()> {
    let out = Command::new("sha256sum")
        .current_dir(dist)
        .args(archives)
        .output()
        .context("running sha256sum")?;
    if !out.status.success() {
        bail!("sha256sum failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let sums = dist.join("SHA256SUMS");
    std::fs::write(&sums, &out.stdout).with_context(|| format!("writing {}", sums.display()))?;
    eprint!(
        "xtask: release: {}\n{}",
        sums.display(),
        String::from_utf8_lossy(&out.stdout)
    );
    Ok(())
}
