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

mod cdk;
mod iam;
mod infra_schema;
mod infra_test;
mod module_docs;
mod module_paths;
mod outcome;
mod terraform;
mod tools;

pub use infra_schema::{ADMIN_BIN, infra_schema};
pub use infra_test::infra_test;
pub(crate) use tools::ensure_node_modules;
