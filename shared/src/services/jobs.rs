//! Reading jobs. A job belongs to one user; another user's job does not exist for them.

use super::App;
use crate::adapters::assets::Assets;
use crate::domain::{AssetKind, FailureCode, Job, JobId, ResultFormat, UserId};
use crate::error::Error;

/// The caller's job, or `NotFound` (also for another user's job).
pub async fn get_job(app: &App, user: &UserId, id: &JobId) -> Result<Job, Error> {
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
) -> Result<(Vec<Job>, Option<String>), Error> {
    app.store.jobs_page(user, limit, cursor).await
}

/// How many of the caller's latest jobs the usual duration is taken from.
const USUAL_OF_LAST: u16 = 10;
/// Fewer delivered jobs than this among them give no estimate (one slow edit is no habit).
const USUAL_AT_LEAST: usize = 3;

/// How long the caller's edits usually take, submit to delivery, in whole seconds: the median
/// over the delivered ones among their last [`USUAL_OF_LAST`] jobs (one query). `None` with
/// fewer than [`USUAL_AT_LEAST`] of them: no estimate rather than a made-up one.
pub async fn usual_secs(app: &App, user: &UserId) -> Result<Option<u32>, Error> {
    let (jobs, _) = app.store.jobs_page(user, USUAL_OF_LAST, None).await?;
    Ok(median_delivery_secs(&jobs))
}

/// The median of the delivered jobs' submit-to-delivery times (`updated_at` is when the
/// delivery was written; a repair's later choice of candidate moves it, hence the median).
pub fn median_delivery_secs(jobs: &[Job]) -> Option<u32> {
    let mut secs: Vec<i64> = jobs
        .iter()
        .filter(|j| j.result().is_some())
        .filter_map(|j| {
            let took = crate::clock::parse(&j.updated_at)? - crate::clock::parse(&j.created_at)?;
            Some(took.whole_seconds())
        })
        .filter(|s| *s >= 0)
        .collect();
    if secs.len() < USUAL_AT_LEAST {
        return None;
    }
    secs.sort_unstable();
    u32::try_from(secs[secs.len() / 2]).ok()
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
    /// The photo the lineage started from (the edit's kept copy), for a before/after compare
    /// that survives a reload or another device.
    pub original_url: String,
}

/// The name a downloaded result is saved under: what was made and from which edit, e.g.
/// `atelier-embroidery-pet-01jf3xk2.jpg` (ASCII only: it goes into a header).
pub fn download_name(job: &Job, suffix: &str, format: ResultFormat) -> String {
    let id: String = job
        .job_id
        .as_str()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    format!(
        "atelier-{}-{}-{id}{suffix}.{}",
        job.request.style.as_str(),
        job.request.target.as_str(),
        format.extension()
    )
}

/// Short-lived download URLs for the job's delivered image in `format` (and a kept repair
/// candidate, as its master); none once its images were deleted or expired.
pub async fn result_links(
    app: &App,
    job: &Job,
    format: ResultFormat,
) -> Result<Option<ResultLinks>, Error> {
    let Some(result) = live_result(app, job) else {
        return Ok(None);
    };
    let (key, format) = match (format, &result.jpeg_key) {
        (ResultFormat::Jpeg, Some(jpeg)) => (jpeg, ResultFormat::Jpeg),
        _ => (&result.asset_key, ResultFormat::Png),
    };
    let ttl = std::time::Duration::from_secs(app.config.limits.result_url_ttl_secs);
    let download = |key: &str, suffix: &str, format: ResultFormat| {
        let name = download_name(job, suffix, format);
        let assets = &app.assets;
        let key = key.to_owned();
        async move {
            assets
                .presign_download(&key, ttl, &name, format.content_type())
                .await
        }
    };
    let url = download(key, "", format).await?;
    let candidate_url = match &result.candidate_asset_key {
        Some(key) => Some(download(key, "-candidate", ResultFormat::Png).await?),
        None => None,
    };
    let original = Assets::kept_input_key(&job.user_id, job.root_id(), AssetKind::Original);
    let original_url = app.assets.presign_get(&original, ttl).await?;
    Ok(Some(ResultLinks {
        url,
        format,
        expires_at: crate::clock::format(crate::clock::now() + ttl),
        candidate_url,
        original_url,
    }))
}

/// A short-lived inline URL of the photo a clarification asks about (the job's kept copy, made
/// before its check), so the person can pick one of the outlined subjects on it, or see the
/// area a preview found: only for a `NEEDS_CLARIFICATION` or `PREVIEWED` failure with
/// candidates, while the job's images are kept.
pub async fn question_photo_url(app: &App, job: &Job) -> Result<Option<String>, Error> {
    let asks = job.failure().is_some_and(|f| {
        matches!(
            f.code,
            FailureCode::NeedsClarification | FailureCode::Previewed
        ) && !f.candidates.is_empty()
    });
    let kept = job.images_deleted_at.is_none()
        && images_expired_at(job, app.config.limits.result_retention_days).is_none();
    if !asks || !kept {
        return Ok(None);
    }
    let key = Assets::kept_input_key(&job.user_id, job.root_id(), AssetKind::Original);
    let ttl = std::time::Duration::from_secs(app.config.limits.result_url_ttl_secs);
    Ok(Some(app.assets.presign_get(&key, ttl).await?))
}

