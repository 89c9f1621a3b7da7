//! Unauthenticated routes.

use atelier_shared::domain::STYLES;
use axum::Json;
use axum::response::IntoResponse;

use crate::dto::{Health, StyleList};

/// Liveness.
#[utoipa::path(get, path = "/healthz", tag = "public", responses((status = 200, body = Health)))]
pub async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// The style catalog.
#[utoipa::path(get, path = "/v1/styles", tag = "public", responses((status = 200, body = StyleList)))]
pub async fn styles() -> Json<StyleList> {
    Json(StyleList {
        items: STYLES.to_vec(),
    })
}

/// This API's OpenAPI document.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "public", responses((status = 200, description = "OpenAPI 3.1 document")))]
pub async fn openapi() -> impl IntoResponse {
    Json(crate::openapi::document())
}
