//! `atelier-admin webhook …`: the deployment's webhook endpoints, and each event's delivery
//! log and replay. The rules are in `atelier_shared::services::webhooks`.

use std::process::ExitCode;

use atelier_shared::clock;
use atelier_shared::services::App;
use atelier_shared::services::webhooks;
use clap::Subcommand;
use serde_json::json;

#[derive(Subcommand)]
pub enum WebhookAction {
    /// Add an endpoint (https, or http to 127.0.0.1/localhost in local runs) that gets every
    /// event; loopback, private and link-local addresses are refused unless
    /// ATELIER_WEBHOOK_PRIVATE_ADDRESSES=allow (local runs). Prints its id and its signing
    /// secret (`whsec_…`), shown this once: give it to the receiver.
    Add { url: String },
    /// A new secret for an endpoint (printed once); the old one keeps signing beside it for
    /// 24 h so the receiver can switch, or stops at once with --now (a leaked secret).
    /// Re-enables a disabled endpoint.
    Rotate {
        id: String,
        /// Revoke the old secrets at once: the next delivery is signed by the new one alone.
        #[arg(long)]
        now: bool,
    },
    /// Remove an endpoint: it gets nothing more.
    Remove { id: String },
    /// Every endpoint: id, URL, failures in a row, whether disabled (JSON; no secrets).
    List,
    /// An event (its body) and its delivery log: every attempt with its status or error.
    Deliveries { event_id: String },
    /// Send an event again to every active endpoint (same `webhook-id`: receivers dedupe).
    Replay { event_id: String },
}

/// Every endpoint as the list prints it (no secrets, only how many are live).
async fn endpoints(app: &App) -> anyhow::Result<serde_json::Value> {
    let list: Vec<_> = app
        .store
        .webhook_endpoints()
        .await?
        .into_iter()
        .map(|e| {
            json!({
                "id": e.hook_sk,
                "url": e.url,
                "created_at": e.created_at,
                "failed_rounds": e.failed_rounds,
                "disabled_at": e.disabled_at,
                "secrets": e.secrets.len(),
            })
        })
        .collect();
    Ok(json!(list))
}

/// Runs one webhook command.
pub async fn run(app: &App, action: WebhookAction) -> anyhow::Result<ExitCode> {
    let store = &app.store;
    let out = match action {
        WebhookAction::Add { url } => {
            let (ep, secret) =
                webhooks::add_endpoint(store, &app.config.webhooks, &url, clock::now()).await?;
            json!({ "id": ep.hook_sk, "url": ep.url, "secret": secret })
        }
        WebhookAction::Rotate { id, now } => {
            let (old, hours) = match now {
                true => (webhooks::OldSecrets::RevokeNow, 0),
                false => (webhooks::OldSecrets::Overlap, 24),
            };
            let secret = webhooks::rotate_endpoint(store, &id, old, clock::now()).await?;
            json!({ "id": id, "secret": secret, "previous_signs_for_hours": hours })
        }
        WebhookAction::Remove { id } => {
            webhooks::remove_endpoint(store, &id).await?;
            json!({ "removed": id })
        }
        WebhookAction::List => endpoints(app).await?,
        WebhookAction::Deliveries { event_id } => {
            let (event, attempts) = store.webhook_event_rows(&event_id).await?;
            let Some(event) = event else {
                return Err(crate::exit::not_found(format!(
                    "no webhook event {event_id}"
                )));
            };
            let deliveries = store.webhook_deliveries(&event_id).await?;
            json!({
                "id": event.hook_pk,
                "type": event.kind,
                "created_at": event.created_at,
                "pending": event.due_state.is_some(),
                "next_look_at": event.due_at,
                "deliveries": deliveries.iter().map(|d| json!({
                    "endpoint": d.endpoint_id,
                    "attempts": d.attempts - d.run_start,
                    "delivered_at": d.delivered_at,
                    "gave_up_at": d.gave_up_at,
                    "next_attempt_at": if d.ended() { None } else { d.next_due.clone() },
                })).collect::<Vec<_>>(),
                "attempts": attempts.iter().map(|a| json!({
                    "endpoint": a.endpoint_id,
                    "attempt": a.round,
                    "at": a.at,
                    "status": a.status_code,
                    "error": a.error,
                    "millis": a.millis,
                })).collect::<Vec<_>>(),
            })
        }
        WebhookAction::Replay { event_id } => {
            let now = clock::format(clock::now());
            if !store.replay_webhook_event(&event_id, &now).await? {
                return Err(crate::exit::not_found(format!(
                    "no webhook event {event_id}"
                )));
            }
            // The sweeper's next round enqueues the new run (within a minute).
            json!({ "replayed": event_id, "due_at": now })
        }
    };
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(ExitCode::SUCCESS)
}
