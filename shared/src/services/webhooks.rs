//! Webhook delivery and the operator's endpoint commands.
//!
//! Delivery is started by the change, not by the clock: the event row commits with the change
//! (the outbox), the webhooks table's stream hands new event rows to [`fan_out`], which puts
//! one message per (event, endpoint) on the delivery queue, and each message makes ONE POST
//! ([`deliver`]): signed with every live secret of the endpoint, limited to the settings'
//! timeout (15 s, as Svix), recorded in the event's delivery log. A failure schedules the next
//! attempt on Svix's schedule ([`NextAttempt`](crate::domain::webhooks::NextAttempt)): a delayed message for waits up to 15 min, a
//! recorded due time for longer ones. So attempts to one endpoint never wait for another's,
//! and each endpoint has at most `endpoint_concurrency` POSTs in flight (slots in DynamoDB; a
//! message that finds none comes back a little later). [`redrive_due`], in the sweeper's
//! minute, is the safety net: it enqueues any attempt due and unclaimed (a lost stream record,
//! a lost message, a crashed deliverer) and closes events whose deliveries all ended. Order
//! per endpoint is not promised; every attempt of an event carries the same `webhook-id`.
//!
//! An endpoint that has failed every attempt for `disable_after_secs` (three days) is
//! disabled (metric `WebhookEndpointsDisabled`, alarmed). The worker writes an endpoint only
//! through conditional updates of its failure fields, so an operator's remove or rotation is
//! never undone; every POST goes through [`WebhookClient`] (no redirects; public addresses
//! only outside local runs).

use std::time::{Duration, Instant as StdInstant};

use crate::adapters::webhooks::client::WebhookClient;
use crate::adapters::webhooks::{UrlError, validate_url};
use crate::clock::{self, Instant};
use crate::config::WebhookSettings;
use crate::domain::webhooks::DeliveryMessage;
use crate::domain::webhooks::sign::{self, Secret};
use crate::error::Error;
pub use crate::services::delivery::{Hooks, Outcome};
use crate::services::delivery::{active_endpoints, schedule_next};

use crate::store::Store;
use crate::store::schema::{
    WEBHOOK_ENDPOINTS, WebhookAttemptItem, WebhookEndpointItem, WebhookEventItem, WebhookSecret,
    webhook_attempt_key,
};
use crate::store::webhook_deliveries::AttemptEnd;
use crate::store::webhooks::EndpointChange;

mod redrive;
pub use redrive::{BATCH, RedriveSummary, redrive_due};

/// How long a rotated-out secret keeps signing (receivers switch within this).
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// The longest error text kept in the delivery log.
const MAX_ERROR_LEN: usize = 200;
/// A message that found every slot of its endpoint held comes back after this.
pub const SLOT_BUSY_DELAY_SECS: u64 = 2;
/// A claim's lease beyond the POST's own timeout (the records around it).
const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// The stream's new events: one first-attempt message per (event, active endpoint) and per
/// (event, device of its owner) for an event that notifies (`services::push`), sent at once.
/// Returns how many were sent.
pub async fn fan_out(hooks: Hooks<'_>, event_ids: &[String]) -> Result<usize, Error> {
    if event_ids.is_empty() {
        return Ok(0);
    }
    let endpoints = active_endpoints(hooks.store).await?;
    let pushes = crate::services::push::targets_of(hooks, event_ids).await?;
    let mut messages: Vec<(DeliveryMessage, u64)> = event_ids
        .iter()
        .flat_map(|event| {
            endpoints.iter().map(move |ep| {
                let m = DeliveryMessage {
                    event_id: event.clone(),
                    endpoint_id: ep.hook_sk.clone(),
                    attempt: 1,
                };
                (m, 0)
            })
        })
        .collect();
    let push_messages = pushes.into_iter().map(|(event_id, endpoint_id)| {
        let m = DeliveryMessage {
            event_id,
            endpoint_id,
            attempt: 1,
        };
        (m, 0)
    });
    messages.extend(push_messages);
    hooks.queue.send(&messages).await?;
    tracing::info!(
        events = event_ids.len(),
        messages = messages.len(),
        "webhooks_fanned_out"
    );
    Ok(messages.len())
}

