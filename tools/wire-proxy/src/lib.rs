//! A small HTTP/1.1 reverse proxy between the code and the local AWS (ministack).
//!
//! - It counts every request by service and operation ([`Proxy::counts`], `GET /_proxy/counts`),
//!   so call counts are measured on the wire rather than estimated.
//! - It injects, on a seeded share of requests ([`FaultPlan`]), the faults real AWS produces and
//!   the emulator never does: `TransactionCanceledException` with `TransactionConflict`,
//!   throttling, 500s, S3 `SlowDown`, a connection dropped after the emulator applied the request,
//!   and added latency. Each injected fault is recorded ([`Proxy::faults`]).
//!
//! Bodies stream both ways (a 12 MB S3 PUT is never buffered); only the small bodies the
//! decision needs are read first (a TransactWriteItems about to be cancelled, a query-protocol
//! form).
//!
//! Point an SDK at [`Proxy::url`] (as `AWS_ENDPOINT_URL`, or the config loader's
//! `endpoint_url`), with path-style S3.
//!
//! - It records, when asked ([`Proxy::record`]), the IAM authorisations each caller's requests
//!   need: principal, action and resource ARN ([`record`]), for the permission check in
//!   `infra/iam`.
//!
//! Control endpoints (for a proxy run as its own process): `GET /_proxy/counts`,
//! `GET /_proxy/faults`, `GET /_proxy/calls`, `POST /_proxy/reset`, `PUT /_proxy/plan` (a
//! [`FaultPlan`] as JSON, or `null` for none).

pub mod classify;
pub mod fault;
pub mod record;

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use classify::{Operation, Protocol, Service};
pub use fault::{Decision, FaultKind, FaultPlan};
pub use record::{Attribution, Call};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = BoxBody<Bytes, BoxError>;

/// Largest body read before a decision (a TransactWriteItems is at most 4 MB).
const SMALL_BODY_LIMIT: usize = 8 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("no TLS roots for an https upstream")]
    Tls(#[source] std::io::Error),
    #[error("upstream {0:?} is not an http:// or https://host:port URL")]
    Upstream(String),
    #[error("binding {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Requests seen, by service and operation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Counts(BTreeMap<Service, BTreeMap<String, u64>>);

impl Counts {
    /// Requests of one operation.
    pub fn get(&self, service: Service, operation: &str) -> u64 {
        self.0
            .get(&service)
            .and_then(|ops| ops.get(operation))
            .copied()
            .unwrap_or(0)
    }

    /// Requests to one service.
    pub fn service(&self, service: Service) -> u64 {
        self.0.get(&service).map_or(0, |ops| ops.values().sum())
    }

    /// Requests to every service but `Other` (the emulator's own endpoints).
    pub fn total(&self) -> u64 {
        self.0
            .iter()
            .filter(|(s, _)| **s != Service::Other)
            .flat_map(|(_, ops)| ops.values())
            .sum()
    }

    /// Every (operation, count), services in order.
    pub fn iter(&self) -> impl Iterator<Item = (Operation, u64)> + '_ {
        self.0.iter().flat_map(|(s, ops)| {
            ops.iter()
                .map(move |(name, n)| (Operation::new(*s, name.clone()), *n))
        })
    }

    /// What was counted after `earlier` (a snapshot of the same proxy).
    pub fn since(&self, earlier: &Counts) -> Counts {
        let mut out = Counts::default();
        for (op, n) in self.iter() {
            let d = n.saturating_sub(earlier.get(op.service, &op.name));
            if d > 0 {
                out.add(&op, d);
            }
        }
        out
    }

    /// Adds every count of `other` (sums over several measured windows).
    pub fn merge(&mut self, other: &Counts) {
        for (op, n) in other.iter() {
            self.add(&op, n);
        }
    }

    pub fn add(&mut self, op: &Operation, n: u64) {
        *self
            .0
            .entry(op.service)
            .or_default()
            .entry(op.name.clone())
            .or_default() += n;
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.iter().map(|(op, n)| format!("{op}={n}")).collect();
        f.write_str(&parts.join(" "))
    }
}

