//! Presigned uploads.

use atelier_shared::services::{App, uploads};
use axum::Json;
use axum::extract::State;
use http::StatusCode;

use crate::auth::{Caller, Email};
use crate::dto::{UploadRequest, UploadView};
use crate::error::{ApiError, Problem};
use crate::extract::JsonBody;

/// A short-lived PUT URL for one image into the caller's private space. The declared size
/// and type are signed: S3 refuses a different body. Each slot counts against the caller's
/// slots and bytes for the UTC day.
#[utoipa::path(post, path = "/v1/uploads", tag = "uploads", request_body = UploadRequest, security(("bearer" = [])),
    responses((status = 201, body = UploadView, description = "PUT the file to `upload_url` with `headers`"), (status = 422, body = Problem, content_type = "application/problem+json", description = "VALIDATION_FAILED: kind, type or size refused"),
        (status = 429, body = Problem, content_type = "application/problem+json",
            description = "UPLOAD_LIMIT_REACHED: the day's upload slots or bytes are used up; nothing presigned; `Retry-After` is the seconds to the next UTC day",
            headers(("Retry-After" = u32, description = "seconds until the next UTC day")))))]
pub async fn create_upload(
    State(app): State<App>,
    Caller(user): Caller,
    Email(email): Email,
    JsonBody(req): JsonBody<UploadRequest>,
) -> Result<(StatusCode, Json<UploadView>), ApiError> {
    let spec =
        uploads::UploadSpec::parse(req.kind.as_deref(), req.content_type.as_deref(), req.bytes)
            .map_err(ApiError::validation)?;
    let slot = uploads::create_upload(&app, &user, email, &spec).await?;
    Ok((StatusCode::CREATED, Json(slot.into())))
}
