//! Presigned uploads.

use atelier_shared::domain::AssetId;
use atelier_shared::services::{App, privacy, uploads};
use axum::Json;
use axum::extract::{Path, State};
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

/// Deletes one of the caller's uploads. Refused while a queued or processing edit reads it
/// (edits keep their own copy once submitted, so a finished edit does not need it).
#[utoipa::path(delete, path = "/v1/assets/{id}", tag = "uploads", security(("bearer" = [])),
    params(("id" = String, Path, description = "an asset id from POST /v1/uploads")),
    responses((status = 204, description = "deleted"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "NOT_FOUND: no such upload of the caller's"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "ASSET_IN_USE: a queued or processing edit reads it")))]
pub async fn delete_asset(
    State(app): State<App>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = AssetId::parse(&id).ok_or_else(ApiError::not_found)?;
    privacy::delete_asset(&app, &user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
