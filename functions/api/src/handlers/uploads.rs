//! Presigned uploads.

use atelier_shared::services::{App, uploads};
use axum::Json;
use axum::extract::State;
use http::StatusCode;

use crate::auth::Caller;
use crate::dto::{UploadRequest, UploadView};
use crate::error::{ApiError, Problem};
use crate::extract::JsonBody;

/// A short-lived PUT URL for one image into the caller's private space. The declared size
/// and type are signed: S3 refuses a different body.
#[utoipa::path(post, path = "/v1/uploads", tag = "uploads", request_body = UploadRequest, security(("bearer" = [])),
    responses((status = 201, body = UploadView), (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create_upload(
    State(app): State<App>,
    Caller(user): Caller,
    JsonBody(req): JsonBody<UploadRequest>,
) -> Result<(StatusCode, Json<UploadView>), ApiError> {
    let spec =
        uploads::UploadSpec::parse(req.kind.as_deref(), req.content_type.as_deref(), req.bytes)
            .map_err(ApiError::validation)?;
    let slot = uploads::create_upload(&app, &user, &spec).await?;
    Ok((StatusCode::CREATED, Json(slot.into())))
}
