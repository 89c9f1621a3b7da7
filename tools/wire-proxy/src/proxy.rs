//! A running proxy: starting it in front of an upstream, and what a test asks of it (counts,
//! faults, the fault plan, recorded calls).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use http::Uri;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::classify::Operation;
use crate::counts::Counts;
use crate::fault::{FaultKind, FaultPlan};
use crate::handle::accept_loop;
use crate::record::{Attribution, Call};
use crate::state::{InjectedFault, Recording, Shared, State, Trip, fault_counts};

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

    /// Arms a tripwire: the `n`-th request from now (1: the next) is never forwarded (held,
    /// then its connection closed), and the receiver fires when it arrives: a caller that dies
    /// at a chosen call, the same call whatever the timing when its calls are sequential.
    /// Replaces an armed one (whose receiver then never fires); [`disarm`](Proxy::disarm)
    /// removes it.
    pub fn trip_after(&self, n: u64) -> tokio::sync::oneshot::Receiver<()> {
        let (fired, tripped) = tokio::sync::oneshot::channel();
        self.shared.state().trip = Some(Trip {
            left: n.max(1),
            fired,
        });
        tripped
    }

    /// Removes an armed tripwire (its receiver then never fires).
    pub fn disarm(&self) {
        self.shared.state().trip = None;
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