/// One message: takes a slot of its endpoint, claims its attempt, POSTs once, records it and
/// schedules what follows. A duplicate message (its attempt claimed or made) does nothing.
pub async fn deliver(
    hooks: Hooks<'_>,
    msg: &DeliveryMessage,
    now: Instant,
) -> Result<Outcome, Error> {
    if msg
        .endpoint_id
        .starts_with(crate::domain::push::TARGET_PREFIX)
    {
        return crate::services::push::deliver(hooks, msg, now).await;
    }
    let store = hooks.store;
    let Some(ep) = store
        .webhook_endpoint(&msg.endpoint_id)
        .await?
        .filter(|e| e.disabled_at.is_none())
    else {
        return Ok(Outcome::Skipped);
    };
    let Some(event) = store.webhook_event(&msg.event_id).await? else {
        return Ok(Outcome::Skipped);
    };
    let lease = now + Duration::from_secs(hooks.settings.timeout_secs) + LEASE_MARGIN;
    let (now_s, lease_s) = (clock::format(now), clock::format(lease));
    let holder = format!("{}#{}", msg.event_id, msg.attempt);
    let slots = hooks.settings.endpoint_concurrency;
    let Some(slot) = store
        .take_webhook_slot(&ep.hook_sk, slots, &holder, &now_s, &lease_s)
        .await?
    else {
        // A copy of an attempt already claimed or made (a stream record seen twice, a
        // re-drive beside a late message, a deliverer that died after re-sending it) ends
        // here: sent again, it would come back every 2 s while the endpoint stays busy, and
        // each crash between that send and the delete of the original would add one more.
        if let Some(row) = store.webhook_delivery(&msg.event_id, &ep.hook_sk).await?
            && row.settled_for(msg.attempt)
        {
            tracing::info!(event_id = %msg.event_id, endpoint = %ep.hook_sk, attempt = msg.attempt, "webhook_attempt_duplicate");
            return Ok(Outcome::Skipped);
        }
        hooks
            .queue
            .send(&[(msg.clone(), SLOT_BUSY_DELAY_SECS)])
            .await?;
        tracing::info!(event_id = %msg.event_id, endpoint = %ep.hook_sk, "webhook_endpoint_busy");
        return Ok(Outcome::Busy);
    };
    let outcome = attempt_once(hooks, msg, &event, &ep, now, &lease_s).await;
    if let Err(e) = store.give_webhook_slot(&slot, &holder).await {
        tracing::warn!(error = %e, "webhook_slot_give_failed");
    }
    outcome
}

/// The claimed part of [`deliver`]: the POST, its record, the endpoint's failure state and
/// the next attempt.
async fn attempt_once(
    hooks: Hooks<'_>,
    msg: &DeliveryMessage,
    event: &WebhookEventItem,
    ep: &WebhookEndpointItem,
    now: Instant,
    lease: &str,
) -> Result<Outcome, Error> {
    let store = hooks.store;
    let now_s = clock::format(now);
    let expires = crate::domain::webhooks::expires_at(now);
    let Some(row) = store
        .claim_webhook_attempt(
            &event.hook_pk,
            &ep.hook_sk,
            msg.attempt,
            &now_s,
            lease,
            expires,
        )
        .await?
    else {
        tracing::info!(event_id = %msg.event_id, endpoint = %ep.hook_sk, attempt = msg.attempt, "webhook_attempt_duplicate");
        return Ok(Outcome::Skipped);
    };
    let attempt = post(hooks.http, hooks.settings, now, event, ep, msg.attempt).await;
    let ok = attempt.status_code.is_some_and(|c| (200..300).contains(&c));
    crate::adapters::metrics::webhook_attempt(&ep.hook_sk, ok, attempt.millis);
    tracing::info!(
        event_id = %event.hook_pk,
        trace_id = event.trace_id.as_deref().unwrap_or_default(),
        endpoint = %ep.hook_sk,
        attempt = msg.attempt,
        status = attempt.status_code,
        millis = attempt.millis,
        "webhook_attempt"
    );
    if let Err(e) = store.put_webhook_attempt(&attempt).await {
        tracing::warn!(error = %e, "webhook_attempt_log_failed");
    }
    settle_endpoint(store, hooks.settings, now, ep, ok).await?;
    let end = schedule_next(hooks, msg, &row, ok, now).await?;
    store
        .end_webhook_attempt(&event.hook_pk, &ep.hook_sk, msg.attempt, &end)
        .await?;
    if let AttemptEnd::Retry {
        next_due,
        queued: false,
    } = &end
    {
        store
            .set_webhook_event_due(&event.hook_pk, Some(next_due), true)
            .await?;
    }
    Ok(if ok {
        Outcome::Delivered
    } else {
        Outcome::Failed
    })
}

