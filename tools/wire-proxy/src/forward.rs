//! Passing a request to the upstream and its answer back, without the hop-by-hop headers.

use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt;

use crate::body::{Body, BoxError, simple};
use crate::state::Shared;

pub(crate) fn bad_gateway(e: BoxError) -> Response<Body> {
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

pub(crate) async fn forward(
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
