//! Unauthenticated routes (the OpenAPI document's own route is in `crate::openapi`, which
//! depends on the handlers, never the other way round).

use atelier_shared::domain::STYLES;
use axum::Json;

use crate::dto::{Health, StyleList};

/// Liveness.
#[utoipa::path(get, path = "/healthz", tag = "public", responses((status = 200, body = Health, description = "the API is up")))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// The style catalog.
#[utoipa::path(get, path = "/v1/styles", tag = "public", responses((status = 200, body = StyleList, description = "the 15 media")))]
pub async fn styles() -> Json<StyleList> {
    Json(StyleList {
        items: STYLES.to_vec(),
    })
}
