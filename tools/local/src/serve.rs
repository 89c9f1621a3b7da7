//! The API over HTTP, as API Gateway would front it: public routes pass, every other route
//! needs a bearer token that the [`Authorizer`] accepts; the handler then gets the same
//! request context as in Lambda. The dev issuer's JWKS is served beside it.

use std::sync::Arc;

use atelier_api::auth::jwt_request_context;
use atelier_api::error::ApiError;
use atelier_shared::services::App;
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::authorizer::Authorizer;
use crate::issuer::DevIssuer;

/// Routes API Gateway serves without the authorizer.
/// The Stripe, App Store and Google Play webhooks are among them: their signatures (Google's:
/// Pub/Sub's OIDC token, checked by the API) are their authentication.
pub const PUBLIC_ROUTES: &[&str] = &[
    "/healthz",
    "/v1/styles",
    "/v1/openapi.json",
    "/v1/packs",
    "/v1/webhooks/stripe",
    "/v1/webhooks/apple",
    "/v1/webhooks/google",
];

/// Path of the dev issuer under the local server (the issuer URL is `http://host:port` + this).
pub const ISSUER_PATH: &str = "/dev-issuer";

async fn authorize(State(auth): State<Arc<Authorizer>>, mut req: Request, next: Next) -> Response {
    if PUBLIC_ROUTES.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    let header = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match auth.verify(header).await {
        Ok(claims) => {
            req.extensions_mut().insert(jwt_request_context(claims));
            next.run(req).await
        }
        Err(e) => {
            tracing::info!(reason = %e, "token_rejected");
            ApiError::unauthenticated().into_response()
        }
    }
}

/// As in Lambda, a request runs to its end even when its client goes away. hyper drops the
/// handler's future when the connection closes, which would stop a submit between its charge
/// and its queue send (a browser reloading mid-submit does exactly that); the job would then
/// wait for the sweeper's requeue instead of being worked at once.
async fn run_to_completion(req: Request, next: Next) -> Response {
    match tokio::spawn(next.run(req)).await {
        Ok(res) => res,
        Err(e) => {
            tracing::error!(error = %e, "request_task_failed");
            http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The local API: the router behind the authorizer, and (when given) the dev issuer.
pub fn app(api: App, authorizer: Authorizer, issuer: Option<DevIssuer>) -> Router {
    let api = atelier_api::router(api).layer(middleware::from_fn_with_state(
        Arc::new(authorizer),
        authorize,
    ));
    let router = match issuer {
        Some(issuer) => issuer_router(issuer).merge(api),
        None => api,
    };
    router.layer(middleware::from_fn(run_to_completion))
}

/// Longest dev token the token endpoint hands out (a day).
const MAX_DEV_TOKEN_TTL: i64 = 86_400;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenRequest {
    user: String,
    #[serde(default)]
    ttl: Option<i64>,
}

/// The dev issuer under [`ISSUER_PATH`]: its JWKS (what an authorizer fetches), its OpenID
/// Connect flow ([`crate::oidc`]), and `POST …/token {"user": "alice"}` → `{"token": "…"}`
/// (an ID token of the same issuer) so a test or the CLI's `--user` can log in at once. Only the
/// local runner serves this; nothing deployed does.
pub fn issuer_router(issuer: DevIssuer) -> Router {
    let jwks = issuer.jwks();
    let oidc = crate::oidc::router(issuer.clone(), ISSUER_PATH);
    let issuer = Arc::new(issuer);
    Router::new()
        .route(
            &format!("{ISSUER_PATH}/.well-known/jwks.json"),
            get(move || {
                let jwks = jwks.clone();
                async move { axum::Json(jwks) }
            }),
        )
        .route(
            &format!("{ISSUER_PATH}/token"),
            axum::routing::post(move |axum::Json(req): axum::Json<TokenRequest>| {
                let issuer = issuer.clone();
                async move {
                    let user = req.user.trim();
                    let valid = !user.is_empty()
                        && user.len() <= 64
                        && user
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "-_.@".contains(c));
                    if !valid {
                        return (
                            http::StatusCode::UNPROCESSABLE_ENTITY,
                            "user: 1-64 characters of A-Z a-z 0-9 - _ . @",
                        )
                            .into_response();
                    }
                    let ttl = req.ttl.unwrap_or(3600).clamp(60, MAX_DEV_TOKEN_TTL);
                    match issuer.token(user, ttl) {
                        Ok(token) => {
                            axum::Json(serde_json::json!({ "token": token, "expires_in": ttl }))
                                .into_response()
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "dev_token_failed");
                            http::StatusCode::INTERNAL_SERVER_ERROR.into_response()
                        }
                    }
                }
            }),
        )
        .merge(oidc)
}
