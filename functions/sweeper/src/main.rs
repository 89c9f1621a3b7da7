//! Lambda entry point: wires configuration, telemetry and clients, then on each event: a
//! sweep (the minute's tick; an invocation whose sweep could not make a refund it owed
//! fails, and the webhook safety net's round follows), one audit pass (the daily task; an
//! unfinished audit continues in a new asynchronous invocation of this function), the ledger
//! tamper alarm (ledger stream records), the webhook fan-out (webhooks stream records) or
//! webhook deliveries (delivery queue messages, each one POST).

use std::time::{Duration, SystemTime};

use atelier_shared::adapters::aws::Clients;
use atelier_shared::adapters::telemetry::InitClock;
use atelier_shared::adapters::webhooks::client::WebhookClient;
use atelier_shared::config::Config;
use atelier_shared::services::{App, guard};
use atelier_sweeper::SweeperEvent;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use lambda_runtime::{LambdaEvent, service_fn};
use serde_json::{Value, json};

/// Time an audit pass leaves before the invocation's deadline (one group of checks, the
/// continuation's invoke and the flush).
const AUDIT_MARGIN: Duration = Duration::from_secs(20);

/// The cold start: configuration, clients, the push providers' keys and the webhook client,
/// each step timed (`init_timed`).
async fn init() -> Result<(App, WebhookClient, aws_sdk_lambda::Client), lambda_runtime::Error> {
    let mut clock = InitClock::start();
    atelier_shared::adapters::telemetry::init();
    atelier_shared::adapters::metrics::install_in_lambda()
        .inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    clock.step("telemetry");
    let config =
        Config::from_env().inspect_err(|e| tracing::error!(error = %e, "config_invalid"))?;
    clock.step("config");
    let sdk = atelier_shared::adapters::aws::sdk_config()
        .await
        .inspect_err(|e| tracing::error!(error = %e, "tls_roots_failed"))?;
    let clients = Clients::new(&sdk);
    let lambda = aws_sdk_lambda::Client::new(&sdk);
    clock.step("aws_clients");
    let http = WebhookClient::new(config.webhooks.private_addresses)
        .inspect_err(|e| tracing::error!(error = %e, "webhook_client_failed"))?;
    let timeout = Duration::from_secs(config.webhooks.timeout_secs);
    let pusher = atelier_shared::adapters::push::load(&config.push, &clients, timeout)
        .await
        .inspect_err(
            |e| tracing::error!(error = %atelier_shared::error::chain(e), "push_client_failed"),
        )?;
    clock.step("push_and_webhooks");
    let app = App::new(config, &clients).with_pusher(pusher);
    clock.step("app");
    clock.log();
    Ok((app, http, lambda))
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let (app, http, lambda) = init().await?;
    let (app, http, lambda) = (&app, &http, &lambda);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let deadline = event.context.deadline();
        let out = match SweeperEvent::parse(event.payload) {
            Ok(SweeperEvent::Tick) => {
                let summary = atelier_sweeper::handle(app, atelier_shared::clock::now()).await;
                atelier_sweeper::redrive_webhooks(app, http, atelier_shared::clock::now()).await;
                atelier_shared::adapters::metrics::flush();
                // The summary is logged either way (sweep_completed); a refund that could
                // not be made fails the invocation, so the function's Errors metric sees it.
                atelier_sweeper::verdict(&summary)?;
                serde_json::to_value(summary)?
            }
            Ok(SweeperEvent::Audit { after }) => {
                if after.is_none() {
                    // The day's first pass: the configured models' lifecycle as well.
                    let ids = atelier_shared::config::configured_model_ids();
                    let today = atelier_shared::clock::now().date();
                    atelier_shared::adapters::model::catalogue::check_lifecycle(&ids, today);
                }
                let pass = guard::scheduled_audit(app, after.as_ref(), stop_at(deadline)).await;
                atelier_shared::adapters::metrics::flush();
                let pass = pass.inspect_err(|e| tracing::error!(error = %e, "audit_failed"))?;
                if let Some(next) = atelier_sweeper::audit_continuation(&pass) {
                    continue_audit(lambda, next).await?;
                }
                json!({ "accounts": pass.report.accounts, "offenders": pass.report.offenders.len() })
            }
            Ok(SweeperEvent::WebhookStream(batch)) => {
                let events = atelier_sweeper::webhook_stream_events(batch);
                let hooks = atelier_sweeper::hooks(app, http);
                // A failure fails the batch: the mapping retries it (nothing was sent twice
                // that matters: a duplicate message finds its attempt claimed).
                let sent = atelier_shared::services::webhooks::fan_out(hooks, &events)
                    .await
                    .inspect_err(|e| tracing::error!(error = %e, "webhooks_fan_out_failed"))?;
                json!({ "messages": sent })
            }
            Ok(SweeperEvent::WebhookDeliveries(batch)) => {
                let response = atelier_sweeper::deliver_webhooks(app, http, batch).await;
                atelier_shared::adapters::metrics::flush();
                serde_json::to_value(response)?
            }
            Ok(SweeperEvent::LedgerStream(batch)) => {
                let changes = atelier_sweeper::ledger_stream(batch);
                atelier_shared::adapters::metrics::flush();
                json!({ "ledger_rows_changed": changes? })
            }
            Err(e) => {
                tracing::error!(error = %e, "event_unrecognized");
                return Err(e.into());
            }
        };
        Ok::<_, lambda_runtime::Error>(out)
    }))
    .await
}

/// When an audit pass stops: `AUDIT_MARGIN` before the invocation's deadline.
fn stop_at(deadline: SystemTime) -> Option<std::time::Instant> {
    let left = deadline.duration_since(SystemTime::now()).ok()?;
    Some(std::time::Instant::now() + left.saturating_sub(AUDIT_MARGIN))
}

/// Invokes this function again, asynchronously, with the audit's continuation.
async fn continue_audit(
    lambda: &aws_sdk_lambda::Client,
    payload: Value,
) -> Result<(), lambda_runtime::Error> {
    let function = atelier_shared::adapters::aws::lambda_function_name()
        .ok_or("the audit continues only inside Lambda")?;
    lambda
        .invoke()
        .function_name(function)
        .invocation_type(InvocationType::Event)
        .payload(Blob::new(serde_json::to_vec(&payload)?))
        .send()
        .await
        .inspect_err(|e| tracing::error!(error = %e, "audit_continue_failed"))?;
    tracing::info!(%payload, "audit_continued");
    Ok(())
}
