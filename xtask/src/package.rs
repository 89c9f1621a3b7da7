//! Packaging the three Lambda functions, and checking the infrastructure that deploys them.
//!
//! - `cargo xtask package [--arch x86_64|arm64]` — `cargo lambda build --release` for
//!   `provided.al2023`, glibc ≤ 2.34, one zip per function and architecture under
//!   `target/lambda-dist/<arch>/<function>/bootstrap.zip` (what `infra/` deploys).
//! - `cargo xtask infra-test` — everything `infra/` promises, offline: the drift guard
//!   (schema and environment names against `atelier-admin`), type check, the CDK assertion
//!   tests, `cdk synth` without credentials, cdk-nag, cfn-lint, checkov on the Terraform
//!   module, and `terraform fmt`/`validate` where a terraform binary and a provider mirror are
//!   present (a clear skipped notice otherwise).
//! - `cargo xtask infra-schema` — refresh `infra/schema.json` and `infra/env-names.json` from
//!   the code after a deliberate change of tables or configuration.
//!
//! The Python tools are pinned here and installed by this file: cargo-lambda and ziglang into
//! the project's `.venv` (no dependencies of their own, so they sit beside ministack), and
//! cfn-lint and checkov into `.venv/infra-lint`, a venv of their own, because checkov's pins
//! conflict with ministack's (pip refuses to resolve both in one environment).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::root;

/// Packaging tools (no dependencies beyond themselves).
const PACKAGE_PINS: &[&str] = &["cargo-lambda==1.9.2", "ziglang==0.14.1"];
/// Linters of the infrastructure (their own venv: checkov's pins conflict with ministack's).
const LINT_PINS: &[&str] = &["cfn-lint==1.58.0", "checkov==3.3.30"];

/// The function packages, each with one binary of the same name.
pub const FUNCTIONS: [&str; 3] = ["atelier-api", "atelier-consumer", "atelier-sweeper"];

/// `provided.al2023` ships glibc 2.34: no binary may need a newer symbol version.
const MAX_GLIBC_MINOR: u32 = 34;

/// A Lambda architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Arm64,
}

impl Arch {
    fn parse(s: &str) -> Result<Arch> {
        match s {
            "x86_64" | "x86-64" | "amd64" => Ok(Arch::X86_64),
            "arm64" | "aarch64" => Ok(Arch::Arm64),
            other => bail!("--arch must be x86_64 or arm64, not {other:?}"),
        }
    }

    /// Lambda's name for it, also the folder under `target/lambda-dist/`.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    fn triple(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-gnu",
            Arch::Arm64 => "aarch64-unknown-linux-gnu",
        }
    }
}

fn venv() -> PathBuf {
    root().join(".venv")
}

fn lint_venv() -> PathBuf {
    venv().join("infra-lint")
}

/// Cargo's target directory (`CARGO_TARGET_DIR` when set).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// Where the zips go: `target/lambda-dist/<arch>` in the project, whatever the target
/// directory (the CDK app and the Terraform module look there).
fn dist(arch: Arch) -> PathBuf {
    root().join("target").join("lambda-dist").join(arch.name())
}

fn work_dir() -> PathBuf {
    root().join("target").join("infra-test")
}

/// Installs `pins` into the venv at `dir` (created when missing). A marker file named
/// `marker` records what was installed, so a second call costs nothing.
fn ensure_pip(dir: &Path, marker: &str, pins: &[&str]) -> Result<()> {
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

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// `PATH` with the venv's `bin` first: cargo-lambda finds `cargo-lambda` and, through
/// `python3 -m ziglang`, the pinned zig there.
fn path_with(bin: &Path) -> String {
    let rest = std::env::var("PATH").unwrap_or_default();
    format!("{}:{rest}", bin.display())
}

// ---------------------------------------------------------------------------------------------
// package

/// `cargo xtask package [--arch x86_64|arm64]`.
pub fn package(args: &[String]) -> Result<ExitCode> {
    let mut arch = Arch::X86_64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--arch" => {
                arch = Arch::parse(it.next().map(String::as_str).unwrap_or_default())?;
            }
            s if s.starts_with("--arch=") => arch = Arch::parse(&s["--arch=".len()..])?,
            other => bail!("usage: cargo xtask package [--arch x86_64|arm64] (got {other:?})"),
        }
    }
    build(arch)?;
    Ok(ExitCode::SUCCESS)
}

