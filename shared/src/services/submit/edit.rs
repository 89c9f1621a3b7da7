//! Submitting a paid edit: price it, read the ETag of each of its uploads (which checks they
//! exist), then one transaction that creates the job with those ETags, debits the account and
//! writes the ledger row (rules 1, 2, 10, 11). A missing asset is refused before anything is
//! written, and a submit writes nothing to the bucket: the job's own copy of its inputs is
//! made by the consumer that claims it, from exactly the bytes recorded here (so a refused or
//! conflicting submit leaves no object and never touches another job's inputs). The queue is
//! rung after the commit; a failed ring is left to the sweeper (rule 4).

use super::charge::{self, Submitted};
use crate::adapters::assets::Assets;
use crate::clock;
use crate::domain::TraceId;
use crate::domain::edit::limits;
use crate::domain::pricing;
use crate::domain::{EditSpec, IdempotencyKey, InputVersion, JobId, Operation, UserId};
use crate::domain::{Job, NewJob};
use crate::error::Error;
use crate::services::App;
use crate::services::budget::day_of;
use crate::store::jobs::NoRefusal;
use crate::store::previews::{PreviewDay, PreviewLimitReached};

/// Submits an edit on behalf of `user`.
pub async fn submit_edit(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    spec: EditSpec,
    trace: Option<TraceId>,
) -> Result<Submitted, Error> {
    let job_id = JobId::derive(user, Operation::Edit, key);
    let request_hash = spec.request_hash();
    let price = pricing::quote(&spec).credits;
    let inputs = input_versions(app, user, &spec).await?;

    let now = clock::now();
    let trace = trace.unwrap_or_else(|| TraceId::for_job(job_id.as_str(), now.unix_timestamp()));
    let job = Job::queued(
        NewJob {
            job_id,
            user_id: user.clone(),
            operation: Operation::Edit,
            request: spec,
            request_hash,
            inputs,
            credits: price,
            repair: None,
            trace,
        },
        &clock::format(now),
        &clock::format(now + app.config.limits.first_resend_after()),
    );

    let max_in_flight = app.config.limits.max_in_flight;
    let share_day = day_of(now);
    if job.request.preview {
        return create_preview(app, &job, now).await;
    }
    charge::create_charged(
        app,
        &job,
        || {
            app.store
                .create_job_with_debit(&job, max_in_flight, &share_day)
        },
        NoRefusal::never,
    )
    .await
}

/// A preview is charged like the edit it previews (and refunded whole when it ends), and
/// counted against the day's previews in the same transaction.
async fn create_preview(app: &App, job: &Job, now: clock::Instant) -> Result<Submitted, Error> {
    let (max_in_flight, share_day) = (app.config.limits.max_in_flight, day_of(now));
    let limit = limits::PREVIEWS_PER_DAY;
    let retry_after_secs = clock::retry_after_next_utc_day(now);
    let count = PreviewDay {
        day: share_day.clone(),
        max: limit,
        expires_at: crate::services::uploads::day_counter_expires_at(now),
    };
    charge::create_charged(
        app,
        job,
        || {
            app.store
                .create_preview_with_debit(job, &count, max_in_flight, &share_day)
        },
        |PreviewLimitReached| Error::PreviewLimitReached {
            limit,
            retry_after_secs,
        },
    )
    .await
}

/// What each of the edit's uploads holds now (its ETag, one HeadObject each, at once); a
/// missing one is refused with the field that names it (the first in the request's order).
async fn input_versions(
    app: &App,
    user: &UserId,
    spec: &EditSpec,
) -> Result<Vec<InputVersion>, Error> {
    let heads = spec
        .assets()
        .into_iter()
        .map(|(field, kind, id)| async move {
            match app.assets.etag(&Assets::upload_key(user, kind, id)).await? {
                Some(etag) => Ok(InputVersion { kind, etag }),
                None => Err(Error::AssetNotFound { field }),
            }
        });
    futures::future::join_all(heads).await.into_iter().collect()
}
