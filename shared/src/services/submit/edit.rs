//! Submitting a paid edit: price it, check its assets exist, then one transaction that creates
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
use crate::store::jobs::CreateOutcome;
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

    // Assets are checked before anything is written, so a missing one changes nothing.
    for (field, kind, id) in spec.assets() {
        if !app
            .assets
            .exists(&Assets::upload_key(user, kind, id))
            .await?
        {
            return Err(Error::AssetNotFound { field });
        }
    }

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
        clock::now(),
    );

    // At most two rounds: the second only after creating a missing account.
    for _ in 0..2 {
        match app
            .store
            .create_job_with_debit(&job, app.config.limits.max_in_flight)
            .await?
        {
            CreateOutcome::Created => {
                tracing::info!(user_id = %user, job_id = %job.job_id, credits = job.credits, "job_created");
                if let Err(e) = app.queue.send_job(&job.job_id).await {
                    // The job is charged and queued in the database; the sweeper re-sends.
                    tracing::warn!(job_id = %job.job_id, error = %crate::error::chain(&e), "queue_dispatch_deferred");
                }
                return Ok(Submitted {
                    job,
                    replayed: false,
                });
            }
            CreateOutcome::Exists(old) => {
                // Never skip the hash check: same key, other body is a conflict.
                return if old.request_hash == job.request_hash
                    && old.user_id == *user
                    && old.operation == Operation::Edit
                {
                    tracing::info!(job_id = %old.job_id, "job_replayed");
                    Ok(Submitted {
                        job: *old,
                        replayed: true,
                    })
                } else {
                    tracing::info!(job_id = %old.job_id, "idempotency_conflict");
                    Err(Error::IdempotencyConflict)
                };
            }
            CreateOutcome::AccountMissing => {
                crate::services::accounts::ensure_account(app, user).await?;
            }
            CreateOutcome::InsufficientCredits { balance } => {
                return Err(Error::InsufficientCredits {
                    balance,
                    price: price.get(),
                });
            }
            CreateOutcome::TooManyInFlight { in_flight } => {
                return Err(Error::TooManyInFlight {
                    in_flight,
                    limit: app.config.limits.max_in_flight,
                });
            }
        }
    }
    Err(Error::NotFound { what: "account" })
}
