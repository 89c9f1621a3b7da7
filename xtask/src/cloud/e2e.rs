//! `cargo xtask cloud-test`: the end-to-end test through the deployed API, with each deployed
//! function's AWS calls recorded for the IAM check.

use std::time::Instant;

use anyhow::{Context, Result};

use super::cdk::{STACK, STRIPE_WEBHOOK_SECRET};
use super::command::build_host_tools;
use super::deploy::deploy_zips;
use super::ports::{Iam, local_aws};
use super::proxies::route_through_proxies;
use crate::workspace::{cargo, debug_bin, iam_calls_dir, root, run};

/// `cargo xtask cloud-test`: deploy, then the end-to-end test through the deployed API.
/// `tools_built`: the caller already ran [`build_host_tools`].
pub fn cloud_test(tools_built: bool) -> Result<()> {
    let started = Instant::now();
    if !tools_built {
        build_host_tools()?;
    }
    let mut cloud = deploy_zips(None, Iam::Enforced)?;
    let recordings = iam_calls_dir();
    route_through_proxies(&mut cloud, &recordings, None)?;
    let test_started = Instant::now();
    let mut cmd = cargo();
    cmd.current_dir(root())
        .args(["test", "--workspace", "--test", "cloud_e2e", "--"])
        .args(["--ignored", "--nocapture", "--test-threads=1"]);
    local_aws(&mut cmd, cloud.ports);
    cmd.env("CLOUD_E2E_API_URL", &cloud.api_url)
        .env("CLOUD_E2E_ISSUER_URL", cloud.ports.issuer_url())
        .env("CLOUD_E2E_STAND_IN_URL", cloud.ports.model_url())
        .env("CLOUD_E2E_OUTPUTS", &cloud.outputs_file)
        .env("CLOUD_E2E_STACK", STACK)
        .env("CLOUD_E2E_ADMIN_BIN", debug_bin("atelier-admin"))
        .env("CLOUD_E2E_STRIPE_WEBHOOK_SECRET", STRIPE_WEBHOOK_SECRET)
        .env("CLOUD_E2E_STATE", &cloud.state)
        .env(
            "CLOUD_E2E_SIGNING_ANCHOR",
            super::signing::anchor(&cloud.state),
        )
        .env(
            "ATELIER_C2PA_PYTHON",
            crate::official::ensure_official_c2pa()?,
        );
    let result = run(&mut cmd).context("the end-to-end test against the local cloud failed");
    let test_time = test_started.elapsed();
    eprintln!(
        "xtask: cloud-test: deploy {:.1} s, end-to-end test {:.1} s, total {:.1} s (logs in {})",
        cloud.deploy_time.as_secs_f64(),
        test_time.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        cloud.state.display()
    );
    if result.is_err() {
        eprintln!(
            "xtask: cloud-test: function output is in {}",
            cloud.state.join("ministack.log").display()
        );
    }
    drop(cloud);
    result
}
