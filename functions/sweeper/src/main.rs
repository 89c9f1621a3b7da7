//! Lambda entry point: wires configuration, telemetry and clients, then sweeps on each
//! scheduled event; an invocation whose sweep could not make a refund it owed fails.

use atelier_shared::aws::Clients;
use atelier_shared::config::Config;
use atelier_shared::services::App;
use aws_lambda_events::cloudwatch_events::CloudWatchEvent;
use lambda_runtime::{LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    atelier_shared::telemetry::init();
    atelier_shared::metrics::install_in_lambda()
        .inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    let config =
        Config::from_env().inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    let clients = Clients::from_env().await;
    let app = &App::new(config, &clients);
    let http = &reqwest::Client::new();
    lambda_runtime::run(service_fn(
        move |_event: LambdaEvent<CloudWatchEvent>| async move {
            let summary = atelier_sweeper::handle(app, atelier_shared::clock::now()).await;
            atelier_sweeper::deliver_webhooks(app, http, atelier_shared::clock::now()).await;
            atelier_shared::metrics::flush();
            // The summary is logged either way (sweep_completed); a refund that could not be
            // made fails the invocation, so the function's Errors metric sees it too.
            atelier_sweeper::verdict(&summary)?;
            Ok::<_, lambda_runtime::Error>(summary)
        },
    ))
    .await
}
