//! A webhook receiver for the tests: a real HTTP server on 127.0.0.1 that records every
//! request to its path, whatever the method (headers and raw body), and answers with the
//! status codes it was given, in order (then 200), after an optional delay; a redirecting one
//! answers every request with a redirect to another URL.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use atelier_shared::domain::webhooks::sign::SignedHeaders;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

/// One delivery as received.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub headers: SignedHeaders,
    pub body: String,
    pub at: std::time::Instant,
}

#[derive(Default)]
struct Inner {
    deliveries: Vec<Delivery>,
    answers: Vec<u16>,
}

/// The running receiver.
#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    delay: Duration,
    /// Where a redirecting receiver sends every request.
    location: Option<String>,
}

impl Receiver {
    /// A receiver answering `answers` to the first deliveries (then 200) after `delay`.
    pub async fn start(answers: &[u16], delay: Duration) -> Receiver {
        Receiver::spawn(answers, delay, None).await
    }

    /// A receiver answering every request with `status` (a 3xx) and `Location: to`.
    pub async fn redirecting(status: u16, to: &str) -> Receiver {
        let answers = [status; 8];
        Receiver::spawn(&answers, Duration::ZERO, Some(to.to_owned())).await
    }

    async fn spawn(answers: &[u16], delay: Duration, location: Option<String>) -> Receiver {
        let inner = Arc::new(Mutex::new(Inner {
            deliveries: Vec::new(),
            answers: answers.iter().rev().copied().collect(),
        }));
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let receiver = Receiver {
            url: format!("http://127.0.0.1:{}/hooks", addr.port()),
            inner,
            delay,
            location,
        };
        let app = Router::new()
            .route("/hooks", any(receive))
            .with_state(receiver.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        receiver
    }

    /// Waits until `n` requests have arrived (one held open by a delay counts on arrival).
    pub async fn wait_for(&self, n: usize) {
        let waited = tokio::time::timeout(Duration::from_secs(20), async {
            while self.lock().deliveries.len() < n {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(waited.is_ok(), "{n} deliveries did not arrive in 20 s");
    }

    /// Every delivery so far, oldest first.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.lock().deliveries.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> Response {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let delivery = Delivery {
        headers: SignedHeaders {
            id: get("webhook-id"),
            timestamp: get("webhook-timestamp"),
            signature: get("webhook-signature"),
        },
        body: String::from_utf8_lossy(&body).into_owned(),
        at: std::time::Instant::now(),
    };
    let answer = {
        let mut inner = r.lock();
        inner.deliveries.push(delivery);
        inner.answers.pop().unwrap_or(200)
    };
    tokio::time::sleep(r.delay).await;
    let status = StatusCode::from_u16(answer).unwrap_or(StatusCode::OK);
    match &r.location {
        Some(to) => (status, [(header::LOCATION, to.clone())]).into_response(),
        None => status.into_response(),
    }
}

/// What the official Standard Webhooks library (Python, pinned in
/// `tests/official-standardwebhooks/requirements.txt`, installed by `cargo xtask test`) says
/// of each `(secret, delivery)`: `{"ok": true, "type": …}` or `{"ok": false, "error": …}`.
pub async fn official_verify(cases: &[(&str, &Delivery)]) -> Vec<serde_json::Value> {
    let python = std::env::var("ATELIER_STANDARDWEBHOOKS_PYTHON").unwrap_or_else(|_| {
        panic!("ATELIER_STANDARDWEBHOOKS_PYTHON is unset: run with `cargo xtask test`")
    });
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/official-standardwebhooks/verify.py"
    );
    let mut input = String::new();
    for (secret, d) in cases {
        let case = serde_json::json!({
            "secret": secret,
            "headers": {
                "webhook-id": d.headers.id,
                "webhook-timestamp": d.headers.timestamp,
                "webhook-signature": d.headers.signature,
            },
            "body": d.body,
        });
        input.push_str(&case.to_string());
        input.push('\n');
    }
    json_lines(python, script, &input).await
}

/// Runs an official client's check script (`python script`) on JSON lines, one case a line,
/// and reads its JSON lines back, one verdict a case.
pub async fn json_lines(
    python: impl AsRef<std::ffi::OsStr>,
    script: &str,
    input: &str,
) -> Vec<serde_json::Value> {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(python)
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("python: {e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    stdin
        .write_all(input.as_bytes())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    drop(stdin);
    let out = child
        .wait_with_output()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{script} failed: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}
