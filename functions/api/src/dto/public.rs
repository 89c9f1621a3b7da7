//! The unauthenticated routes' answers: the style catalog and the health check.

use serde::Serialize;
use utoipa::ToSchema;

/// The style catalog.
#[derive(Debug, Serialize, ToSchema)]
pub struct StyleList {
    pub items: Vec<atelier_shared::domain::Style>,
}

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}
