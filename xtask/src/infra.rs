//! Checking the infrastructure that deploys the functions (`infra/`), offline.
//!
//! - `cargo xtask infra-test` — everything `infra/` promises, offline: the drift guard
//!   (schema and environment names against `atelier-admin`), type check, the CDK assertion
//!   tests, `cdk synth` without credentials, cdk-nag, cfn-lint, checkov on the Terraform
//!   module, the check that the module reads no file outside its folder, and `terraform
//!   fmt`/`validate` of the module and of each of its `examples/` where a terraform binary and
//!   a provider mirror are present (a clear skipped notice otherwise), and the IAM check
//!   (`infra/iam`): every AWS call the fault harness and the local cloud's functions made is
//!   allowed by that function's role in the templates and in the module.
//! - `cargo xtask infra-schema` — refresh `schema.json`, `env-names.json`, `models.json`, `metrics.json` and `cors.json` (in `infra/` for
//!   the CDK app, in `infra/terraform/` for the module) from the code after a deliberate change
//!   of tables or configuration.
//!
//! cfn-lint and checkov are pinned here and installed by this file into `.venv/infra-lint`, a
//! venv of their own, because checkov's pins conflict with ministack's (pip refuses to resolve
//! both in one environment).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::{ensure_pip, root, run, venv};

/// Linters of the infrastructure (their own venv: checkov's pins conflict with ministack's).
const LINT_PINS: &[&str] = &["cfn-lint==1.58.0", "checkov==3.3.30"];

fn lint_venv() -> PathBuf {
    venv().join("infra-lint")
}

