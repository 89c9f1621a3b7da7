//! Edits: submit (paid, idempotent), read, list.

use atelier_shared::domain::{EditRequest, JobId, RepairRequest, ResultFormat};
use atelier_shared::services::submit::Submitted;
use atelier_shared::services::watch::Waited;
use atelier_shared::services::{App, adopt, cancel, jobs, lineage, privacy, submit, watch};
use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::auth::Caller;
use crate::dto::{JobPage, JobView};
use crate::error::{ApiError, Problem};
use crate::extract::{
    DownloadFormat, IdempotencyKeyHeader, IfNoneMatch, IncomingTrace, JsonBody, Pagination,
    WaitPreference,
};

/// Submits a paid edit (or, with `"preview": true`, a look at the area it would redraw,
/// refunded whole). New: `202` with `Location`. Replay of the same request with the same
/// key: `200`, the same job, `Idempotent-Replayed: true`, nothing charged.
#[utoipa::path(post, path = "/v1/edits", tag = "edits", request_body = EditRequest,
    security(("bearer" = [])),
    params(("Idempotency-Key" = String, Header, description = "1-255 visible ASCII characters; reuse it when retrying the same request")),
    responses(
        (status = 202, body = JobView, description = "created and charged", headers(("Location" = String, description = "the job: `/v1/edits/{id}`"))),
        (status = 200, body = JobView, description = "replay: the existing job, nothing charged", headers(("Location" = String, description = "the job: `/v1/edits/{id}`"), ("Idempotent-Replayed" = String, description = "`true`: this answers an earlier request with the same key"))),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "IDEMPOTENCY_KEY_REQUIRED, IDEMPOTENCY_KEY_INVALID or MALFORMED_JSON: nothing charged"),
        (status = 402, body = Problem, content_type = "application/problem+json", description = "INSUFFICIENT_CREDITS: buy a pack (`GET /v1/packs`, `POST /v1/checkout`); nothing charged"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "ACCOUNT_ON_HOLD: a reversed purchase left the account short; nothing charged"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "ASSET_NOT_FOUND: an asset id names no upload of the caller's"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "IDEMPOTENCY_CONFLICT: the key was used with another body"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "VALIDATION_FAILED: `errors` names each bad field"),
        (status = 429, body = Problem, content_type = "application/problem+json",
            description = "TOO_MANY_IN_FLIGHT (Retry-After: 30), DAILY_LIMIT_REACHED: the caller's share of the day's model budget is spent, or PREVIEW_LIMIT_REACHED: a preview past the day's 10 (Retry-After: seconds to the next UTC day); nothing charged",
            headers(("Retry-After" = u32, description = "seconds to wait before trying again"))),
    ))]
pub async fn create_edit(
    State(app): State<App>,
    Caller(user): Caller,
    IdempotencyKeyHeader(key): IdempotencyKeyHeader,
    IncomingTrace(trace): IncomingTrace,
    JsonBody(req): JsonBody<EditRequest>,
) -> Result<Response, ApiError> {
    let spec = req.validate().map_err(ApiError::validation)?;
    let submitted = submit::submit_edit(&app, &user, &key, spec, trace).await?;
    Ok(accepted(submitted))
}

/// Submits a paid repair of a succeeded edit (or of a succeeded repair of it): only an
/// instruction; the edit's settings stay. Same replay and conflict rules as an edit. The
/// repair edits the version the user holds; only an improvement replaces it.
#[utoipa::path(post, path = "/v1/edits/{id}/repairs", tag = "edits", request_body = RepairRequest,
    security(("bearer" = [])),
    params(("id" = String, Path),
        ("Idempotency-Key" = String, Header, description = "1-255 visible ASCII characters; reuse it when retrying the same request")),
    responses(
        (status = 202, body = JobView, description = "created and charged", headers(("Location" = String, description = "the job: `/v1/edits/{id}`"))),
        (status = 200, body = JobView, description = "replay: the existing repair, nothing charged", headers(("Location" = String, description = "the job: `/v1/edits/{id}`"), ("Idempotent-Replayed" = String, description = "`true`: this answers an earlier request with the same key"))),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "IDEMPOTENCY_KEY_REQUIRED, IDEMPOTENCY_KEY_INVALID or MALFORMED_JSON: nothing charged"),
        (status = 402, body = Problem, content_type = "application/problem+json", description = "INSUFFICIENT_CREDITS: nothing charged"),
        (status = 403, body = Problem, content_type = "application/problem+json", description = "ACCOUNT_ON_HOLD: nothing charged"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "NOT_FOUND: no such edit of the caller's"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "IDEMPOTENCY_CONFLICT, NOT_REPAIRABLE, REPAIR_LIMIT_REACHED, REPAIRS_STOPPED or REPAIR_IN_PROGRESS"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "VALIDATION_FAILED: `errors` names each bad field"),
        (status = 429, body = Problem, content_type = "application/problem+json",
            description = "TOO_MANY_IN_FLIGHT (Retry-After: 30) or DAILY_LIMIT_REACHED: the caller's share of the day's model budget is spent (Retry-After: seconds to the next UTC day); nothing charged",
            headers(("Retry-After" = u32, description = "seconds to wait before trying again"))),
    ))]
