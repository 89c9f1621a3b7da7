//! `cargo xtask infra-schema`, and the drift guard of `infra-test`: the committed copies of
//! what `atelier-admin` prints (schema, environment names, models, metrics, CORS).

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

use super::outcome::Outcome;
use crate::tf_docs::render_readme;
use crate::workspace::root;

/// The `atelier-admin` binary to run, when the caller already built it.
pub static ADMIN_BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Output of an `atelier-admin` subcommand that needs no AWS (schema, env-names).
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
pub(super) const COPIES: [(&str, &str); 5] = [
    ("schema", "schema.json"),
    ("env-names", "env-names.json"),
    ("models", "models.json"),
    ("metrics", "metrics.json"),
    ("cors", "cors.json"),
];

/// Where each copy lives: the CDK app's, and the Terraform module's own (a module used from a
/// registry or a git source can read nothing outside its folder).
const COPY_DIRS: [&str; 2] = ["infra", "infra/terraform"];

/// `cargo xtask infra-schema`: rewrite the committed copies from the code.
pub fn infra_schema() -> Result<ExitCode> {
    for (sub, file) in COPIES {
        let text = admin_json(sub)?;
        for dir in COPY_DIRS {
            let path = root().join(dir).join(file);
            let changed = std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str());
            std::fs::write(&path, &text)?;
            eprintln!(
                "xtask: {dir}/{file} {}",
                if changed { "updated" } else { "unchanged" }
            );
        }
    }
    let readme = root().join("infra/terraform/README.md");
    let text = render_readme(&root().join("infra/terraform"))?;
    let changed = std::fs::read_to_string(&readme)? != text;
    std::fs::write(&readme, &text)?;
    eprintln!(
        "xtask: infra/terraform/README.md inputs/outputs {}",
        if changed { "updated" } else { "unchanged" }
    );
    Ok(ExitCode::SUCCESS)
}

/// The committed copies of `schema.json`, `env-names.json` and `models.json` equal what
/// `atelier-admin` prints today (written to `live` for the later steps).
pub(super) fn drift_guard(live: &[PathBuf; COPIES.len()]) -> Result<Outcome> {
    let mut stale = Vec::new();
    for ((sub, file), live) in COPIES.into_iter().zip(live) {
        let text = admin_json(sub)?;
        std::fs::write(live, &text)?;
        for dir in COPY_DIRS {
            let committed =
                std::fs::read_to_string(root().join(dir).join(file)).unwrap_or_default();
            if committed != text {
                stale.push(format!("{dir}/{file} differs from `atelier-admin {sub}`"));
            }
        }
    }
    if stale.is_empty() {
        Ok(Outcome::Passed)
    } else {
        bail!(
            "{} — run `cargo xtask infra-schema`, review the diff (tables, indexes, \
         environment, models, metrics, CORS) and commit it",
            stale.join("; ")
        )
    }
}
