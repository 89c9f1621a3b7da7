//! Project automation, as cargo commands:
//!
//! - `cargo xtask dev`   — install and start the local AWS (ministack), create the resources,
//!   and serve the API on http://127.0.0.1:8787 with the dev JWT issuer.
//! - `cargo xtask test`  — install and start a private ministack, then run every test.
//! - `cargo xtask token --user NAME` — print a dev bearer token.
//! - `cargo xtask admin …` — run `atelier-admin` against the local stack.
//! - `cargo xtask ministack` — only start the local AWS and wait.
//! - `cargo xtask package [--arch x86_64|arm64]` — build the three Lambda zips (`package.rs`).
//! - `cargo xtask infra-test` — every offline check of `infra/` (`infra.rs`).
//! - `cargo xtask infra-schema` — refresh `infra/schema.json`, `infra/env-names.json` and `infra/models.json`
//!   (`infra.rs`).
//! - `cargo xtask fuzz [--requests N] [--seed S]` — schemathesis against the local API, then
//!   the audit (`fuzz.rs`).
//! - `cargo xtask cloud` — deploy the packaged functions with the CDK app to a private
//!   ministack (the local cloud, `cloud.rs`); `cargo xtask cloud-test` — and test it end to end.
//! - `cargo xtask bench [--jobs N] [--workers K] [--no-cloud]` — the benchmark table on a
//!   private local stack (`bench.rs`, the program in `tools/bench`), then the pipeline and peer
//!   tables on the deployed local cloud (`bench_cloud.rs`; alone: `cargo xtask bench-cloud`).
//!
//! - `cargo xtask mutants -f FILE… [-F RE|-E RE]… [--suite NAME]… [--filter TEXT]…` —
//!   cargo-mutants over `atelier-shared` with the integration suites on a private local stack,
//!   only the tests named by the filters when given (`mutants.rs`; not in CI).
//! - `cargo xtask fn-lengths [--ratchet]` — the longest functions and files; fails on one over
//!   its limit that `xtask/long-functions.txt` does not list (`fn_lengths.rs`).
//! - `cargo xtask layers` — fails on an import circle between the files of any crate
//!   (`layers.rs`).
//!
//! The standard library, `anyhow`, and `syn` for `fn-lengths`, so this builds in seconds on a fresh machine.
//!
//! This file only dispatches the arguments: `dev`, `token`, `admin` and `ministack` are in
//! `dev.rs`, `test` and `web-test` in `test_run.rs`. What the commands share has files of its
//! own: `workspace.rs` (paths, `cargo`, `run`), `venv.rs`, `ministack.rs`, `local_env.rs` (a
//! local run's environment) and `official.rs` (the official clients the tests drive).

use std::process::ExitCode;

mod bench;
mod bench_cloud;
mod cloud;
mod deny;
mod dev;
mod fn_lengths;
mod fuzz;
mod infra;
mod layers;
mod local_env;
mod ministack;
mod mutants;
mod official;
mod package;
mod release;
mod skips;
mod test_run;
mod tf_docs;
mod venv;
mod web;
mod workspace;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("dev") => dev::dev(),
        Some("test") => test_run::test(&args[1..]),
        Some("token") => dev::token(&args[1..]),
        Some("admin") => dev::admin(&args[1..]),
        Some("ministack") => dev::ministack_only(),
        Some("package") => package::package(&args[1..]),
        Some("release") => release::release(&args[1..]),
        Some("infra-test") => infra::infra_test().map(|_| ExitCode::SUCCESS),
        Some("infra-schema") => infra::infra_schema(),
        Some("cloud") => cloud::cloud(),
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        Some("fn-lengths") => fn_lengths::fn_lengths(&args[1..]),
        Some("layers") => layers::layers(),
        Some("mutants") => mutants::mutants(&args[1..]),
        Some("deny") => deny::deny(),
        Some("web-test") => test_run::web_test_only(),
        Some("bench") => bench::bench_all(&args[1..]),
        Some("bench-cloud") => bench_cloud::bench_cloud(&args[1..]),
        Some("cloud-test") => cloud::cloud_test(false).map(|()| ExitCode::SUCCESS),
        _ => {
            eprintln!(
                "usage: cargo xtask <dev | test [cargo test args] | token --user NAME | admin ARGS | ministack | package [--arch x86_64|arm64] | release [--target T]... | infra-test | infra-schema | cloud | cloud-test | fuzz [--requests N] [--seed S] | fn-lengths [--ratchet] | layers | deny | web-test | bench [--jobs N] [--workers K] [--model-ms L] [--no-cloud] | bench-cloud [--jobs N] [--model-ms L] | bench-cloud --chaos N [--seed S] | bench-cloud --flood RATE [--flood-secs N] | mutants -f FILE… [-F RE|-E RE]… [--suite NAME]… [--filter TEXT]…>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}
