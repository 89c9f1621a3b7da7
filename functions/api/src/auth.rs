//! The caller is the `sub` claim that API Gateway's JWT authorizer verified and put in the
//! request context (`requestContext.authorizer.jwt.claims`). The function never sees a token.
//! The same claims say whether the caller holds an ID token with a verified address
//! (`token_use` `id`, the configured claim — `email_verified` by default — and `email`), which
//! decides the signup grant; the address is hashed here and goes no further.

use std::collections::HashMap;

use atelier_shared::domain::{EmailStatus, UserId};
use atelier_shared::services::App;
use axum::extract::FromRequestParts;
use http::request::Parts;
use lambda_http::aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerJwtDescription,
    ApiGatewayV2httpRequestContext,
};
use lambda_http::request::RequestContext;

use crate::error::ApiError;

/// The authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller(pub UserId);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Caller, ApiError> {
        subject(&parts.extensions)
            .map(Caller)
            .ok_or_else(ApiError::unauthenticated)
    }
}

/// The verified caller of a request, if its route has the JWT authorizer and it passed.
pub fn subject(extensions: &http::Extensions) -> Option<UserId> {
    claim_of(extensions, "sub").and_then(UserId::parse)
}

/// Whether the verified token is an ID token with a verified address
/// (`ATELIER_EMAIL_VERIFIED_CLAIM`), and that address's keyed hash. Never refuses a request:
/// any other caller is served, only without the signup grant.
#[derive(Debug, Clone)]
pub struct Email(pub EmailStatus);

impl FromRequestParts<App> for Email {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Email, Self::Rejection> {
        let identity = &app.config.identity;
        let Some(key) = identity.address_key.as_ref() else {
            // The API refuses to start without the key; a build that skipped that gives no grant.
            tracing::error!("address_key_missing");
            return Ok(Email(EmailStatus::Unverified));
        };
        Ok(Email(EmailStatus::from_claims(
            claim(parts, "token_use"),
            claim(parts, &identity.email_verified_claim),
            claim(parts, "email"),
            key,
        )))
    }
}

/// A claim of the JWT authorizer's context, as API Gateway delivers it (every value a string).
fn claim<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    claim_of(&parts.extensions, name)
}

fn claim_of<'a>(extensions: &'a http::Extensions, name: &str) -> Option<&'a str> {
    match extensions.get::<RequestContext>() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx
            .authorizer
            .as_ref()
            .and_then(|a| a.jwt.as_ref())
            .and_then(|j| j.claims.get(name))
            .map(String::as_str),
        _ => None,
    }
}

/// The request context API Gateway's JWT authorizer produces for verified claims. The local
/// runner and the tests attach exactly this, so the handler runs as it does in Lambda.
pub fn jwt_request_context(claims: HashMap<String, String>) -> RequestContext {
    let mut jwt = ApiGatewayRequestAuthorizerJwtDescription::default();
    jwt.claims = claims;
    let mut authorizer = ApiGatewayRequestAuthorizer::default();
    authorizer.jwt = Some(jwt);
    let mut ctx = ApiGatewayV2httpRequestContext::default();
    ctx.authorizer = Some(authorizer);
    RequestContext::ApiGatewayV2(ctx)
}
