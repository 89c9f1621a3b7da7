//! Submitting a paid edit: price it, keep a copy of its assets (which checks they exist),
//! then one transaction that creates
//! the job, debits the account and writes the ledger row (rules 1, 2, 10, 11). A missing asset
//! is refused before anything is written. The queue is rung after the commit; a failed ring is
//! left to the sweeper (rule 4).

use super::Submitted;
use crate::assets::Assets;
use crate::clock;
use crate::domain::{EditSpec, IdempotencyKey, JobId, Operation, UserId};
use crate::error::Error;
use crate::pricing;
use crate::services::App;
use crate::services::budget::day_of;
use crate::store::jobs::NoRefusal;
use crate::store::schema::{JobItem, NewJob};

/// Submits an edit on behalf of `user`.
pub async fn submit_edit(
    app: &App,
    user: &UserId,
    key: &IdempotencyKey,
    spec: EditSpec,
) -> Result<Submitted, Error> {
    let job_id = JobId::derive(user, Operation::Edit, key);
    let request_hash = spec.request_hash();
    let price = pricing::quote(&spec).credits;

    // Each input is copied into the edit's own prefix before anything is written (the copy
    // is also the existence check, so a missing asset changes nothing): repairs read the
    // copy, so they keep working after the upload expires or is deleted. The key is derived
    // from the job id, so a retry copies onto the same key.
    for (field, kind, id) in spec.assets() {
        let kept = Assets::kept_input_key(user, &job_id, kind);
        if !app
            .assets
            .copy(&Assets::upload_key(user, kind, id), &kept)
            .await?
        {
            return Err(Error::AssetNotFound { field });
        }
    }

    let now = clock::now();
    let job = JobItem::queued(
        NewJob {
            job_id,
            user_id: user.clone(),
            operation: Operation::Edit,
            request: spec,
            request_hash,
            credits: price,
            repair: None,
        },
        now,
        app.config.limits.first_resend_after(),
    );

    let max_in_flight = app.config.limits.max_in_flight;
    let share_day = day_of(now);
    super::create_charged(
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
