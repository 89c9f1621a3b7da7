//! Lambda entry point: wires configuration, telemetry, clients and the model client, then
//! serves SQS events.

use atelier_shared::aws::Clients;
use atelier_shared::config::Config;
use atelier_shared::services::App;
use atelier_shared::services::process::Processor;
use aws_lambda_events::sqs::SqsEvent;
use lambda_runtime::{LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    atelier_shared::telemetry::init();
    let config =
        Config::from_env().inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    let clients = Clients::from_env().await;
    let model = atelier_shared::model::setup::client_from_env(&clients)
        .await
        .inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    let processor = Processor::new(App::new(config, &clients), model);
    let processor = &processor;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        Ok::<_, lambda_runtime::Error>(atelier_consumer::handle(processor, event.payload).await)
    }))
    .await
}
