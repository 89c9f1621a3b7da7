//! Lambda entry point: wires configuration, telemetry and clients, then serves the router.

use atelier_shared::adapters::aws::Clients;
use atelier_shared::adapters::telemetry::InitClock;
use atelier_shared::config::Config;
use atelier_shared::services::App;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let mut clock = InitClock::start();
    atelier_shared::adapters::telemetry::init();
    atelier_shared::adapters::metrics::install_in_lambda()
        .inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    clock.step("telemetry");
    let mut config =
        Config::from_env().inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    clock.step("config");
    let clients = Clients::from_env()
        .await
        .inspect_err(|e| tracing::error!(error = %e, "tls_roots_failed"))?;
    clock.step("aws_clients");
    let key = atelier_shared::adapters::address_key::load(&config.identity, &clients)
        .await
        .inspect_err(
            |e| tracing::error!(error = %atelier_shared::error::chain(e), "address_key_failed"),
        )?;
    config.identity.address_key = Some(key);
    clock.step("address_key");
    let stripe = atelier_shared::adapters::payments::setup::connect(&config.payments, &clients)
        .await
        .inspect_err(
            |e| tracing::error!(error = %atelier_shared::error::chain(e), "payments_setup_failed"),
        )?;
    let play = atelier_shared::adapters::payments::setup::connect_google_play(
        &config.payments,
        &clients,
    )
    .await
    .inspect_err(
        |e| tracing::error!(error = %atelier_shared::error::chain(e), "google_play_setup_failed"),
    )?;
    let apple_api = atelier_shared::adapters::payments::setup::connect_app_store_api(
        &config.payments,
        &clients,
    )
    .await
    .inspect_err(
        |e| tracing::error!(error = %atelier_shared::error::chain(e), "app_store_api_setup_failed"),
    )?;
    clock.step("payments");
    let app = App::new(config, &clients)
        .with_stripe(stripe)
        .with_google_play(play)
        .with_app_store_api(apple_api);
    // One request per invocation: its metrics are written as its response leaves.
    let router = atelier_api::router(app).layer(axum::middleware::map_response(
        |res: axum::response::Response| async {
            atelier_shared::adapters::metrics::flush();
            res
        },
    ));
    clock.step("router");
    clock.log();
    lambda_http::run(router).await
}
