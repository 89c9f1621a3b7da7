//! Webhook delivery and the operator's endpoint commands.
//!
//! [`deliver_due`] runs one delivery round for each due outbox event: it POSTs the event's
//! stored body, signed with every live secret of each active endpoint that has not yet had it,
//! records every attempt in the event's delivery log, and schedules the next round with
//! exponential backoff (the policy in [`crate::domain::webhooks::RetryPolicy`]). It never touches a
//! job: a slow or failing receiver costs only the worker's time. An endpoint that has failed
//! every attempt for `disable_after_secs` (three days) is disabled (metric
//! `WebhookEndpointsDisabled`, alarmed). The worker writes an endpoint only through conditional
//! updates of its failure fields, so an operator's remove or rotation is never undone; every
//! POST goes through [`WebhookClient`] (no redirects; public addresses only outside local runs).

use std::time::{Duration, Instant as StdInstant};

use crate::adapters::webhooks::client::WebhookClient;
use crate::adapters::webhooks::{UrlError, validate_url};
use crate::clock::{self, Instant};
use crate::config::WebhookSettings;
use crate::domain::webhooks::sign::{self, Secret};
use crate::error::Error;
use crate::store::Store;
use crate::store::schema::{
    WEBHOOK_ENDPOINTS, WebhookAttemptItem, WebhookEndpointItem, WebhookEventItem, WebhookSecret,
    webhook_attempt_key,
};
use crate::store::webhooks::EndpointChange;

/// How long a rotated-out secret keeps signing (receivers switch within this).
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// Events one call of [`deliver_due`] takes on.
pub const BATCH: i32 = 25;
/// The longest error text kept in the delivery log.
const MAX_ERROR_LEN: usize = 200;

/// What one call of [`deliver_due`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DeliverySummary {
    pub events: u64,
    pub delivered: u64,
    pub failed: u64,
    pub endpoints_disabled: u64,
    pub errors: u64,
}

/// Runs one round for each event due at `now` (at most [`BATCH`]), starting no new event
/// after `budget` has passed (the caller's own time limit). The endpoints are read afresh for
/// each event, so an operator's remove or rotation applies from the next event on, and every
/// write to an endpoint is conditional on the generation read (see [`settle_endpoints`]).
pub async fn deliver_due(
    store: &Store,
    http: &WebhookClient,
    settings: &WebhookSettings,
    now: Instant,
    budget: Duration,
) -> Result<DeliverySummary, Error> {
    let started = StdInstant::now();
    let due = store.webhook_events_due(&clock::format(now), BATCH).await?;
    let mut summary = DeliverySummary::default();
    for mut event in due {
        if started.elapsed() > budget {
            break;
        }
        summary.events += 1;
        let endpoints: Vec<WebhookEndpointItem> = store
            .webhook_endpoints()
            .await?
            .into_iter()
            .filter(|e| e.disabled_at.is_none())
            .collect();
        let failed = round(
            store,
            http,
            settings,
            now,
            &mut event,
            &endpoints,
            &mut summary,
        )
        .await;
        let disabled = settle_endpoints(
            store,
            settings,
            now,
            &endpoints,
            &failed,
            &event,
            &mut summary,
        )
        .await?;
        let all_served = endpoints
            .iter()
            .filter(|e| !disabled.contains(&e.hook_sk))
            .all(|e| event.delivered_to.contains(&e.hook_sk));
        let next = (!all_served && event.rounds < settings.retry.give_up_after)
            .then(|| clock::format(now + settings.retry.wait_after(event.rounds)));
        if !store.finish_webhook_round(&event, next.as_deref()).await? {
            tracing::info!(event_id = %event.hook_pk, "webhook_round_lost_race");
        }
    }
    Ok(summary)
}

