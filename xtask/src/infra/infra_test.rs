//! `cargo xtask infra-test`: every check of `infra/`, offline, one step after another.

use std::time::Instant;

use anyhow::Result;

use super::cdk::{assertion_tests, cdk_synth, cfn_lint};
use super::iam::iam_check;
use super::infra_schema::{COPIES, drift_guard};
use super::module_docs::{terraform_documented, terraform_tables_current};
use super::module_paths::module_reads_only_its_folder;
use super::outcome::{Outcome, StepResult, summarise};
use super::terraform::{checkov, terraform};
use super::tools::{LINT_PINS, ensure_node_modules, lint_venv, npx, work_dir};
use crate::venv::ensure_pip;
use crate::workspace::{root, run};

/// `cargo xtask infra-test`: every check of `infra/`, offline. Runs all steps, then fails when
/// any failed (with `CI=true`, when any skipped that `ATELIER_CI_ALLOWED_SKIPS` does not
/// name); the steps skipped.
pub fn infra_test() -> Result<u64> {
    let started = Instant::now();
    let infra = root().join("infra");
    let work = work_dir();
    std::fs::create_dir_all(&work)?;

    let mut results: Vec<StepResult> = Vec::new();
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

    let live = COPIES.map(|(sub, _)| work.join(format!("{sub}.live.json")));
    step(
        "drift guard: schema.json, env-names.json, models.json, metrics.json and cors.json (infra/, infra/terraform/) match atelier-admin",
        &mut || drift_guard(&live),
    );
    step("type check (tsc --noEmit)", &mut || {
        run(npx(&infra, "tsc").args(["--noEmit", "-p", "."]))?;
        Ok(Outcome::Passed)
    });
    step(
        "assertion tests, cdk-nag, drift guard against the synthesized template",
        &mut || assertion_tests(&infra, &live),
    );
    let cdk_out = work.join("cdk.out");
    step(
        "cdk synth, no credentials (dev and prod stages)",
        &mut || cdk_synth(&infra, &cdk_out),
    );
    step("cfn-lint on the synthesized templates", &mut || {
        cfn_lint(&infra, &cdk_out)
    });
    step(
        "the Terraform module reads no file outside its folder",
        &mut || module_reads_only_its_folder(&infra),
    );
    step(
        "every Terraform variable has a validation, every output a description",
        &mut || terraform_documented(&infra),
    );
    step(
        "infra/terraform/README.md's inputs and outputs tables match variables.tf and outputs.tf",
        &mut || terraform_tables_current(&infra),
    );
    step("checkov on infra/terraform (offline)", &mut || {
        checkov(&infra)
    });
    step(
        "terraform fmt -check, init (local mirror), validate (the module and each example), test",
        &mut || terraform(&infra, &work),
    );
    step(
        "IAM: every AWS call the tests recorded is allowed by its function's role (CDK, Terraform)",
        &mut || iam_check(&infra, &work, &cdk_out),
    );
    summarise(&results, started)
}
