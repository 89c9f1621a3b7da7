//! Serving connections: each request classified, counted, recorded, and then forwarded or
//! answered with the fault drawn for it.

use std::sync::Arc;

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::body::{Body, BoxError, full, read_all, read_small};
use crate::classify::{self, Operation};
use crate::control::control;
use crate::fault::{self, FaultKind};
use crate::forward::{bad_gateway, forward};
use crate::record;
use crate::state::Shared;

pub(crate) async fn accept_loop(
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

/// How long a request that tripped the wire is held before its connection is closed.
const TRIPPED_HOLD: std::time::Duration = std::time::Duration::from_secs(30);

/// The error that makes hyper close the client's connection without a response.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped on purpose after forwarding (injected fault)")]
struct Dropped;

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
    let fate = shared.record_and_decide(&op, calls);
    if fate.tripped {
        // The caller died here: its request never reaches the emulator. Held long enough for
        // the caller to drop it, then the connection is closed without a word.
        tokio::time::sleep(TRIPPED_HOLD).await;
        return Err(Box::new(Dropped));
    }
    let (decision, request) = (fate.decision, fate.request);
    if let Some(delay) = decision.delay {
        tokio::time::sleep(delay).await;
    }
    match decision.error {
        Some(FaultKind::DropAfterForward) => {
            // The emulator applies the request and answers; the client never hears it.
            let res = forward(&shared, parts, body).await;
            if let Ok(res) = res {
                shared.note_dropped_reply(request, res.status().as_u16());
                let _ = res.into_body().collect().await;
            }
            tracing::debug!(operation = %op, "proxy_dropped_after_forward");
            Err(Box::new(Dropped))
        }
        Some(FaultKind::IndexLag) => Ok(lagging_index(&shared, parts, body).await),
        Some(kind) => {
            let request_id = format!("wireproxy-{request:08}");
            Ok(answer_fault(&shared, parts, body, kind, (&op, protocol), &request_id).await)
        }
        None => Ok(forward(&shared, parts, body)
            .await
            .unwrap_or_else(bad_gateway)),
    }
}

/// An index that has not caught up: a `Query` of one answers no items; anything else is
/// forwarded.
async fn lagging_index(shared: &Shared, parts: http::request::Parts, body: Body) -> Response<Body> {
    let bytes = read_all(body).await;
    if queries_an_index(&bytes) {
        let mut res = Response::new(full(r#"{"Count":0,"Items":[],"ScannedCount":0}"#));
        res.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/x-amz-json-1.0"),
        );
        return res;
    }
    forward(shared, parts, full(bytes))
        .await
        .unwrap_or_else(bad_gateway)
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