/// Records a round's outcome on each endpoint it reached, with conditional updates of the
/// failure fields only: an endpoint removed or rotated since it was read is left as the
/// operator made it. Returns the endpoints disabled now.
async fn settle_endpoints(
    store: &Store,
    settings: &WebhookSettings,
    now: Instant,
    endpoints: &[WebhookEndpointItem],
    failed: &[String],
    event: &WebhookEventItem,
    summary: &mut DeliverySummary,
) -> Result<Vec<String>, Error> {
    let now_s = clock::format(now);
    let mut disabled = Vec::new();
    for ep in endpoints {
        let change = if failed.contains(&ep.hook_sk) {
            EndpointChange::Failed { now: now_s.clone() }
        } else if event.delivered_to.contains(&ep.hook_sk)
            && (ep.failed_rounds > 0 || ep.failing_since.is_some())
        {
            EndpointChange::Served
        } else {
            continue;
        };
        let Some(after) = store
            .update_webhook_endpoint(&ep.hook_sk, ep.generation, &change)
            .await?
        else {
            tracing::info!(endpoint = %ep.hook_sk, "webhook_endpoint_changed_during_round");
            continue;
        };
        let Some(since) = after.failing_since.as_deref() else {
            continue;
        };
        if !failing_too_long(since, now, settings) {
            continue;
        }
        let disable = EndpointChange::Disable { now: now_s.clone() };
        if store
            .update_webhook_endpoint(&ep.hook_sk, ep.generation, &disable)
            .await?
            .is_some()
        {
            summary.endpoints_disabled += 1;
            crate::adapters::metrics::webhook_endpoint_disabled();
            tracing::warn!(endpoint = %ep.hook_sk, since = %since, attempts = after.failed_rounds, "webhook_endpoint_disabled");
            disabled.push(ep.hook_sk.clone());
        }
    }
    Ok(disabled)
}

/// Whether an endpoint failing since `since` has failed for the policy's whole window.
fn failing_too_long(since: &str, now: Instant, settings: &WebhookSettings) -> bool {
    let window = Duration::from_secs(settings.retry.disable_after_secs);
    clock::parse(since).is_some_and(|t| now - t >= window)
}

/// One round of one event: a POST to each active endpoint it has not reached. Returns the
/// endpoints that failed; `event` comes back with its round counted and served endpoints added.
async fn round(
    store: &Store,
    http: &WebhookClient,
    settings: &WebhookSettings,
    now: Instant,
    event: &mut WebhookEventItem,
    endpoints: &[WebhookEndpointItem],
    summary: &mut DeliverySummary,
) -> Vec<String> {
    event.rounds += 1;
    let mut failed = Vec::new();
    for ep in endpoints {
        if event.delivered_to.contains(&ep.hook_sk) {
            continue;
        }
        let attempt = post(http, settings, now, event, ep).await;
        let ok = attempt.status_code.is_some_and(|c| (200..300).contains(&c));
        crate::adapters::metrics::webhook_attempt(ok);
        tracing::info!(
            event_id = %event.hook_pk,
            endpoint = %ep.hook_sk,
            round = event.rounds,
            status = attempt.status_code,
            millis = attempt.millis,
            "webhook_attempt"
        );
        if let Err(e) = store.put_webhook_attempt(&attempt).await {
            summary.errors += 1;
            tracing::warn!(error = %e, "webhook_attempt_log_failed");
        }
        if ok {
            summary.delivered += 1;
            event.delivered_to.push(ep.hook_sk.clone());
        } else {
            summary.failed += 1;
            failed.push(ep.hook_sk.clone());
        }
    }
    failed
}

/// The secrets that sign at `now`: every one not yet expired, newest first.
fn live_secrets(ep: &WebhookEndpointItem, now: &str) -> Vec<Secret> {
    ep.secrets
        .iter()
        .rev()
        .filter(|s| s.expires_at.as_deref().is_none_or(|at| at > now))
        .filter_map(|s| Secret::parse(&s.secret).ok())
        .collect()
}

