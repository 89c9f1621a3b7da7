//! Lambda entry point: wires configuration, telemetry, clients and the model client, then
//! serves SQS events.

use atelier_shared::adapters::aws::Clients;
use atelier_shared::adapters::telemetry::InitClock;
use atelier_shared::config::Config;
use atelier_shared::services::App;
use atelier_shared::services::process::{Processor, Providers};
use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{LambdaEvent, service_fn};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let mut clock = InitClock::start();
    atelier_shared::adapters::telemetry::init();
    atelier_shared::adapters::metrics::install_in_lambda()
        .inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    clock.step("telemetry");
    let config =
        Config::from_env().inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    clock.step("config");
    let clients = Clients::from_env()
        .await
        .inspect_err(|e| tracing::error!(error = %e, "tls_roots_failed"))?;
    clock.step("aws_clients");
    // The provider keys and the signing key are read at once: cold start waits for the longer.
    let (models, signing) = tokio::join!(
        atelier_shared::adapters::model::setup::clients_from_env(&clients),
        atelier_shared::adapters::credentials::from_env(&clients),
    );
    clock.step("secrets");
    let (edit, vision) = models.inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    let signing = signing.inspect_err(|e| tracing::error!(error = %e, "signing_invalid"))?;
    let providers = Providers::new(edit, vision).ok_or("no model provider is configured")?;
    let consumer_timeout = std::time::Duration::from_secs(config.limits.consumer_timeout_secs);
    let app = App::new(config, &clients);
    let processor = Processor::with_providers(app, providers, Arc::new(signing));
    processor
        .check_fits(consumer_timeout)
        .inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    clock.step("processor");
    clock.log();
    let processor = &processor;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let deadline = atelier_consumer::deadline_of(event.context.deadline());
        let response = atelier_consumer::handle_until(processor, event.payload, deadline).await;
        atelier_shared::adapters::metrics::flush();
        Ok::<_, lambda_runtime::Error>(response)
    }))
    .await
}
