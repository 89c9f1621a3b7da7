//! Bodies: the boxed body type both directions share, the proxy's own small answers, and
//! reading a body whole.

use std::convert::Infallible;

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::Incoming;
use serde::Serialize;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub(crate) type Body = BoxBody<Bytes, BoxError>;

/// Largest body read before a decision (a TransactWriteItems is at most 4 MB).
const SMALL_BODY_LIMIT: usize = 8 * 1024 * 1024;

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed()
}

pub(crate) fn simple(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut res = Response::new(full(body));
    *res.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        res.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    res
}

pub(crate) fn json_response<T: Serialize>(value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => simple(StatusCode::OK, "application/json", bytes),
        Err(e) => simple(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain",
            e.to_string(),
        ),
    }
}

pub(crate) async fn read_small(body: Incoming) -> Result<Bytes, BoxError> {
    Ok(Limited::new(body, SMALL_BODY_LIMIT)
        .collect()
        .await?
        .to_bytes())
}

/// The body to its end; empty when it fails.
pub(crate) async fn read_all(body: Body) -> Bytes {
    body.collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default()
}
