//! CORS as API Gateway's HTTP API answers it when the API has a CORS configuration (the one
//! CDK and Terraform deploy from [`atelier_shared::adapters::cors::API`]): it answers a preflight
//! (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) itself, before any route or
//! authorizer — `204` with the configured lists for an allowed origin, `403` without any CORS
//! header for another — and adds `Access-Control-Allow-Origin` (the caller's origin) and
//! `Access-Control-Expose-Headers` to every other answer to an allowed origin. The function's
//! own CORS headers are dropped, as API Gateway ignores them. The browser decides the rest.

use std::sync::Arc;

use atelier_shared::adapters::cors::{API, Origins};
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY,
};
use http::{HeaderMap, HeaderValue, Method, StatusCode};

/// The router behind API Gateway's CORS for `origins`.
pub fn layer(router: Router, origins: Origins) -> Router {
    router.layer(middleware::from_fn_with_state(Arc::new(origins), cors))
}

async fn cors(State(origins): State<Arc<Origins>>, req: Request, next: Next) -> Response {
    let origin = allowed_origin(&origins, req.headers());
    let preflight = req.method() == Method::OPTIONS
        && req.headers().contains_key(ORIGIN)
        && req.headers().contains_key(ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        return match origin {
            Some(origin) => preflight_answer(origin),
            None => {
                tracing::info!("cors_origin_refused");
                (
                    StatusCode::FORBIDDEN,
                    axum::Json(serde_json::json!({"message": "Forbidden"})),
                )
                    .into_response()
            }
        };
    }
    let mut res = next.run(req).await;
    let headers = res.headers_mut();
    for name in [
        ACCESS_CONTROL_ALLOW_ORIGIN,
        ACCESS_CONTROL_ALLOW_CREDENTIALS,
        ACCESS_CONTROL_EXPOSE_HEADERS,
        ACCESS_CONTROL_ALLOW_METHODS,
        ACCESS_CONTROL_ALLOW_HEADERS,
        ACCESS_CONTROL_MAX_AGE,
    ] {
        headers.remove(name);
    }
    if let Some(origin) = origin {
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, list(API.expose_headers));
        headers.append(VARY, HeaderValue::from_static("Origin"));
    }
    res
}

/// The request's `Origin` when it is allowed (a value a header can carry back as it came).
fn allowed_origin(origins: &Origins, headers: &HeaderMap) -> Option<HeaderValue> {
    let value = headers.get(ORIGIN)?;
    origins.allows(value.to_str().ok()?).then(|| value.clone())
}

fn preflight_answer(origin: HeaderValue) -> Response {
    let mut res = StatusCode::NO_CONTENT.into_response();
    let h = res.headers_mut();
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.insert(ACCESS_CONTROL_ALLOW_METHODS, list(API.allow_methods));
    h.insert(ACCESS_CONTROL_ALLOW_HEADERS, list(API.allow_headers));
    h.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from(API.max_age_secs));
    h.insert(VARY, HeaderValue::from_static("Origin"));
    res
}

fn list(items: &[&'static str]) -> HeaderValue {
    // The items are lowercase tokens from a constant table: always a valid header value.
    HeaderValue::from_str(&items.join(",")).unwrap_or_else(|_| HeaderValue::from_static(""))
}