/// A short-lived inline URL of the job's list thumbnail (a JPEG of at most
/// [`crate::domain::imaging::THUMBNAIL_MAX_SIDE`] pixels a side); none while there is no
/// result, once its images were deleted or expired, and for results stored before thumbnails.
/// Presigning is local (no call to S3), so a page of jobs costs no extra requests.
pub async fn thumbnail_url(app: &App, job: &Job) -> Result<Option<String>, Error> {
    let Some(key) = live_result(app, job).and_then(crate::domain::JobResult::thumbnail_key) else {
        return Ok(None);
    };
    let ttl = std::time::Duration::from_secs(app.config.limits.result_url_ttl_secs);
    Ok(Some(app.assets.presign_get(&key, ttl).await?))
}

/// The job's result while its images are kept (not deleted, not expired).
fn live_result<'a>(app: &App, job: &'a Job) -> Option<&'a crate::domain::JobResult> {
    let kept = job.images_deleted_at.is_none()
        && images_expired_at(job, app.config.limits.result_retention_days).is_none();
    job.result().filter(|_| kept)
}

/// When the bucket's lifecycle rule has removed (or may have removed) a finished job's
/// images, if that moment has passed: `None` while they are kept. S3 expires an object at
/// the first UTC midnight at least `days` after it was written; every image of a job is
/// written after the job was created, so the UTC midnight that starts the day of
/// `created_at + days` is never later than the real expiry, and a job never hands out a link
/// that is already dead (it may stop offering one up to a day early).
pub fn images_expired_at(job: &Job, days: u32) -> Option<String> {
    expiry(job, days)
        .filter(|at| *at <= crate::clock::now())
        .map(crate::clock::format)
}

fn expiry(job: &Job, days: u32) -> Option<crate::clock::Instant> {
    if !job.status().is_terminal() {
        return None;
    }
    let created = crate::clock::parse(&job.created_at)?;
    let kept_until = created.checked_add(time::Duration::days(i64::from(days)))?;
    Some(kept_until.date().midnight().assume_utc())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::job::State;
    use crate::domain::job::fixtures::new_edit;
    use crate::domain::{FailureCode, JobFailure, JobState};

    fn job_created(at: crate::clock::Instant, status: JobState) -> Job {
        let mut job = Job::queued(
            new_edit(None),
            &crate::clock::format(at),
            &crate::clock::format(at + std::time::Duration::from_secs(60)),
        );
        job.state = match status {
            JobState::Queued => job.state,
            JobState::Processing => State::Processing {
                started_at: job.created_at.clone(),
            },
            _ => State::Failed {
                started_at: None,
                failure: JobFailure::new(FailureCode::TimedOut),
            },
        };
        job
    }

    #[test]
    fn the_usual_duration_is_the_median_of_at_least_three_delivered_jobs() {
        let now = crate::clock::now();
        let delivered = |secs: i64| {
            let mut job = job_created(now, JobState::Failed);
            job.updated_at = crate::clock::format(now + time::Duration::seconds(secs));
            job.state = State::Succeeded {
                started_at: None,
                result: Box::new(crate::domain::job::fixtures::result()),
            };
            job
        };
        let failed = job_created(now, JobState::Failed);
        assert_eq!(median_delivery_secs(&[delivered(4), delivered(5)]), None);
        assert_eq!(
            median_delivery_secs(&[delivered(4), failed.clone(), delivered(5)]),
            None,
            "a failed job is no delivery"
        );
        assert_eq!(
            median_delivery_secs(&[delivered(9), delivered(4), delivered(300), delivered(5)]),
            Some(9),
            "one slow edit does not make the usual"
        );
    }

    #[test]
    fn a_jobs_images_count_as_expired_from_the_midnight_before_the_bucket_removes_them() {
        let day = time::Duration::days(1);
        let now = crate::clock::now();
        let cases = [
            (now - day * 91, JobState::Failed, true, "past 90 days"),
            (now - day * 89, JobState::Failed, false, "within 90 days"),
            (now - day * 91, JobState::Processing, false, "not finished"),
        ];
        for (created, status, expired, why) in cases {
            let job = job_created(created, status);
            assert_eq!(images_expired_at(&job, 90).is_some(), expired, "{why}");
        }
        let created = time::macros::datetime!(2026-01-01 23:59:59 UTC);
        let job = job_created(created, JobState::Failed);
        assert_eq!(
            expiry(&job, 90).map(crate::clock::format).as_deref(),
            Some("2026-04-01T00:00:00.000Z"),
            "the midnight that starts the day of created + 90 days"
        );
    }
}
