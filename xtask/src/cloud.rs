//! The local cloud: the Lambda zips `cargo xtask package` makes, deployed by the CDK app in
//! `infra/` (unchanged but for parameters) to a private ministack, with the stand-in model
//! server as the model and the dev issuer as the JWT authorizer's issuer.
//!
//! - `cargo xtask cloud` — build, deploy, check, print the API URL, and keep it all running
//!   until Ctrl-C.
//! - `cargo xtask cloud-test` — the same deploy, then the end-to-end test
//!   (`tests/tests/cloud_e2e.rs`, ignored by default) through the deployed HTTP API only.
//!
//! Ports: ministack on `ATELIER_CLOUD_PORT` (4610), the stand-in model on that + 4200 (8810),
//! the dev issuer on that + 4201 (8811). State lives in `target/cloud-<port>/`, wiped at every
//! start: ministack replaces a retained table when a stack is created again, so a deploy onto
//! old state would not be a clean deploy.
//!
//! IAM is enforced ([`Iam::Enforced`], ministack's `AUTH=true`): the deployer is the account's
//! root (key `test`), and each deployed function runs with its own role's assumed-role
//! credentials, so a call its role does not allow is refused as AWS refuses it. ministack then
//! serves HTTPS ([`tls`]). The benchmark deploys with [`Iam::Off`], over plain HTTP, as before.

mod cdk;
mod command;
mod deploy;
mod deployed;
mod e2e;
mod http;
mod ports;
mod procs;
mod proxies;
mod services;
mod signing;
mod tls;

pub(crate) use cdk::STACK;
pub use cdk::STRIPE_WEBHOOK_SECRET;
pub use command::{build_host_tools, cloud};
pub(crate) use deploy::deploy_zips;
pub use deployed::Cloud;
pub use e2e::cloud_test;
pub(crate) use ports::Iam;
pub(crate) use proxies::{WireFaults, route_through_proxies};
