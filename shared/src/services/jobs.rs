//! Reading jobs. A job belongs to one user; another user's job does not exist for them.

use super::App;
use crate::domain::{JobId, ResultFormat, UserId};
use crate::error::Error;
use crate::store::schema::JobItem;

/// The caller's job, or `NotFound` (also for another user's job).
pub async fn get_job(app: &App, user: &UserId, id: &JobId) -> Result<JobItem, Error> {
    match app.store.get_job(id).await? {
        Some(job) if &job.user_id == user => Ok(job),
        _ => Err(Error::NotFound { what: "edit" }),
    }
}

/// The caller's jobs, newest first.
pub async fn list_jobs(
    app: &App,
    user: &UserId,
    limit: u16,
    cursor: Option<&str>,
) -> Result<(Vec<JobItem>, Option<String>), Error> {
    app.store.jobs_page(user, limit, cursor).await
}

/// Short-lived download URLs of a delivered job.
#[derive(Debug, Clone)]
pub struct ResultLinks {
    /// The delivered image in `format`.
    pub url: String,
    /// What `url` serves: the one asked for, or the master when the result has no rendition.
    pub format: ResultFormat,
    pub expires_at: String,
    /// A repair that kept the previous version: its candidate, for inspection.
    pub candidate_url: Option<String>,
}

/// Short-lived download URLs for the job's delivered image in `format` (and a kept repair
/// candidate, as its master); none once its images were deleted.
pub async fn result_links(
    app: &App,
    job: &JobItem,
    format: ResultFormat,
) -> Result<Option<ResultLinks>, Error> {
    let Some(result) = &job.result else {
        return Ok(None);
    };
    if job.images_deleted_at.is_some() {
        return Ok(None);
    }
    let (key, format) = match (format, &result.jpeg_key) {
        (ResultFormat::Jpeg, Some(jpeg)) => (jpeg, ResultFormat::Jpeg),
        _ => (&result.asset_key, ResultFormat::Png),
    };
    let ttl = std::time::Duration::from_secs(app.config.limits.result_url_ttl_secs);
    let url = app.assets.presign_get(key, ttl).await?;
    let candidate_url = match &result.candidate_asset_key {
        Some(key) => Some(app.assets.presign_get(key, ttl).await?),
        None => None,
    };
    Ok(Some(ResultLinks {
        url,
        format,
        expires_at: crate::clock::format(crate::clock::now() + ttl),
        candidate_url,
    }))
}
