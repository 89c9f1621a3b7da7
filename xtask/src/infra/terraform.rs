//! The Terraform module's own checks: checkov, and `terraform fmt`, `init` (a local provider
//! mirror), `validate` and `test` on a copy, skipped without a binary and a mirror.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::outcome::Outcome;
use super::tools::{lint_venv, no_aws_credentials, which};
use crate::workspace::run;

/// The Terraform module's own checks, skipped without a `terraform` binary and a provider
/// mirror (neither is in a registry the project reaches).
pub const TERRAFORM: &str = "terraform";

pub(super) fn checkov(infra: &Path) -> Result<Outcome> {
    run(Command::new(lint_venv().join("bin").join("checkov"))
        .current_dir(infra)
        .args(["--directory", "terraform", "--framework", "terraform"])
        // Every skip is an inline `#checkov:skip=ID:reason` at its resource.
        .args(["--skip-download", "--quiet", "--compact"]))?;
    Ok(Outcome::Passed)
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

pub(super) fn terraform(infra: &Path, work: &Path) -> Result<Outcome> {
    let Ok(tf) = which("terraform") else {
        return Ok(Outcome::Skipped {
            check: TERRAFORM,
            why: "no `terraform` binary on PATH (checkov still checked the module)".into(),
        });
    };
    let module = infra.join("terraform");
    run(Command::new(&tf)
        .current_dir(&module)
        .env("TF_CLI_CONFIG_FILE", "/dev/null")
        .env("CHECKPOINT_DISABLE", "1")
        .args(["fmt", "-check", "-recursive", "-diff"]))
    .context("terraform fmt -check (run `terraform fmt -recursive infra/terraform`)")?;
    let Some(mirror) = provider_mirror() else {
        return Ok(Outcome::Skipped {
            check: TERRAFORM,
            why: "fmt passed; no AWS provider mirror (set ATELIER_TF_PLUGIN_DIR) for init/validate"
                .into(),
        });
    };
    // Validate a copy, so init's lock file and .terraform/ never land in the repo. The whole
    // tree: the examples call the module as `../..`.
    let copy = work.join("terraform");
    let _ = std::fs::remove_dir_all(&copy);
    copy_module(&module, &copy)?;
    let mut roots = vec![PathBuf::new()];
    for entry in std::fs::read_dir(module.join("examples"))? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            roots.push(Path::new("examples").join(entry.file_name()));
        }
    }
    roots.sort();
    for dir in &roots {
        let at = copy.join(dir);
        let quiet = |cmd: &mut Command| {
            cmd.current_dir(&at)
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
                "terraform init of {} with the mirror {} failed:\n{}",
                module.join(dir).display(),
                mirror.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mut validate = Command::new(&tf);
        validate.args(["validate", "-no-color"]);
        quiet(&mut validate);
        run(&mut validate)
            .with_context(|| format!("terraform validate of {}", module.join(dir).display()))?;
    }
    // Every variable's validation against a bad value, planned with a mocked provider
    // (terraform/tests/validation.tftest.hcl; no credentials, no AWS call).
    let mut test = Command::new(&tf);
    test.current_dir(&copy)
        .args(["test", "-no-color"])
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_CLI_CONFIG_FILE", "/dev/null");
    no_aws_credentials(&mut test);
    run(&mut test).context("terraform test (the variables' validations)")?;
    Ok(Outcome::Passed)
}

/// Copies the module's files (not `.terraform/`, lock files or other dot-files) into `to`.
fn copy_module(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type()?.is_dir() {
            copy_module(&entry.path(), &to.join(&name))?;
        } else {
            std::fs::copy(entry.path(), to.join(&name))?;
        }
    }
    Ok(())
}
