//! Webhook delivery and the operator's endpoint commands.
//!
//! [`deliver_due`] runs one delivery round for each due outbox event: it POSTs the event's
//! stored body, signed with every live secret of each active endpoint that has not yet had it,
//! records every attempt in the event's delivery log, and schedules the next round with
//! exponential backoff (the policy in [`crate::webhooks::RetryPolicy`]). It never touches a
//! job: a slow or failing receiver costs only the worker's time. An endpoint that has failed
//! every attempt for `disable_after_secs` (three days) is disabled (metric
//! `WebhookEndpointsDisabled`, alarmed).

use std::time::{Duration, Instant as StdInstant};

use crate::clock::{self, Instant};
use crate::config::WebhookSettings;
use crate::error::Error;
use crate::store::Store;
use crate::store::schema::{
    WEBHOOK_ENDPOINTS, WebhookAttemptItem, WebhookEndpointItem, WebhookEventItem, WebhookSecret,
    webhook_attempt_key,
};
use crate::webhooks::sign::{self, Secret};
use crate::webhooks::{UrlError, validate_url};

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
/// after `budget` has passed (the caller's own time limit).
pub async fn deliver_due(
    store: &Store,
    http: &reqwest::Client,
    settings: &WebhookSettings,
    now: Instant,
    budget: Duration,
) -> Result<DeliverySummary, Error> {
    let started = StdInstant::now();
    let now_s = clock::format(now);
    let due = store.webhook_events_due(&now_s, BATCH).await?;
    let mut summary = DeliverySummary::default();
    if due.is_empty() {
        return Ok(summary);
    }
    let mut endpoints = store.webhook_endpoints().await?;
    for mut event in due {
        if started.elapsed() > budget {
            break;
        }
        summary.events += 1;
        let failed_eps = round(
            store,
            http,
            settings,
            now,
            &mut event,
            &endpoints,
            &mut summary,
        )
        .await;
        for ep in endpoints.iter_mut().filter(|e| e.disabled_at.is_none()) {
            let failed = failed_eps.contains(&ep.hook_sk);
            let served = event.delivered_to.contains(&ep.hook_sk);
            if !failed && !served {
                continue;
            }
            let before = ep.clone();
            if failed {
                ep.failed_rounds += 1;
                let since = ep
                    .failing_since
                    .get_or_insert_with(|| now_s.clone())
                    .clone();
                if failing_too_long(&since, now, settings) {
                    ep.disabled_at = Some(now_s.clone());
                    summary.endpoints_disabled += 1;
                    crate::metrics::webhook_endpoint_disabled();
                    tracing::warn!(endpoint = %ep.hook_sk, since = %since, attempts = ep.failed_rounds, "webhook_endpoint_disabled");
                }
            } else {
                ep.failed_rounds = 0;
                ep.failing_since = None;
            }
            if *ep != before {
                store.put_webhook_endpoint(ep).await?;
            }
        }
        let active: Vec<&WebhookEndpointItem> = endpoints
            .iter()
            .filter(|e| e.disabled_at.is_none())
            .collect();
        let all_served = active
            .iter()
            .all(|e| event.delivered_to.contains(&e.hook_sk));
        let next = (!all_served && event.rounds < settings.retry.give_up_after)
            .then(|| clock::format(now + settings.retry.wait_after(event.rounds)));
        if !store.finish_webhook_round(&event, next.as_deref()).await? {
            tracing::info!(event_id = %event.hook_pk, "webhook_round_lost_race");
        }
    }
    Ok(summary)
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
    http: &reqwest::Client,
    settings: &WebhookSettings,
    now: Instant,
    event: &mut WebhookEventItem,
    endpoints: &[WebhookEndpointItem],
    summary: &mut DeliverySummary,
) -> Vec<String> {
    event.rounds += 1;
    let mut failed = Vec::new();
    for ep in endpoints.iter().filter(|e| e.disabled_at.is_none()) {
        if event.delivered_to.contains(&ep.hook_sk) {
            continue;
        }
        let attempt = post(http, settings, now, event, ep).await;
        let ok = attempt.status_code.is_some_and(|c| (200..300).contains(&c));
        crate::metrics::webhook_attempt(ok);
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
    http: &reqwest::Client,
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
    let mut req = http
        .post(&ep.url)
        .timeout(Duration::from_secs(settings.timeout_secs))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(event.body.clone());
    for (name, value) in headers.pairs() {
        req = req.header(name, value);
    }
    let started = StdInstant::now();
    match req.send().await {
        Ok(res) => attempt.status_code = Some(res.status().as_u16()),
        Err(e) => {
            let mut text = error_chain(&e);
            text.truncate(MAX_ERROR_LEN);
            attempt.error = Some(text);
        }
    }
    attempt.millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    attempt
}

/// `timeout`, `connect` or the error's text: what an operator reads in the log.
fn error_chain(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timeout".to_owned()
    } else if e.is_connect() {
        "connect".to_owned()
    } else {
        e.to_string()
    }
}

/// Why an endpoint command was refused.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error("no webhook endpoint {0}")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] Error),
}

/// A new endpoint: its id and its secret (shown once, to hand to the receiver).
pub async fn add_endpoint(
    store: &Store,
    url: &str,
    now: Instant,
) -> Result<(WebhookEndpointItem, String), EndpointError> {
    let url = validate_url(url)?;
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
    };
    store.put_webhook_endpoint(&endpoint).await?;
    Ok((endpoint, secret))
}

/// A new secret for endpoint `id`; the current ones keep signing for [`ROTATION_OVERLAP`].
/// Re-enables a disabled endpoint (an operator rotating has looked at it).
pub async fn rotate_endpoint(
    store: &Store,
    id: &str,
    now: Instant,
) -> Result<String, EndpointError> {
    let mut ep = find(store, id).await?;
    let now_s = clock::format(now);
    let until = clock::format(now + ROTATION_OVERLAP);
    ep.secrets
        .retain(|s| s.expires_at.as_deref().is_none_or(|at| at > now_s.as_str()));
    for s in &mut ep.secrets {
        if s.expires_at.is_none() {
            s.expires_at = Some(until.clone());
        }
    }
    let secret = Secret::generate().expose();
    ep.secrets.push(WebhookSecret {
        secret: secret.clone(),
        created_at: now_s,
        expires_at: None,
    });
    ep.failed_rounds = 0;
    ep.failing_since = None;
    ep.disabled_at = None;
    store.put_webhook_endpoint(&ep).await?;
    Ok(secret)
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