/// POSTs `event` to `ep` once and describes the attempt for the log.
async fn post(
    http: &WebhookClient,
    settings: &WebhookSettings,
    now: Instant,
    event: &WebhookEventItem,
    ep: &WebhookEndpointItem,
) -> WebhookAttemptItem {
    let now_s = clock::format(now);
    let mut attempt = WebhookAttemptItem {
        hook_pk: event.hook_pk.clone(),
        hook_sk: webhook_attempt_key(event.rounds, &ep.hook_sk),
        endpoint_id: ep.hook_sk.clone(),
        round: event.rounds,
        at: now_s.clone(),
        status_code: None,
        error: None,
        millis: 0,
        expires_at: Some(crate::domain::webhooks::expires_at(now)),
    };
    // The attempt's own time, not the event's: receivers refuse stale timestamps.
    let sent_at = clock::now().unix_timestamp();
    let headers = match sign::sign(
        &event.hook_pk,
        sent_at,
        event.body.as_bytes(),
        &live_secrets(ep, &now_s),
    ) {
        Ok(h) => h,
        Err(e) => {
            attempt.error = Some(e.to_string());
            return attempt;
        }
    };
    let timeout = Duration::from_secs(settings.timeout_secs);
    let started = StdInstant::now();
    match http
        .post(&ep.url, &headers, event.body.clone(), timeout)
        .await
    {
        Ok(code) => attempt.status_code = Some(code),
        Err(e) => {
            let mut text = e.to_string();
            text.truncate(MAX_ERROR_LEN);
            attempt.error = Some(text);
        }
    }
    attempt.millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    attempt
}

/// Why an endpoint command was refused.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error("no webhook endpoint {0}")]
    NotFound(String),
    #[error(
        "webhook endpoint {0} changed while it was being rotated; nothing changed, run it again"
    )]
    Changed(String),
    #[error(transparent)]
    Store(#[from] Error),
}

/// A new endpoint: its id and its secret (shown once, to hand to the receiver). Outside local
/// runs a URL naming a loopback, private or link-local address is refused.
pub async fn add_endpoint(
    store: &Store,
    settings: &WebhookSettings,
    url: &str,
    now: Instant,
) -> Result<(WebhookEndpointItem, String), EndpointError> {
    let url = validate_url(url, settings.private_addresses)?;
    let secret = Secret::generate().expose();
    let bytes: [u8; 10] = rand::random();
    let endpoint = WebhookEndpointItem {
        hook_pk: WEBHOOK_ENDPOINTS.to_owned(),
        hook_sk: format!("ep_{}", hex::encode(bytes)),
        url: url.to_string(),
        secrets: vec![WebhookSecret {
            secret: secret.clone(),
            created_at: clock::format(now),
            expires_at: None,
        }],
        created_at: clock::format(now),
        failed_rounds: 0,
        failing_since: None,
        disabled_at: None,
        generation: 0,
    };
    store.add_webhook_endpoint(&endpoint).await?;
    Ok((endpoint, secret))
}

/// A new secret for endpoint `id`; the current ones keep signing for [`ROTATION_OVERLAP`].
/// Re-enables a disabled endpoint (an operator rotating has looked at it). One conditional
/// update of the generation read: a concurrent rotation or remove is never overwritten.
pub async fn rotate_endpoint(
    store: &Store,
    id: &str,
    now: Instant,
) -> Result<String, EndpointError> {
    let ep = find(store, id).await?;
    let now_s = clock::format(now);
    let until = clock::format(now + ROTATION_OVERLAP);
    let mut secrets = ep.secrets;
    secrets.retain(|s| s.expires_at.as_deref().is_none_or(|at| at > now_s.as_str()));
    for s in &mut secrets {
        if s.expires_at.is_none() {
            s.expires_at = Some(until.clone());
        }
    }
    let secret = Secret::generate().expose();
    secrets.push(WebhookSecret {
        secret: secret.clone(),
        created_at: now_s,
        expires_at: None,
    });
    let change = EndpointChange::Rotate { secrets };
    match store
        .update_webhook_endpoint(id, ep.generation, &change)
        .await?
    {
        Some(_) => Ok(secret),
        None => Err(EndpointError::Changed(id.to_owned())),
    }
}

/// Removes endpoint `id`.
pub async fn remove_endpoint(store: &Store, id: &str) -> Result<(), EndpointError> {
    if store.delete_webhook_endpoint(id).await? {
        Ok(())
    } else {
        Err(EndpointError::NotFound(id.to_owned()))
    }
}

async fn find(store: &Store, id: &str) -> Result<WebhookEndpointItem, EndpointError> {
    store
        .webhook_endpoints()
        .await?
        .into_iter()
        .find(|e| e.hook_sk == id)
        .ok_or_else(|| EndpointError::NotFound(id.to_owned()))
}
