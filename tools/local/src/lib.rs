//! The local runner: what API Gateway, its JWT authorizer, the SQS event source and the
//! EventBridge schedule do in AWS, done locally around the same handlers.
//!
//! - [`issuer`]: the project's own dev issuer (RS256 key pair with a `kid`, JWKS, tokens).
//! - [`authorizer`]: verifies bearer tokens exactly as API Gateway's JWT authorizer does and
//!   fills the same request context.
//! - [`serve`]: the API over HTTP behind that authorizer, with the issuer's JWKS beside it.
//! - [`cors`]: API Gateway's CORS answers, from the one definition CDK and Terraform deploy.
//! - [`poller`]: the SQS event source mapping; [`hold`] lets a test keep it from polling.

pub mod authorizer;
pub mod cors;
pub mod hold;
pub mod hooks;
pub mod issuer;
pub mod oidc;
pub mod poller;
pub mod serve;

/// The audience of dev tokens (and the API's authorizer audience).
pub const AUDIENCE: &str = "atelier";