/// Records an attempt's outcome on its endpoint, with a conditional update of the failure
/// fields only: an endpoint removed or rotated since it was read is left as the operator
/// made it. Disables it once it has failed for the policy's whole window.
async fn settle_endpoint(
    store: &Store,
    settings: &WebhookSettings,
    now: Instant,
    ep: &WebhookEndpointItem,
    ok: bool,
) -> Result<(), Error> {
    let now_s = clock::format(now);
    let change = if !ok {
        EndpointChange::Failed { now: now_s.clone() }
    } else if ep.failed_rounds > 0 || ep.failing_since.is_some() {
        EndpointChange::Served
    } else {
        return Ok(());
    };
    let Some(after) = store
        .update_webhook_endpoint(&ep.hook_sk, ep.generation, &change)
        .await?
    else {
        tracing::info!(endpoint = %ep.hook_sk, "webhook_endpoint_changed_during_attempt");
        return Ok(());
    };
    let Some(since) = after.failing_since.as_deref() else {
        return Ok(());
    };
    if !failing_too_long(since, now, settings) {
        return Ok(());
    }
    let disable = EndpointChange::Disable { now: now_s };
    if store
        .update_webhook_endpoint(&ep.hook_sk, ep.generation, &disable)
        .await?
        .is_some()
    {
        crate::adapters::metrics::webhook_endpoint_disabled();
        tracing::warn!(endpoint = %ep.hook_sk, since = %since, attempts = after.failed_rounds, "webhook_endpoint_disabled");
    }
    Ok(())
}

/// Whether an endpoint failing since `since` has failed for the policy's whole window.
fn failing_too_long(since: &str, now: Instant, settings: &WebhookSettings) -> bool {
    let window = Duration::from_secs(settings.retry.disable_after_secs);
    clock::parse(since).is_some_and(|t| now - t >= window)
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

/// POSTs `event` to `ep` once (attempt `n`) and describes the attempt for the log.
async fn post(
    http: &WebhookClient,
    settings: &WebhookSettings,
    now: Instant,
    event: &WebhookEventItem,
    ep: &WebhookEndpointItem,
    n: u32,
) -> WebhookAttemptItem {
    let now_s = clock::format(now);
    let mut attempt = WebhookAttemptItem {
        hook_pk: event.hook_pk.clone(),
        hook_sk: webhook_attempt_key(n, &ep.hook_sk),
        endpoint_id: ep.hook_sk.clone(),
        round: n,
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

/// What becomes of an endpoint's current secrets when it gets a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OldSecrets {
    /// They keep signing beside the new one for [`ROTATION_OVERLAP`], so the receiver can
    /// switch without refusing a delivery (a routine rotation).
    Overlap,
    /// They stop at once (a leaked secret): the next delivery is signed by the new one alone,
    /// and the receiver refuses deliveries until it has the new secret.
    RevokeNow,
}

/// A new secret for endpoint `id`; the current ones keep signing for [`ROTATION_OVERLAP`] or
/// stop at once, as `old` says. Re-enables a disabled endpoint (an operator rotating has
/// looked at it). One conditional update of the generation read: a concurrent rotation or
/// remove is never overwritten.
pub async fn rotate_endpoint(
    store: &Store,
    id: &str,
    old: OldSecrets,
    now: Instant,
) -> Result<String, EndpointError> {
    let ep = find(store, id).await?;
    let now_s = clock::format(now);
    let until = clock::format(now + ROTATION_OVERLAP);
    let mut secrets = ep.secrets;
    secrets.retain(|s| {
        old == OldSecrets::Overlap && s.expires_at.as_deref().is_none_or(|at| at > now_s.as_str())
    });
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

/// The key of a webhooks-table stream record.
#[derive(Debug, serde::Deserialize)]
struct StreamKey {
    hook_pk: String,
    hook_sk: String,
}

/// Whether stream keys are the webhooks table's (`hook_pk`, `hook_sk`), not another table's.
pub fn is_webhooks_key(keys: &serde_dynamo::Item) -> bool {
    keys.contains_key(crate::store::schema::attr::HOOK_PK)
}

/// The event id of a new event row's stream keys; `None` for any other row (an attempt, a
/// delivery row, an endpoint), which the mapping's filter normally keeps out.
pub fn stream_event_id(keys: serde_dynamo::Item) -> Option<String> {
    let key: StreamKey = serde_dynamo::from_item(keys).ok()?;
    (key.hook_sk == crate::store::schema::WEBHOOK_EVENT).then_some(key.hook_pk)
}
