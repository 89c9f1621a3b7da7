//! The HTTP API: an axum router run by `lambda_http` behind API Gateway's HTTP API (and by the
//! local runner over plain HTTP). Handlers translate between HTTP and the shared services.

pub mod auth;
pub mod dto;
pub mod error;
pub mod extract;
pub mod handlers;
pub mod openapi;
pub mod rate_limit;
pub mod router;

pub use router::router;
