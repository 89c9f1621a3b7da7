//! The caller is the `sub` claim that API Gateway's JWT authorizer verified and put in the
//! request context (`requestContext.authorizer.jwt.claims`). The function never sees a token.

use std::collections::HashMap;

use atelier_shared::domain::UserId;
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
        let sub = match parts.extensions.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV2(ctx)) => ctx
                .authorizer
                .as_ref()
                .and_then(|a| a.jwt.as_ref())
                .and_then(|j| j.claims.get("sub"))
                .cloned(),
            _ => None,
        };
        sub.as_deref()
            .and_then(UserId::parse)
            .map(Caller)
            .ok_or_else(ApiError::unauthenticated)
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