fn work_dir() -> PathBuf {
    root().join("target").join("infra-test")
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
const COPIES: [(&str, &str); 5] = [
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
    let text = crate::tf_docs::render_readme(&root().join("infra/terraform"))?;
    let changed = std::fs::read_to_string(&readme)? != text;
    std::fs::write(&readme, &text)?;
    eprintln!(
        "xtask: infra/terraform/README.md inputs/outputs {}",
        if changed { "updated" } else { "unchanged" }
    );
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// infra-test

/// One step's outcome.
enum Outcome {
    Passed,
    /// Could not run: `check` names it for `ATELIER_CI_ALLOWED_SKIPS` (`skips.rs`).
    Skipped {
        check: &'static str,
        why: String,
    },
}

/// The Terraform module's own checks, skipped without a `terraform` binary and a provider
/// mirror (neither is in a registry the project reaches).
pub const TERRAFORM: &str = "terraform";
/// The IAM check's plan of the module's policies, skipped without an initialised Terraform.
pub const TERRAFORM_IAM_PLAN: &str = "terraform-iam-plan";

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

/// A step's name, how long it took, and its outcome.
type StepResult = (&'static str, std::time::Duration, Result<Outcome>);

/// Prints one line per step, then fails when any step failed or skipped where a skip is a
/// failure (`skips.rs`); the steps skipped.
fn summarise(results: &[StepResult], started: Instant) -> Result<u64> {
    let (mut failed, mut skipped) = (0, 0);
    eprintln!("xtask: infra-test summary ({:.1?}):", started.elapsed());
    for (name, took, r) in results {
        let verdict = match r {
            Ok(Outcome::Passed) => "ok".to_owned(),
            Ok(Outcome::Skipped { check, why }) => match crate::skips::count_skip(check, why) {
                crate::skips::Verdict::Skipped => {
                    skipped += 1;
                    format!("SKIPPED ({check}): {why}")
                }
                crate::skips::Verdict::Failed => {
                    failed += 1;
                    format!("FAILED (skipped under CI, {check}): {why}")
                }
            },
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
    Ok(skipped)
}

/// The committed copies of `schema.json`, `env-names.json` and `models.json` equal what
/// `atelier-admin` prints today (written to `live` for the later steps).
fn drift_guard(live: &[PathBuf; COPIES.len()]) -> Result<Outcome> {
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

fn assertion_tests(infra: &Path, live: &[PathBuf; COPIES.len()]) -> Result<Outcome> {
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

fn cdk_synth(infra: &Path, cdk_out: &Path) -> Result<Outcome> {
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

fn cfn_lint(infra: &Path, cdk_out: &Path) -> Result<Outcome> {
    let templates = templates(cdk_out)?;
    run(Command::new(lint_venv().join("bin").join("cfn-lint"))
        .current_dir(infra)
        .args(["--config-file", ".cfnlintrc.yaml", "--"])
        .args(&templates))?;
    Ok(Outcome::Passed)
}

fn module_reads_only_its_folder(infra: &Path) -> Result<Outcome> {
    let found = paths_outside_module(&infra.join("terraform"))?;
    if found.is_empty() {
        Ok(Outcome::Passed)
    } else {
        bail!(
            "{} — a module used from a registry has only its own folder: make the \
             file a variable or copy it into infra/terraform",
            found.join("; ")
        )
    }
}

fn terraform_documented(infra: &Path) -> Result<Outcome> {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(infra.join("terraform"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "tf") {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            for block in undocumented_blocks(&std::fs::read_to_string(&path)?) {
                missing.push(format!("terraform/{name}: {block}"));
            }
        }
    }
    if missing.is_empty() {
        Ok(Outcome::Passed)
    } else {
        missing.sort();
        bail!("{}", missing.join("; "))
    }
}

fn terraform_tables_current(infra: &Path) -> Result<Outcome> {
    let module = infra.join("terraform");
    let committed = std::fs::read_to_string(module.join("README.md"))?;
    if crate::tf_docs::render_readme(&module)? == committed {
        Ok(Outcome::Passed)
    } else {
        bail!(
            "infra/terraform/README.md's tables differ from the .tf files: run `cargo xtask infra-schema`"
        )
    }
}

fn checkov(infra: &Path) -> Result<Outcome> {
    run(Command::new(lint_venv().join("bin").join("checkov"))
        .current_dir(infra)
        .args(["--directory", "terraform", "--framework", "terraform"])
        // Every skip is an inline `#checkov:skip=ID:reason` at its resource.
        .args(["--skip-download", "--quiet", "--compact"]))?;
    Ok(Outcome::Passed)
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

/// The IAM check (`infra/iam/check.ts`): the calls the fault harness and the local cloud's
/// functions made (recorded by the wire proxy in `target/iam-calls/`) against each function's
/// role policies in the synthesized templates and in the Terraform module, planned offline
/// into `work/iam-terraform-plan.jsonl` from the copy `terraform()` initialised.
fn iam_check(infra: &Path, work: &Path, cdk_out: &Path) -> Result<Outcome> {
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
        .arg(crate::iam_calls_dir());
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

// ---------------------------------------------------------------------------------------------
// the module's own folder

/// Every place a `.tf` file under `module` names a path outside `module` (`file:line: "…"`):
/// a string whose `..` segments climb above the module's folder (from the file's own folder;
/// `${path.module}` is that folder), or any use of `path.root` / `path.cwd` (the caller's
/// folders). Comments are not read. Paths built from variables are the caller's to give.
fn paths_outside_module(module: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut stack = vec![module.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if entry.file_type()?.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "tf") {
                continue;
            }
            let rel = path.strip_prefix(module).unwrap_or(&path);
            let depth = rel.components().count() - 1;
            let text = std::fs::read_to_string(&path)?;
            for (n, line) in text.lines().enumerate() {
                for reference in outside_references(line, depth) {
                    found.push(format!(
                        "terraform/{}:{}: {reference}",
                        rel.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The references of one line of HCL, in a file `depth` folders below the module's, that
/// leave the module (see `paths_outside_module`).
fn outside_references(line: &str, depth: usize) -> Vec<String> {
    let (code, strings) = split_line(line);
    let mut out = Vec::new();
    for caller_dir in ["path.root", "path.cwd"] {
        if code.contains(caller_dir) || strings.iter().any(|s| s.contains(caller_dir)) {
            out.push(format!("{caller_dir} (the caller's folder)"));
        }
    }
    for s in strings {
        if climbs_out(&s, depth) {
            out.push(format!("{s:?}"));
        }
    }
    out
}

/// The module's own folder and the start of any interpolation, spelled with escapes so that
/// no brace in a string literal unbalances a reader that counts braces (the review's did).
const MODULE_DIR: &str = "$\x7bpath.module\x7d";
const INTERPOLATION: &str = "$\x7b";

/// Whether a path, read from a folder `depth` levels inside the module, climbs above it.
fn climbs_out(path: &str, depth: usize) -> bool {
    let mut level = depth as isize;
    for segment in path.split('/') {
        match segment {
            ".." => {
                level -= 1;
                if level < 0 {
                    return true;
                }
            }
            "" | "." | MODULE_DIR => {}
            // Anything computed (`$var.dist_dir` interpolated) is the caller's: not ours to judge.
            s if s.contains(INTERPOLATION) => return false,
            _ => level += 1,
        }
    }
    false
}

/// How a block opens at the end of its header line (kept out of the functions below, whose
/// brace balance then reads plainly).
const BLOCK_OPEN: &str = " \u{7b}";
/// A line that closes a top-level block.
const BLOCK_CLOSE: &str = "\u{7d}";
/// The line that opens a variable's validation block.
const VALIDATION_OPEN: &str = "validation \u{7b}";

/// What each kind of top-level block must contain: a `variable` a `validation` block, an
/// `output` a `description`.
fn required_inside(header: &str) -> (&'static str, &'static str) {
    if header.starts_with("variable") {
        (VALIDATION_OPEN, "validation")
    } else {
        ("description", "description")
    }
}

/// The top-level `variable` blocks without a `validation` block and `output` blocks without a
/// `description` in one file (blocks open at the end of a header line and close with a line
/// that is only the closing brace, as `terraform fmt` writes them).
fn undocumented_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<(String, bool)> = None;
    for line in text.lines() {
        if let Some((header, found)) = &mut open {
            let (wanted, name) = required_inside(header);
            *found |= line.trim_start().starts_with(wanted);
            if line == BLOCK_CLOSE {
                if !*found {
                    out.push(format!("{header} has no {name}"));
                }
                open = None;
            }
        } else if let Some(header) = line.strip_suffix(BLOCK_OPEN)
            && (header.starts_with("variable \"") || header.starts_with("output \""))
        {
            open = Some((header.to_owned(), false));
        }
    }
    out
}

/// One line split into its code outside strings (comments dropped) and its string literals.
fn split_line(line: &str) -> (String, Vec<String>) {
    let mut code = String::new();
    let mut strings = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '#' => break,
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                s.push(escaped);
                            }
                        }
                        '"' => break,
                        _ => s.push(c),
                    }
                }
                strings.push(s);
            }
            _ => code.push(c),
        }
    }
    (code, strings)
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
    fn a_path_above_the_module_is_found() {
        let line = r#"  schema_file = coalesce(var.schema_file, "${path.module}/../schema.json")"#;
        assert_eq!(
            outside_references(line, 0),
            vec![r#""${path.module}/../schema.json""#]
        );
        assert!(outside_references(r#"  x = file("${path.module}/schema.json")"#, 0).is_empty());
    }

    #[test]
    fn an_example_may_reach_the_module_but_not_above_it() {
        assert!(outside_references(r#"  source = "../..""#, 2).is_empty());
        assert_eq!(outside_references(r#"  source = "../../..""#, 2).len(), 1);
        assert!(outside_references(r#"  source = "../modules/x""#, 0).len() == 1);
    }

    #[test]
    fn comments_prose_and_caller_paths_are_not_reads() {
        assert!(outside_references("  # see ../README.md", 0).is_empty());
        assert!(outside_references(r#"  a = 1 // "../x""#, 0).is_empty());
        assert!(outside_references(r#"  m = "in 1..100""#, 0).is_empty());
        assert!(outside_references(r#"  f = "${var.dist_dir}/../x/bootstrap.zip""#, 0).is_empty());
    }

    #[test]
    fn a_variable_without_validation_and_an_output_without_description_are_named() {
        let tf = "variable \"a\" {\n  type = number\n  validation {\n    condition = var.a > 0\n  }\n}\n\
                  variable \"b\" {\n  type = number\n}\n\
                  output \"c\" {\n  description = \"C.\"\n  value = 1\n}\n\
                  output \"d\" {\n  value = 1\n}\n";
        assert_eq!(
            undocumented_blocks(tf),
            vec![
                "variable \"b\" has no validation",
                "output \"d\" has no description"
            ]
        );
    }

    #[test]
    fn the_callers_folders_are_found() {
        assert_eq!(
            outside_references(r#"  f = "${path.cwd}/schema.json""#, 0),
            vec!["path.cwd (the caller's folder)"]
        );
        assert_eq!(outside_references("  f = path.root", 0).len(), 1);
    }
}