/// One injected fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InjectedFault {
    /// Order among every request the proxy answered since the last reset (from 0).
    pub request: u64,
    pub operation: Operation,
    pub kind: FaultKind,
}

#[derive(Default)]
struct State {
    counts: Counts,
    plan: Option<FaultPlan>,
    /// Requests per operation since the plan was set: the decision's sequence number.
    seen: HashMap<Operation, u64>,
    requests: u64,
    faults: Vec<InjectedFault>,
    recording: Option<Recording>,
}

/// The calls recorded so far, each with how often it was made.
struct Recording {
    attribution: Attribution,
    calls: BTreeMap<Call, u64>,
    /// Each call appended as a JSON line the first time it is seen.
    file: Option<std::fs::File>,
}

impl Recording {
    fn add(&mut self, call: Call) {
        let n = self.calls.entry(call.clone()).or_default();
        *n += 1;
        if *n > 1 {
            return;
        }
        if let Some(f) = &mut self.file {
            let line = serde_json::to_string(&call).unwrap_or_default();
            if let Err(e) = writeln!(f, "{line}") {
                tracing::warn!(error = %e, "proxy_record_write_failed");
            }
        }
    }
}

/// TLS for an https upstream, with the roots the SDK trusts (the system's, or `SSL_CERT_FILE`).
/// An http upstream needs none, so a machine without a root store still proxies it.
fn https_connector(
    https: bool,
) -> Result<
    hyper_rustls::HttpsConnectorBuilder<hyper_rustls::builderstates::WantsSchemes>,
    ProxyError,
> {
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    match hyper_rustls::HttpsConnectorBuilder::new().with_provider_and_native_roots(provider) {
        Ok(builder) => Ok(builder),
        Err(source) if https => Err(ProxyError::Tls(source)),
        Err(_) => {
            let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::aws_lc_rs::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map_err(|e| ProxyError::Tls(std::io::Error::other(e)))?
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
            Ok(hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config))
        }
    }
}

struct Shared {
    upstream: Uri,
    client: Client<HttpsConnector<HttpConnector>, Body>,
    state: Mutex<State>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere; the counters are still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running proxy. Dropping it stops the listener and every open connection.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
}