/// Builds the three zips for `arch` and checks them; returns their paths.
pub fn build(arch: Arch) -> Result<Vec<PathBuf>> {
    let venv = venv();
    ensure_pip(&venv, ".atelier-package-pins", PACKAGE_PINS)?;
    let out = dist(arch);
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("removing {}", out.display()))?;
    }
    let target = format!("{}.2.{MAX_GLIBC_MINOR}", arch.triple());
    eprintln!(
        "xtask: cargo lambda build --release --target {target} → {}",
        out.display()
    );
    let started = Instant::now();
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root())
        .env("PATH", path_with(&venv.join("bin")))
        .args(["lambda", "build", "--release", "--target", &target])
        // Our [profile.release] (Cargo.toml) is the only source of release settings:
        // without this flag cargo-lambda adds `--config profile.release.*` for any key the
        // manifest leaves unset and `-C target-cpu=…` to RUSTFLAGS.
        .arg("--disable-optimizations")
        .args(["--output-format", "zip", "--lambda-dir"])
        .arg(&out);
    for f in FUNCTIONS {
        cmd.args(["--package", f]);
    }
    let built = run(&mut cmd);
    if built.is_err() && arch == Arch::Arm64 {
        eprintln!(
            "xtask: arm64 needs the Rust target once: rustup target add aarch64-unknown-linux-gnu"
        );
    }
    built.context("cargo lambda build")?;
    let elapsed = started.elapsed();

    // cargo-lambda zips every workspace binary it finds built for the target; keep ours.
    for entry in std::fs::read_dir(&out)? {
        let entry = entry?;
        let name = entry.file_name();
        if !FUNCTIONS.iter().any(|f| name == *f) {
            std::fs::remove_dir_all(entry.path())?;
        }
    }
    let mut zips = Vec::new();
    eprintln!("xtask: built in {elapsed:.1?}");
    eprintln!(
        "  {:<18} {:>12} {:>12}  newest glibc symbol",
        "function", "zip bytes", "binary bytes"
    );
    for f in FUNCTIONS {
        let zip = out.join(f).join("bootstrap.zip");
        let zip_len = std::fs::metadata(&zip)
            .with_context(|| format!("{} was not produced", zip.display()))?
            .len();
        let binary = target_dir().join(arch.triple()).join("release").join(f);
        let bytes =
            std::fs::read(&binary).with_context(|| format!("reading {}", binary.display()))?;
        let glibc = newest_glibc_minor(&bytes);
        eprintln!(
            "  {f:<18} {zip_len:>12} {:>12}  {}",
            bytes.len(),
            glibc.map_or("none".to_owned(), |m| format!("GLIBC_2.{m}"))
        );
        if let Some(m) = glibc
            && m > MAX_GLIBC_MINOR
        {
            bail!("{f} needs GLIBC_2.{m}; provided.al2023 has 2.{MAX_GLIBC_MINOR}");
        }
        zips.push(zip);
    }
    Ok(zips)
}

/// The highest `GLIBC_2.N` symbol version named in an ELF binary (the version strings stay
/// in `.dynstr` after stripping).
fn newest_glibc_minor(bytes: &[u8]) -> Option<u32> {
    const NEEDLE: &[u8] = b"GLIBC_2.";
    let mut best = None;
    let mut i = 0;
    while let Some(pos) = bytes[i..].windows(NEEDLE.len()).position(|w| w == NEEDLE) {
        let start = i + pos + NEEDLE.len();
        let digits: String = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .map(|&b| char::from(b))
            .collect();
        if let Ok(minor) = digits.parse::<u32>() {
            best = best.max(Some(minor));
        }
        i = start;
    }
    best
}

// ---------------------------------------------------------------------------------------------
// infra-schema

/// Output of an `atelier-admin` subcommand that needs no AWS (schema, env-names).
/// The `atelier-admin` binary to run, when the caller already built it.
pub static ADMIN_BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

