//! Devices registered for push notifications (a finished edit or repair).

use atelier_shared::domain::device::{DeviceId, MAX_DEVICES, Registration};
use atelier_shared::services::{App, devices};
use axum::Json;
use axum::extract::{Path, State};
use http::StatusCode;

use crate::auth::Caller;
use crate::dto::{DeviceList, DeviceRequest, DeviceView};
use crate::error::{ApiError, Problem};
use crate::extract::JsonBody;

/// Registers this device for push (or replaces its token): idempotent, the app sends it on
/// every launch. `id` is the app's own id for the install. At most 5 devices per user.
#[utoipa::path(put, path = "/v1/devices/{id}", tag = "devices", request_body = DeviceRequest, security(("bearer" = [])),
    params(("id" = String, Path, description = "the app's id for this install: 1-64 of A-Z a-z 0-9 - _")),
    responses((status = 201, body = DeviceView, description = "registered"),
        (status = 200, body = DeviceView, description = "registered already: platform and token replaced"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "ACCOUNT_CLOSED: the account was deleted"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "NOT_FOUND: the id is not a device id"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "DEVICE_LIMIT_REACHED: 5 devices are registered; unregister one first; nothing changed"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "VALIDATION_FAILED: platform or token refused")))]
pub async fn put_device(
    State(app): State<App>,
    Caller(user): Caller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<DeviceRequest>,
) -> Result<(StatusCode, Json<DeviceView>), ApiError> {
    let id = DeviceId::parse(&id).ok_or_else(ApiError::not_found)?;
    let reg = Registration::parse(req.platform.as_deref(), req.token.as_deref())
        .map_err(ApiError::validation)?;
    let added = devices::register(&app, &user, &id, &reg).await?;
    let status = if added {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(DeviceView {
            id: id.to_string(),
            platform: reg.platform.as_str().to_owned(),
        }),
    ))
}

/// Unregisters this device: no more pushes reach it. Idempotent.
#[utoipa::path(delete, path = "/v1/devices/{id}", tag = "devices", security(("bearer" = [])),
    params(("id" = String, Path, description = "the id the device was registered with")),
    responses((status = 204, description = "not registered (any more)")))]
pub async fn delete_device(
    State(app): State<App>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if let Some(id) = DeviceId::parse(&id) {
        devices::unregister(&app, &user, &id).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The caller's registered devices (never their tokens).
#[utoipa::path(get, path = "/v1/devices", tag = "devices", security(("bearer" = [])),
    responses((status = 200, body = DeviceList, description = "the registered devices")))]
pub async fn list_devices(
    State(app): State<App>,
    Caller(user): Caller,
) -> Result<Json<DeviceList>, ApiError> {
    let items = devices::list(&app, &user)
        .await?
        .into_iter()
        .map(|(id, d)| DeviceView {
            id: id.to_string(),
            platform: d.platform.as_str().to_owned(),
        })
        .collect();
    Ok(Json(DeviceList {
        items,
        limit: MAX_DEVICES,
    }))
}
