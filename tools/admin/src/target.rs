//! The deployment the commands work on, resolved once in `main`, and the services on it.

use anyhow::{Context, bail};
use atelier_shared::adapters::aws::Clients;
use atelier_shared::config::Config;
use atelier_shared::services::App;

use crate::deployment;

/// Where the commands work: the AWS configuration and the deployment's names (set once, in
/// `main`, before any command runs).
pub static TARGET: std::sync::OnceLock<(aws_config::SdkConfig, deployment::Deployed)> =
    std::sync::OnceLock::new();

pub async fn app() -> anyhow::Result<App> {
    let Some((sdk, deployed)) = TARGET.get() else {
        bail!("the deployment was not resolved")
    };
    let config = Config::from_lookup(|k| deployed.get(k)).context("reading configuration")?;
    Ok(App::new(config, &Clients::new(sdk)))
}
