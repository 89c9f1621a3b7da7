//! The capturing proxy the official-client tests put in front of the stand-in: it records
//! every request's path, content type, job (`X-Client-Request-Id`) and body, then forwards it
//! unchanged. The stand-in imports our client's types, so only the request as it went over the
//! wire can show our client and the provider's library asking the same thing.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use atelier_shared::adapters::model::CLIENT_REQUEST_ID_HEADER;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

/// One request as the proxy saw it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub path: String,
    pub content_type: String,
    pub job: Option<String>,
    pub body: Bytes,
}

#[derive(Clone)]
struct Proxy {
    upstream: String,
    http: reqwest::Client,
    seen: Arc<Mutex<Vec<Captured>>>,
}

async fn forward(State(proxy): State<Proxy>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("request body");
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header(CONTENT_TYPE.as_str()).unwrap_or_default();
    let job = header(CLIENT_REQUEST_ID_HEADER);
    proxy.seen.lock().unwrap().push(Captured {
        path: parts.uri.path().to_owned(),
        content_type: content_type.clone(),
        job: job.clone(),
        body: body.clone(),
    });
    let mut upstream = proxy
        .http
        .request(
            parts.method,
            format!("{}{}", proxy.upstream, parts.uri.path()),
        )
        .header(CONTENT_TYPE, content_type)
        .body(body);
    if let Some(job) = job {
        upstream = upstream.header(CLIENT_REQUEST_ID_HEADER, job);
    }
    let answer = upstream.send().await.expect("the stand-in answers");
    let status = answer.status();
    let headers = answer.headers().clone();
    let bytes = answer.bytes().await.expect("answer body");
    let mut response = (status, bytes).into_response();
    for name in [CONTENT_TYPE.as_str(), "x-request-id"] {
        if let Some(v) = headers.get(name) {
            response.headers_mut().insert(name, v.clone());
        }
    }
    response
}

/// A running proxy in front of `upstream`.
pub struct Capture {
    /// Where clients send their requests (`http://127.0.0.1:P`).
    pub base_url: String,
    seen: Arc<Mutex<Vec<Captured>>>,
}

impl Capture {
    pub async fn start(upstream: String) -> Capture {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let proxy = Proxy {
            upstream,
            http: reqwest::Client::new(),
            seen: seen.clone(),
        };
        let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
        let listener = tokio::net::TcpListener::bind(loopback)
            .await
            .expect("proxy binds");
        let base_url = format!("http://{}", listener.local_addr().expect("proxy address"));
        let app = Router::new().fallback(forward).with_state(proxy);
        tokio::spawn(async move { axum::serve(listener, app).await });
        Capture { base_url, seen }
    }

    /// The one request that carried `job`.
    pub fn request_of(&self, job: &str) -> Captured {
        let seen = self.seen.lock().unwrap();
        let matching: Vec<&Captured> = seen
            .iter()
            .filter(|c| c.job.as_deref() == Some(job))
            .collect();
        assert_eq!(matching.len(), 1, "exactly one request for {job}");
        matching[0].clone()
    }
}

/// The media type without parameters (`multipart/form-data; boundary=…` → `multipart/form-data`).
pub fn essence(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}
