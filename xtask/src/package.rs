//! Packaging the three Lambda functions: `cargo xtask package [--arch x86_64|arm64]` —
//! `cargo lambda build --release` for `provided.al2023`, glibc ≤ 2.34, one zip per function and
//! architecture under `target/lambda-dist/<arch>/<function>/bootstrap.zip` (what `infra/`
//! deploys). The checks of `infra/` itself are in `infra.rs`.
//!
//! The packaging tools are pinned here and installed by this file: cargo-lambda and ziglang
//! into the project's `.venv` (no dependencies of their own, so they sit beside ministack).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::venv::{ensure_pip, venv};
use crate::workspace::{root, run};

/// Packaging tools (no dependencies beyond themselves).
const PACKAGE_PINS: &[&str] = &["cargo-lambda==1.9.2", "ziglang==0.14.1"];

/// The function packages, each with one binary of the same name.
pub const FUNCTIONS: [&str; 3] = ["atelier-api", "atelier-consumer", "atelier-sweeper"];

/// lambda_runtime's hello world (`tools/bare-lambda`): built in the same `cargo lambda build`
/// as the functions (same profile, toolchain and dependency features), so the bench can time
/// a bare runtime's init beside theirs. Never deployed: its zip goes to [`floor_dist`].
pub const BARE: &str = "atelier-bare-lambda";

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

/// Where the zips go: `target/lambda-dist/<arch>` in the project, whatever the target
/// directory (the CDK app and the Terraform module look there).
pub(crate) fn dist(arch: Arch) -> PathBuf {
    root().join("target").join("lambda-dist").join(arch.name())
}

/// Where the bare runtime's zip goes: `target/lambda-dist/floor/<arch>`, apart from what
/// `infra/` deploys.
pub(crate) fn floor_dist(arch: Arch) -> PathBuf {
    root()
        .join("target")
        .join("lambda-dist")
        .join("floor")
        .join(arch.name())
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
    for f in FUNCTIONS.iter().chain([&BARE]) {
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

    keep_ours(arch, &out)?;
    zip_all(arch, &out)?;
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
        let binary = crate::workspace::target_dir()
            .join(arch.triple())
            .join("release")
            .join(f);
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

/// Each function's zip and the bare runtime's, without unwind tables, one thread each: zopfli
/// takes a core for half a minute on the consumer.
fn zip_all(arch: Arch, out: &Path) -> Result<()> {
    let zipped: Vec<Result<()>> = std::thread::scope(|scope| {
        let jobs: Vec<_> = FUNCTIONS
            .iter()
            .map(|f| (*f, out.join(f)))
            .chain([(BARE, floor_dist(arch).join(BARE))])
            .map(|(f, dir)| {
                scope.spawn(move || drop_unwind_tables(arch, f, &dir.join("bootstrap.zip")))
            })
            .collect();
        let joined = jobs.into_iter().map(|j| j.join());
        joined
            .map(|r| r.unwrap_or_else(|_| Err(anyhow::anyhow!("a zipping thread panicked"))))
            .collect()
    });
    zipped.into_iter().collect()
}

/// The unwind tables (`.eh_frame`, `.eh_frame_hdr`: a quarter of each zip, about 360 KB)
/// serve only unwinding and backtraces. With `panic = "abort"` nothing unwinds, and Lambda
/// sets no `RUST_BACKTRACE`, so a panic logs its message and aborts with or without them;
/// Rust's own `-C force-unwind-tables=no` leaves the standard library's and the C code's
/// (docs/benchmarks.md, issue 50). Removed from the linked binary in place (binutils'
/// `objcopy`; the bench times that binary's init), which is then zipped again as cargo-lambda
/// zips it: one executable `bootstrap`. The bare runtime gets the same, so its init stays a
/// fair floor.
fn drop_unwind_tables(arch: Arch, name: &str, zip: &Path) -> Result<()> {
    let binary = crate::workspace::target_dir()
        .join(arch.triple())
        .join("release")
        .join(name);
    run(Command::new("objcopy")
        .args([
            "--remove-section",
            ".eh_frame",
            "--remove-section",
            ".eh_frame_hdr",
        ])
        .arg(&binary))
    .context("objcopy (binutils) removes the unwind tables")?;
    write_zip(&binary, zip).with_context(|| format!("zipping {}", zip.display()))
}

/// zip's level 10: zopfli, one iteration. Its deflate is 2.7 % smaller than zlib's best
/// (the consumer's zip 192 KB; docs/benchmarks.md, issue 50) for about half a minute of a
/// core per function; Lambda unzips any deflate stream alike.
const ZOPFLI_ONE_ITERATION: i64 = 10;

/// One executable `bootstrap`, as cargo-lambda zips it, dated 1980-01-01 so that the same
/// binary gives the same zip.
fn write_zip(binary: &Path, zip: &Path) -> Result<()> {
    use std::io::Write as _;
    let data = std::fs::read(binary)?;
    let mut out = zip::ZipWriter::new(std::fs::File::create(zip)?);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .compression_level(Some(ZOPFLI_ONE_ITERATION))
        .unix_permissions(0o755)
        .last_modified_time(zip::DateTime::default())
        .with_zopfli_buffer(None);
    out.start_file("bootstrap", options)?;
    // zopfli compresses each write as one chunk: zopfli's own master block of 1 MiB (zip's
    // default 32 KiB buffer compressed half as well).
    for piece in data.chunks(1 << 20) {
        out.write_all(piece)?;
    }
    out.finish()?;
    Ok(())
}

/// cargo-lambda zips every workspace binary it finds built for the target: keep the
/// functions' in `out` and the bare runtime's apart, in [`floor_dist`].
fn keep_ours(arch: Arch, out: &Path) -> Result<()> {
    let floor = floor_dist(arch);
    if floor.exists() {
        std::fs::remove_dir_all(&floor)?;
    }
    std::fs::create_dir_all(&floor)?;
    std::fs::rename(out.join(BARE), floor.join(BARE))
        .with_context(|| format!("moving {BARE}'s zip to {}", floor.display()))?;
    for entry in std::fs::read_dir(out)? {
        let entry = entry?;
        let name = entry.file_name();
        if !FUNCTIONS.iter().any(|f| name == *f) {
            std::fs::remove_dir_all(entry.path())?;
        }
    }
    Ok(())
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