pub async fn create_repair(
    State(app): State<App>,
    Caller(user): Caller,
    Path(id): Path<String>,
    IdempotencyKeyHeader(key): IdempotencyKeyHeader,
    IncomingTrace(trace): IncomingTrace,
    JsonBody(req): JsonBody<RepairRequest>,
) -> Result<Response, ApiError> {
    let id = JobId::parse(&id).ok_or_else(ApiError::not_found)?;
    let spec = req.validate().map_err(ApiError::validation)?;
    let submitted = submit::submit_repair(&app, &user, &key, &id, spec, trace).await?;
    Ok(accepted(submitted))
}

/// `202` + `Location` for a new job, `200` + `Idempotent-Replayed` for a replay.
fn accepted(submitted: Submitted) -> Response {
    let location = format!("/v1/edits/{}", submitted.job.job_id);
    let status = if submitted.replayed {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    let mut res = (status, Json(JobView::from(submitted.job))).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        res.headers_mut().insert(header::LOCATION, v);
    }
    if submitted.replayed {
        res.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    res
}

/// One of the caller's edits (or repairs), with its lineage when it has repairs. A delivered
/// result's `url` serves the `format` asked for. With a wait (`Prefer: wait=N` or `?wait=N`)
/// the answer comes when what the job shows changes, or after N seconds — at once when nothing
/// is left to wait for (a final job with no repair in flight) or when the caller already holds
/// the most waits one user may; with
/// `If-None-Match` holding the current `ETag` it is `304` (after the wait, if nothing changed).
#[utoipa::path(get, path = "/v1/edits/{id}", tag = "edits", security(("bearer" = [])),
    params(("id" = String, Path),
        ("format" = Option<ResultFormat>, Query, description = "what `result.url` serves: `jpeg` (default; sized for phones, pixels within a few levels of the master) or `png` (the lossless master, pixel for pixel what leakage was measured on)"),
        ("wait" = Option<u32>, Query, minimum = 1, maximum = 20, description = "seconds to wait for the job to change before answering (for clients that cannot send `Prefer: wait=N`); anything but 1-20 is `400 INVALID_WAIT`"),
        ("Prefer" = Option<String>, Header, description = "`wait=N` (RFC 7240): answer as soon as what the job shows changes, or after N seconds (at most 20; a longer wish gets 20, a malformed one is ignored). Answered at once, without `Preference-Applied`, when the job is final with no repair in flight, the `If-None-Match` tag is already stale, or the caller already holds {WAITS_PER_USER} waits"),
        ("If-None-Match" = Option<String>, Header, description = "the `ETag` of the job as the client holds it: `304` while it is unchanged; with a wait, the wait lasts until it changes")),
    responses((status = 200, body = JobView, description = "the job; `result.url` is a fresh download link in the format asked for",
            headers(("ETag" = String, description = "weak tag of what the job shows, the same across reads of an unchanged job (the signed links are not part of it)"),
                ("Preference-Applied" = String, description = "`wait=N`: the request waited up to N seconds; absent when it did not wait"),
                ("Vary" = String, description = "`Prefer`"))),
        (status = 304, description = "not modified: the job is as the client's `If-None-Match` says (after the wait, if one was asked for); no body",
            headers(("ETag" = String, description = "the job's current tag"),
                ("Preference-Applied" = String, description = "`wait=N`: the request waited up to N seconds; absent when it did not wait"))),
        (status = 400, body = Problem, content_type = "application/problem+json", description = "INVALID_WAIT: `wait` is not a whole number from 1 to 20"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "NOT_FOUND: no such edit of the caller's (answered at once, wait or not)"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "VALIDATION_FAILED: format is not jpeg or png")))]
pub async fn get_edit(
    State(app): State<App>,
    Caller(user): Caller,
    Path(id): Path<String>,
    DownloadFormat(format): DownloadFormat,
    WaitPreference(wait): WaitPreference,
    if_none_match: IfNoneMatch,
) -> Result<Response, ApiError> {
    let id = JobId::parse(&id).ok_or_else(ApiError::not_found)?;
    let seen = watch::look(&app, &user, &id).await?;
    let stale = if_none_match.is_present() && !if_none_match.matches(&seen.version.etag(format));
    let (now, waited) = watch::wait_if_useful(&app, seen, wait, stale).await?;
    let etag = now.version.etag(format);
    let mut res = if if_none_match.matches(&etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let links = jobs::result_links(&app, &now.job, format).await?;
        let photo_url = jobs::question_photo_url(&app, &now.job).await?;
        let usual = match now.job.status().is_terminal() {
            true => None,
            false => jobs::usual_secs(&app, &user).await?,
        };
        let mut view = JobView::detailed(
            now.job,
            links,
            now.lineage.as_ref(),
            app.config.limits.result_retention_days,
        );
        view.usual_secs = usual;
        if let Some(f) = view.failure.as_mut() {
            f.photo_url = photo_url;
        }
        Json(view).into_response()
    };
    let headers = res.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    // The body holds short-lived signed links: no cache may answer for us with an old copy.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    headers.insert(header::VARY, HeaderValue::from_static("Prefer"));
    // Only a wait that happened is applied (RFC 7240): its absence tells the client that it
    // was answered at once (nothing to wait for, or too many waits of its user open).
    if let Waited::Applied(w) = waited
        && let Ok(v) = HeaderValue::from_str(&format!("wait={}", w.secs()))
    {
        headers.insert("preference-applied", v);
    }
    Ok(res)
}

