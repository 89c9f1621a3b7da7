//! Lambda entry point: wires configuration, telemetry and clients, then serves the router.

use atelier_shared::aws::Clients;
use atelier_shared::config::Config;
use atelier_shared::services::App;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    atelier_shared::telemetry::init();
    let config =
        Config::from_env().inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    let clients = Clients::from_env().await;
    lambda_http::run(atelier_api::router(App::new(config, &clients))).await
}