impl Proxy {
    /// Starts a proxy on a free port of 127.0.0.1 in front of `upstream` (`http://host:port`).
    pub async fn start(upstream: &str, plan: Option<FaultPlan>) -> Result<Proxy, ProxyError> {
        Proxy::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), upstream, plan).await
    }

    /// Starts a proxy listening on `listen`.
    pub async fn start_on(
        listen: SocketAddr,
        upstream: &str,
        plan: Option<FaultPlan>,
    ) -> Result<Proxy, ProxyError> {
        let upstream_uri: Uri = upstream
            .trim_end_matches('/')
            .parse()
            .map_err(|_| ProxyError::Upstream(upstream.to_owned()))?;
        if !matches!(upstream_uri.scheme_str(), Some("http" | "https"))
            || upstream_uri.authority().is_none()
        {
            return Err(ProxyError::Upstream(upstream.to_owned()));
        }
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| ProxyError::Bind {
                addr: listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ProxyError::Bind {
            addr: listen,
            source,
        })?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.enforce_http(false);
        let connector = https_connector(upstream_uri.scheme_str() == Some("https"))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let shared = Arc::new(Shared {
            upstream: upstream_uri,
            client: Client::builder(TokioExecutor::new()).build(connector),
            state: Mutex::new(State {
                plan,
                ..State::default()
            }),
        });
        let (shutdown, stopped) = watch::channel(false);
        tokio::spawn(accept_loop(listener, shared.clone(), stopped));
        Ok(Proxy {
            addr,
            shared,
            shutdown,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`: the endpoint URL to give the SDK.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests counted since the start or the last [`reset`](Proxy::reset).
    pub fn counts(&self) -> Counts {
        self.shared.state().counts.clone()
    }

    /// Clears the counts and the fault log, and restarts the fault sequence (the same plan then
    /// replays the same decisions).
    pub fn reset(&self) {
        let mut s = self.shared.state();
        s.counts = Counts::default();
        s.seen.clear();
        s.requests = 0;
        s.faults.clear();
        if let Some(r) = &mut s.recording {
            r.calls.clear();
        }
    }

    /// Replaces the fault plan (`None`: forward everything) and restarts its sequence.
    pub fn set_plan(&self, plan: Option<FaultPlan>) {
        let mut s = self.shared.state();
        s.plan = plan;
        s.seen.clear();
    }

    pub fn plan(&self) -> Option<FaultPlan> {
        self.shared.state().plan.clone()
    }

    /// Every fault injected since the start or the last reset, in order.
    pub fn faults(&self) -> Vec<InjectedFault> {
        self.shared.state().faults.clone()
    }

    /// Injected faults by kind and operation.
    pub fn fault_counts(&self) -> BTreeMap<(FaultKind, Operation), u64> {
        fault_counts(&self.shared.state().faults)
    }

    /// Starts recording the calls of every request (from now on, none before), each caller
    /// named by `attribution`.
    pub fn record(&self, attribution: Attribution) {
        self.shared.state().recording = Some(Recording {
            attribution,
            calls: BTreeMap::new(),
            file: None,
        });
    }

    /// [`record`](Proxy::record), and also appends each call to `path` as a JSON line the first
    /// time it is seen (a proxy run as its own process, stopped by a signal).
    pub fn record_to(&self, attribution: Attribution, path: &Path) -> std::io::Result<()> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        self.shared.state().recording = Some(Recording {
            attribution,
            calls: BTreeMap::new(),
            file: Some(file),
        });
        Ok(())
    }

    /// Every call recorded, with how often it was made (empty when not recording).
    pub fn calls(&self) -> BTreeMap<Call, u64> {
        self.shared
            .state()
            .recording
            .as_ref()
            .map(|r| r.calls.clone())
            .unwrap_or_default()
    }
}

/// Writes `calls` to `path` as JSON lines, the format `infra/iam` reads.
pub fn write_calls<'a>(
    path: &Path,
    calls: impl IntoIterator<Item = &'a Call>,
) -> std::io::Result<()> {
    let mut out = String::new();
    for call in calls {
        out.push_str(&serde_json::to_string(call).map_err(std::io::Error::other)?);
        out.push('\n');
    }
    std::fs::write(path, out)
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

fn fault_counts(faults: &[InjectedFault]) -> BTreeMap<(FaultKind, Operation), u64> {
    let mut out = BTreeMap::new();
    for f in faults {
        *out.entry((f.kind, f.operation.clone())).or_default() += 1;
    }
    out
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped.changed() => return,
        };
        let (stream, _) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: keep serving the open connections.
                tracing::warn!(error = %e, "proxy_accept_failed");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let mut stopped = stopped.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(shared.clone(), req));
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                // An error here is mostly a dropped-connection fault (by design) or a client
                // that went away.
                _ = conn => {}
                _ = stopped.changed() => {}
            }
        });
    }
}

/// The error that makes hyper close the client's connection without a response.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped on purpose after forwarding (injected fault)")]
struct Dropped;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed()
}

fn simple(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut res = Response::new(full(body));
    *res.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        res.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    res
}

fn json_response<T: Serialize>(value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => simple(StatusCode::OK, "application/json", bytes),
        Err(e) => simple(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain",
            e.to_string(),
        ),
    }
}

async fn control(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    match (req.method().as_str(), path.as_str()) {
        ("GET", "/_proxy/counts") => json_response(&shared.state().counts),
        ("GET", "/_proxy/calls") => {
            let s = shared.state();
            let calls: Vec<serde_json::Value> = s
                .recording
                .iter()
                .flat_map(|r| r.calls.iter())
                .map(|(call, n)| serde_json::json!({ "call": call, "count": n }))
                .collect();
            json_response(&calls)
        }
        ("GET", "/_proxy/faults") => {
            let s = shared.state();
            let summary: Vec<serde_json::Value> = fault_counts(&s.faults)
                .into_iter()
                .map(|((kind, op), n)| serde_json::json!({ "kind": kind, "operation": op, "count": n }))
                .collect();
            json_response(&serde_json::json!({ "by_kind": summary, "injected": s.faults }))
        }
        ("POST", "/_proxy/reset") => {
            let mut s = shared.state();
            s.counts = Counts::default();
            s.seen.clear();
            s.requests = 0;
            s.faults.clear();
            if let Some(r) = &mut s.recording {
                r.calls.clear();
            }
            simple(StatusCode::NO_CONTENT, "text/plain", Bytes::new())
        }
        ("PUT", "/_proxy/plan") => {
            let body = match Limited::new(req.into_body(), 64 * 1024).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return simple(StatusCode::BAD_REQUEST, "text/plain", e.to_string()),
            };
            match serde_json::from_slice::<Option<FaultPlan>>(&body) {
                Ok(plan) => {
                    let mut s = shared.state();
                    s.plan = plan;
                    s.seen.clear();
                    simple(StatusCode::NO_CONTENT, "text/plain", Bytes::new())
                }
                Err(e) => simple(StatusCode::BAD_REQUEST, "text/plain", e.to_string()),
            }
        }
        _ => simple(
            StatusCode::NOT_FOUND,
            "text/plain",
            "unknown proxy endpoint",
        ),
    }
}

async fn read_small(body: Incoming) -> Result<Bytes, BoxError> {
    Ok(Limited::new(body, SMALL_BODY_LIMIT)
        .collect()
        .await?
        .to_bytes())
}

/// Items of a TransactWriteItems request body (one cancellation reason each).
fn transact_items(body: &[u8]) -> usize {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("TransactItems")
                .and_then(|i| i.as_array())
                .map(Vec::len)
        })
        .unwrap_or(1)
}

/// Whether a DynamoDB `Query` body names an index (`IndexName`).
fn queries_an_index(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .is_some_and(|v| v.get("IndexName").is_some_and(serde_json::Value::is_string))
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, BoxError> {
    if req.uri().path().starts_with("/_proxy/") {
        return Ok(control(&shared, req).await);
    }
    let (parts, body) = req.into_parts();
    let attribution = shared
        .state()
        .recording
        .as_ref()
        .map(|r| r.attribution.clone());
    let view = |form_body| classify::RequestView {
        method: &parts.method,
        path: parts.uri.path(),
        query: parts.uri.query(),
        headers: &parts.headers,
        form_body,
    };
    // The query protocol carries the operation in a (small) form body; a recording also reads
    // the JSON protocols' bodies (the table, queue or secret is named there).
    let small = classify::needs_form_body(&parts.headers)
        || (attribution.is_some() && record::needs_body(&view(None)));
    let (form, body) = if small {
        let bytes = read_small(body).await?;
        (Some(bytes.clone()), full(bytes))
    } else {
        (None, body.map_err(|e| -> BoxError { Box::new(e) }).boxed())
    };
    let (op, protocol) = classify::classify(&view(form.as_deref()));
    let calls = match &attribution {
        Some(a) => {
            let v = view(form.as_deref());
            let who = record::principal(a, &v);
            let mut calls = record::calls(&op, &v, form.as_deref());
            for c in &mut calls {
                c.principal.clone_from(&who);
            }
            calls
        }
        None => Vec::new(),
    };
    let (decision, request) = shared.record_and_decide(&op, calls);
    if let Some(delay) = decision.delay {
        tokio::time::sleep(delay).await;
    }
    match decision.error {
        Some(FaultKind::DropAfterForward) => {
            // The emulator applies the request and answers; the client never hears it.
            let res = forward(&shared, parts, body).await;
            if let Ok(res) = res {
                let _ = res.into_body().collect().await;
            }
            tracing::debug!(operation = %op, "proxy_dropped_after_forward");
            Err(Box::new(Dropped))
        }
        Some(FaultKind::IndexLag) => {
            let bytes = read_all(body).await;
            if queries_an_index(&bytes) {
                let mut res = Response::new(full(r#"{"Count":0,"Items":[],"ScannedCount":0}"#));
                res.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("application/x-amz-json-1.0"),
                );
                return Ok(res);
            }
            Ok(forward(&shared, parts, full(bytes))
                .await
                .unwrap_or_else(bad_gateway))
        }
        Some(kind) => {
            let request_id = format!("wireproxy-{request:08}");
            Ok(answer_fault(&shared, parts, body, kind, (&op, protocol), &request_id).await)
        }
        None => Ok(forward(&shared, parts, body)
            .await
            .unwrap_or_else(bad_gateway)),
    }
}

impl Shared {
    /// Records the request's calls and count, and draws its fault: (the decision, the
    /// request's sequence number).
    fn record_and_decide(&self, op: &Operation, calls: Vec<record::Call>) -> (Decision, u64) {
        let mut s = self.state();
        if let Some(r) = &mut s.recording {
            for c in calls {
                r.add(c);
            }
        }
        s.counts.add(op, 1);
        let request = s.requests;
        s.requests += 1;
        let state = &mut *s;
        let decision = match &state.plan {
            Some(plan) if op.service != Service::Other => {
                let seq = state.seen.entry(op.clone()).or_insert(0);
                let n = *seq;
                *seq += 1;
                plan.decide(op, n)
            }
            _ => Decision::default(),
        };
        for kind in decision
            .error
            .into_iter()
            .chain(decision.delay.map(|_| FaultKind::Latency))
        {
            s.faults.push(InjectedFault {
                request,
                operation: op.clone(),
                kind,
            });
        }
        (decision, request)
    }
}

/// The body to its end; empty when it fails.
async fn read_all(body: Body) -> Bytes {
    body.collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default()
}

/// The service's own error for `kind`, after reading the body to the end (as a server would;
/// a conflict also needs the number of items); forwarded when the kind has no answer there.
async fn answer_fault(
    shared: &Shared,
    parts: http::request::Parts,
    body: Body,
    kind: FaultKind,
    (op, protocol): (&Operation, classify::Protocol),
    request_id: &str,
) -> Response<Body> {
    let bytes = read_all(body).await;
    let items = if kind == FaultKind::TransactionConflict {
        transact_items(&bytes)
    } else {
        1
    };
    let head = parts.method == http::Method::HEAD;
    let Some(e) = fault::error_response(kind, op, protocol, head, items, request_id) else {
        return forward(shared, parts, full(bytes))
            .await
            .unwrap_or_else(bad_gateway);
    };
    let mut res = Response::new(full(e.body));
    *res.status_mut() = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (k, v) in e.headers {
        if let Ok(v) = http::HeaderValue::from_str(&v) {
            res.headers_mut().insert(k, v);
        }
    }
    res
}

fn bad_gateway(e: BoxError) -> Response<Body> {
    tracing::warn!(error = %e, "proxy_upstream_failed");
    simple(
        StatusCode::BAD_GATEWAY,
        "text/plain",
        format!("upstream: {e}"),
    )
}

/// Headers that belong to one hop (RFC 9110 §7.6.1), plus `expect` (hyper answers
/// `100-continue` itself; the upstream gets the body straight away).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
];

async fn forward(
    shared: &Shared,
    mut parts: http::request::Parts,
    body: Body,
) -> Result<Response<Body>, BoxError> {
    let mut uri = shared.upstream.clone().into_parts();
    uri.path_and_query = parts.uri.path_and_query().cloned();
    parts.uri = Uri::from_parts(uri)?;
    for h in HOP_BY_HOP {
        parts.headers.remove(h);
    }
    // The Host header stays as the client signed it (SigV4 covers it).
    let res = shared
        .client
        .request(Request::from_parts(parts, body))
        .await?;
    let (mut parts, body) = res.into_parts();
    for h in HOP_BY_HOP {
        parts.headers.remove(h);
    }
    Ok(Response::from_parts(
        parts,
        body.map_err(|e| -> BoxError { Box::new(e) }).boxed(),
    ))
}