/// The caller's edits, newest first.
#[utoipa::path(get, path = "/v1/edits", tag = "edits", security(("bearer" = [])),
    params(("limit" = Option<u16>, Query, description = "1-100, default 20"), ("cursor" = Option<String>, Query)),
    responses((status = 200, body = JobPage, description = "a page of jobs, newest first")))]
pub async fn list_edits(
    State(app): State<App>,
    Caller(user): Caller,
    page: Pagination,
) -> Result<Json<JobPage>, ApiError> {
    let (items, next_cursor) =
        jobs::list_jobs(&app, &user, page.limit, page.cursor.as_deref()).await?;
    let mut views = Vec::with_capacity(items.len());
    for job in items {
        let thumbnail_url = jobs::thumbnail_url(&app, &job).await?;
        views.push(JobView {
            thumbnail_url,
            ..JobView::from(job)
        });
    }
    Ok(Json(JobPage {
        items: views,
        next_cursor,
    }))
}

/// Cancels a queued edit and refunds it. Repeating a cancel is harmless; an edit already
/// processing or finished is `409 NOT_CANCELABLE` with its state.
#[utoipa::path(post, path = "/v1/edits/{id}/cancel", tag = "edits", security(("bearer" = [])),
    params(("id" = String, Path)),
    responses((status = 200, body = JobView, description = "canceled and refunded (or already canceled)"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "NOT_FOUND: no such edit of the caller's"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "NOT_CANCELABLE: the edit is processing or finished")))]
pub async fn cancel_edit(
    State(app): State<App>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    let id = JobId::parse(&id).ok_or_else(ApiError::not_found)?;
    Ok(Json(cancel::cancel(&app, &user, &id).await?.into()))
}

/// Chooses a repair's candidate that the comparison did not keep: the repair then delivers
/// the candidate and the edit's current version is it. Free (no model call, nothing charged)
/// and idempotent: choosing it again changes nothing.
#[utoipa::path(post, path = "/v1/edits/{id}/adopt", tag = "edits", security(("bearer" = [])),
    params(("id" = String, Path, description = "the repair whose candidate to keep")),
    responses((status = 200, body = JobView, description = "the repair, delivering its candidate (`result.adopted_at`); the same answer when chosen before"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "NOT_FOUND: no such edit of the caller's"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "CANDIDATE_NOT_ADOPTABLE: not a repair whose candidate was not kept, or the edit no longer holds the version it was compared with; nothing changed")))]
pub async fn adopt_candidate(
    State(app): State<App>,
    Caller(user): Caller,
    Path(id): Path<String>,
    DownloadFormat(format): DownloadFormat,
) -> Result<Json<JobView>, ApiError> {
    let id = JobId::parse(&id).ok_or_else(ApiError::not_found)?;
    let job = adopt::adopt_candidate(&app, &user, &id).await?;
    let links = jobs::result_links(&app, &job, format).await?;
    let lineage = lineage::lineage_of(&app, &job).await?;
    Ok(Json(JobView::detailed(
        job,
        links,
        lineage.as_ref(),
        app.config.limits.result_retention_days,
    )))
}

/// Deletes the images of a finished edit and of its repairs (original, mask, style
/// reference, results and candidates). The edit stays, with its charge, refunds and state,
/// and shows `images_deleted_at`; it can no longer be repaired. Repeating it is harmless.
#[utoipa::path(delete, path = "/v1/edits/{id}/images", tag = "edits", security(("bearer" = [])),
    params(("id" = String, Path, description = "the edit or any repair of it")),
    responses((status = 200, body = JobView, description = "the edit, its images deleted (`images_deleted_at`)"),
        (status = 404, body = Problem, content_type = "application/problem+json", description = "NOT_FOUND: no such edit of the caller's"),
        (status = 409, body = Problem, content_type = "application/problem+json",
            description = "IMAGES_IN_USE: the edit or a repair of it is still queued or processing")))]
pub async fn delete_edit_images(
    State(app): State<App>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    let id = JobId::parse(&id).ok_or_else(ApiError::not_found)?;
    Ok(Json(
        privacy::delete_edit_images(&app, &user, &id).await?.into(),
    ))
}