fn admin_json(sub: &str) -> Result<String> {
    // `cargo xtask test` hands over the binary it already built with the workspace's
    // features, so the drift step does not compile the crate graph a second time.
    let mut cmd = match ADMIN_BIN.get() {
        Some(bin) => Command::new(bin),
        None => {
            let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
            c.args(["run", "--quiet", "--package", "atelier-admin", "--"]);
            c
        }
    };
    let out = cmd
        .current_dir(root())
        .arg(sub)
        .output()
        .with_context(|| format!("running atelier-admin {sub}"))?;
    if !out.status.success() {
        bail!(
            "atelier-admin {sub} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut text = String::from_utf8(out.stdout).context("atelier-admin output is not UTF-8")?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// The committed copies the CDK app and the Terraform module read.
const COPIES: [(&str, &str); 2] = [("schema", "schema.json"), ("env-names", "env-names.json")];

/// `cargo xtask infra-schema`: rewrite the committed copies from the code.
pub fn infra_schema() -> Result<ExitCode> {
    for (sub, file) in COPIES {
        let path = root().join("infra").join(file);
        let text = admin_json(sub)?;
        let changed = std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str());
        std::fs::write(&path, text)?;
        eprintln!(
            "xtask: infra/{file} {}",
            if changed { "updated" } else { "unchanged" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// infra-test

/// One step's outcome.
enum Outcome {
    Passed,
    Skipped(String),
}

/// `cargo xtask infra-test`: every check of `infra/`, offline. Runs all steps, then fails when
/// any failed.
pub fn infra_test() -> Result<()> {
    let started = Instant::now();
    let infra = root().join("infra");
    let work = work_dir();
    std::fs::create_dir_all(&work)?;

    let mut results: Vec<(&str, std::time::Duration, Result<Outcome>)> = Vec::new();
    let mut step = |name: &'static str, f: &mut dyn FnMut() -> Result<Outcome>| {
        eprintln!("xtask: infra-test: {name}");
        let t = Instant::now();
        let r = f();
        if let Err(e) = &r {
            eprintln!("xtask: infra-test: {name} FAILED: {e:#}");
        }
        results.push((name, t.elapsed(), r));
    };

    // Tools first: without them nothing else can run.
    ensure_pip(&lint_venv(), ".atelier-lint-pins", LINT_PINS)?;
    ensure_node_modules(&infra)?;

    let live_schema = work.join("schema.live.json");
    let live_env = work.join("env-names.live.json");
    step(
        "drift guard: infra/schema.json and infra/env-names.json match atelier-admin",
        &mut || {
            let mut stale = Vec::new();
            for ((sub, file), live) in COPIES.into_iter().zip([&live_schema, &live_env]) {
                let text = admin_json(sub)?;
                std::fs::write(live, &text)?;
                let committed = std::fs::read_to_string(infra.join(file)).unwrap_or_default();
                if committed != text {
                    stale.push(format!("infra/{file} differs from `atelier-admin {sub}`"));
                }
            }
            if stale.is_empty() {
                Ok(Outcome::Passed)
            } else {
                bail!(
                    "{} — run `cargo xtask infra-schema`, review the diff (tables, indexes, \
                 environment) and commit it",
                    stale.join("; ")
                )
            }
        },
    );

    step("type check (tsc --noEmit)", &mut || {
        run(npx(&infra, "tsc").args(["--noEmit", "-p", "."]))?;
        Ok(Outcome::Passed)
    });

    step(
        "assertion tests, cdk-nag, drift guard against the synthesized template",
        &mut || {
            let mut cmd = Command::new("node");
            cmd.current_dir(&infra)
                .args(["--import", "tsx", "--test", "--test-reporter=dot"])
                .args(test_files(&infra)?)
                .env("ATELIER_LIVE_SCHEMA", &live_schema)
                .env("ATELIER_LIVE_ENV_NAMES", &live_env);
            no_aws_credentials(&mut cmd);
            run(&mut cmd)?;
            Ok(Outcome::Passed)
        },
    );

    let cdk_out = work.join("cdk.out");
    step(
        "cdk synth, no credentials (dev and prod stages)",
        &mut || {
            let _ = std::fs::remove_dir_all(&cdk_out);
            for stage in ["dev", "prod"] {
                let mut cmd = npx(&infra, "cdk");
                cmd.args(["synth", "--quiet", "--no-notices", "--no-version-reporting"])
                    .args(["--context", "atelier:placeholderCode=true"])
                    .args(["--context", &format!("atelier:stage={stage}")])
                    .arg("--output")
                    .arg(cdk_out.join(stage));
                no_aws_credentials(&mut cmd);
                run(&mut cmd)?;
            }
            Ok(Outcome::Passed)
        },
    );

    step("cfn-lint on the synthesized templates", &mut || {
        let templates = templates(&cdk_out)?;
        run(Command::new(lint_venv().join("bin").join("cfn-lint"))
            .current_dir(&infra)
            .args(["--config-file", ".cfnlintrc.yaml", "--"])
            .args(&templates))?;
        Ok(Outcome::Passed)
    });

    step("checkov on infra/terraform (offline)", &mut || {
        run(Command::new(lint_venv().join("bin").join("checkov"))
            .current_dir(&infra)
            .args(["--directory", "terraform", "--framework", "terraform"])
            // Every skip is an inline `#checkov:skip=ID:reason` at its resource.
            .args(["--skip-download", "--quiet", "--compact"]))?;
        Ok(Outcome::Passed)
    });

    step(
        "terraform fmt -check, init (local mirror), validate",
        &mut || terraform(&infra, &work),
    );

    let mut failed = 0;
    eprintln!("xtask: infra-test summary ({:.1?}):", started.elapsed());
    for (name, took, r) in &results {
        let verdict = match r {
            Ok(Outcome::Passed) => "ok".to_owned(),
            Ok(Outcome::Skipped(why)) => format!("SKIPPED: {why}"),
            Err(_) => {
                failed += 1;
                "FAILED".to_owned()
            }
        };
        eprintln!("  {verdict:<8} {name} ({took:.1?})");
    }
    if failed > 0 {
        bail!("infra-test: {failed} step(s) failed");
    }
    Ok(())
}

/// `npm ci` when `node_modules` is missing or older than the lock file.
fn ensure_node_modules(infra: &Path) -> Result<()> {
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

fn npx(infra: &Path, bin: &str) -> Command {
    let mut cmd = Command::new(infra.join("node_modules").join(".bin").join(bin));
    cmd.current_dir(infra)
        .env("CDK_DISABLE_VERSION_CHECK", "1")
        .env("CDK_DISABLE_CLI_TELEMETRY", "true");
    cmd
}

/// The checks run offline and must not depend on (or use) anybody's AWS credentials.
fn no_aws_credentials(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        if k.to_str().is_some_and(|k| k.starts_with("AWS_")) {
            cmd.env_remove(k);
        }
    }
    cmd.env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
}

fn test_files(infra: &Path) -> Result<Vec<String>> {
    let mut files: Vec<String> = std::fs::read_dir(infra.join("test"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".test.ts"))
        .map(|n| format!("test/{n}"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no infra/test/*.test.ts files");
    }
    Ok(files)
}

fn templates(cdk_out: &Path) -> Result<Vec<PathBuf>> {
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

/// A provider mirror laid out as `registry.terraform.io/hashicorp/aws/<version>/<os_arch>`.
fn provider_mirror() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("ATELIER_TF_PLUGIN_DIR").map(PathBuf::from),
        Some(PathBuf::from("/opt/tf-plugins")),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".terraform.d").join("plugins")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|d| d.join("registry.terraform.io/hashicorp/aws").is_dir())
}

fn terraform(infra: &Path, work: &Path) -> Result<Outcome> {
    let Ok(tf) = which("terraform") else {
        return Ok(Outcome::Skipped(
            "no `terraform` binary on PATH (checkov still checked the module)".into(),
        ));
    };
    let module = infra.join("terraform");
    run(Command::new(&tf)
        .current_dir(&module)
        .env("TF_CLI_CONFIG_FILE", "/dev/null")
        .env("CHECKPOINT_DISABLE", "1")
        .args(["fmt", "-check", "-recursive", "-diff"]))
    .context("terraform fmt -check (run `terraform fmt -recursive infra/terraform`)")?;
    let Some(mirror) = provider_mirror() else {
        return Ok(Outcome::Skipped(
            "fmt passed; no AWS provider mirror (set ATELIER_TF_PLUGIN_DIR) for init/validate"
                .into(),
        ));
    };
    // Validate a copy, so init's lock file and .terraform/ never land in the repo.
    let copy = work.join("terraform");
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::create_dir_all(&copy)?;
    for entry in std::fs::read_dir(&module)? {
        let p = entry?.path();
        if p.extension().is_some_and(|e| e == "tf")
            && let Some(name) = p.file_name()
        {
            std::fs::copy(&p, copy.join(name))?;
        }
    }
    let quiet = |cmd: &mut Command| {
        cmd.current_dir(&copy)
            .env("TF_IN_AUTOMATION", "1")
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_CLI_CONFIG_FILE", "/dev/null");
        no_aws_credentials(cmd);
    };
    let mut init = Command::new(&tf);
    init.args(["init", "-backend=false", "-input=false", "-no-color"])
        .arg(format!("-plugin-dir={}", mirror.display()));
    quiet(&mut init);
    let out = init.output()?;
    if !out.status.success() {
        bail!(
            "terraform init with the mirror {} failed:\n{}",
            mirror.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut validate = Command::new(&tf);
    validate.args(["validate", "-no-color"]);
    quiet(&mut validate);
    run(&mut validate)?;
    Ok(Outcome::Passed)
}

fn which(bin: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(bin))
        .find(|p| p.is_file())
        .with_context(|| format!("{bin} not found on PATH"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_glibc_version_is_found_among_symbol_versions() {
        let elf = b"\0GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.17\0GLIBC_PRIVATE\0";
        assert_eq!(newest_glibc_minor(elf), Some(34));
        assert_eq!(newest_glibc_minor(b"no versions here"), None);
    }

    #[test]
    fn arch_names_map_to_targets() {
        assert_eq!(
            Arch::parse("arm64").map(Arch::triple).ok(),
            Some("aarch64-unknown-linux-gnu")
        );
        assert_eq!(Arch::parse("x86_64").map(Arch::name).ok(), Some("x86_64"));
        assert!(Arch::parse("mips").is_err());
    }
}
