//! The IAM check (`infra/iam`): every AWS call the tests recorded is allowed by its function's
//! role, in the CDK templates and in the Terraform module.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::outcome::Outcome;
use super::tools::{no_aws_credentials, templates, which};
use crate::workspace::{iam_calls_dir, run};

/// The IAM check's plan of the module's policies, skipped without an initialised Terraform.
pub const TERRAFORM_IAM_PLAN: &str = "terraform-iam-plan";

/// The IAM check (`infra/iam/check.ts`): the calls the fault harness and the local cloud's
/// functions made (recorded by the wire proxy in `target/iam-calls/`) against each function's
/// role policies in the synthesized templates and in the Terraform module, planned offline
/// into `work/iam-terraform-plan.jsonl` from the copy `terraform()` initialised.
pub(super) fn iam_check(infra: &Path, work: &Path, cdk_out: &Path) -> Result<Outcome> {
    let copy = work.join("terraform");
    let plan = work.join("iam-terraform-plan.jsonl");
    let _ = std::fs::remove_file(&plan);
    let terraform = which("terraform")
        .ok()
        .filter(|_| copy.join(".terraform").is_dir());
    if let Some(tf) = &terraform {
        let out = Command::new("node")
            .current_dir(infra)
            .args(["--import", "tsx", "iam/check.ts", "terraform-test-file"])
            .output()?;
        if !out.status.success() {
            bail!(
                "iam/check.ts terraform-test-file: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::fs::write(
            copy.join("tests").join("iam_policies.tftest.hcl"),
            &out.stdout,
        )?;
        let mut test = Command::new(tf);
        test.current_dir(&copy)
            .args(["test", "-no-color", "-json", "-verbose"])
            .args(["-filter=tests/iam_policies.tftest.hcl"])
            .env("TF_IN_AUTOMATION", "1")
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_CLI_CONFIG_FILE", "/dev/null")
            .stdout(std::fs::File::create(&plan)?);
        no_aws_credentials(&mut test);
        run(&mut test).with_context(|| {
            format!(
                "terraform test of the role policies (output in {})",
                plan.display()
            )
        })?;
    }
    let mut check = Command::new("node");
    check
        .current_dir(infra)
        .args(["--import", "tsx", "iam/check.ts", "--calls"])
        .arg(iam_calls_dir());
    for t in templates(cdk_out)? {
        check.arg("--template").arg(t);
    }
    if terraform.is_some() {
        check.arg("--terraform-plan").arg(&plan);
    }
    run(&mut check)?;
    Ok(match terraform {
        Some(_) => Outcome::Passed,
        None => Outcome::Skipped {
            check: TERRAFORM_IAM_PLAN,
            why: "the CDK templates passed; no initialised Terraform copy to plan the module's policies"
                .into(),
        },
    })
}
