//! The CDK app's checks: the assertion tests (with cdk-nag), `cdk synth` without credentials,
//! and cfn-lint on the templates.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};

use super::infra_schema::COPIES;
use super::outcome::Outcome;
use super::tools::{lint_venv, no_aws_credentials, npx, templates};
use crate::workspace::run;

pub(super) fn assertion_tests(infra: &Path, live: &[PathBuf; COPIES.len()]) -> Result<Outcome> {
    let [live_schema, live_env, _, _, live_cors] = live;
    let mut cmd = Command::new("node");
    cmd.current_dir(infra)
        .args(["--import", "tsx", "--test", "--test-reporter=dot"])
        .args(test_files(infra)?)
        .env("ATELIER_LIVE_SCHEMA", live_schema)
        .env("ATELIER_LIVE_ENV_NAMES", live_env)
        .env("ATELIER_LIVE_CORS", live_cors);
    no_aws_credentials(&mut cmd);
    run(&mut cmd)?;
    Ok(Outcome::Passed)
}

pub(super) fn cdk_synth(infra: &Path, cdk_out: &Path) -> Result<Outcome> {
    let _ = std::fs::remove_dir_all(cdk_out);
    for stage in ["dev", "prod"] {
        let mut cmd = npx(infra, "cdk");
        cmd.args(["synth", "--quiet", "--no-notices", "--no-version-reporting"])
            .args(["--context", "atelier:placeholderCode=true"])
            .args(["--context", &format!("atelier:stage={stage}")])
            .arg("--output")
            .arg(cdk_out.join(stage));
        no_aws_credentials(&mut cmd);
        run(&mut cmd)?;
    }
    Ok(Outcome::Passed)
}

pub(super) fn cfn_lint(infra: &Path, cdk_out: &Path) -> Result<Outcome> {
    let templates = templates(cdk_out)?;
    run(Command::new(lint_venv().join("bin").join("cfn-lint"))
        .current_dir(infra)
        .args(["--config-file", ".cfnlintrc.yaml", "--"])
        .args(&templates))?;
    Ok(Outcome::Passed)
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
