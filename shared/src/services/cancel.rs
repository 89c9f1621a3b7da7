//! Cancel: a queued job becomes `canceled` and is refunded in one transaction. A job already
//! processing or finished cannot be canceled; repeating a cancel is harmless.

use super::App;
use crate::clock;
use crate::domain::Job;
use crate::domain::{JobId, JobState, UserId};
use crate::error::Error;
use crate::store::jobs::FinishOutcome;

/// Cancels the caller's job; returns it as it now stands.
pub async fn cancel(app: &App, user: &UserId, id: &JobId) -> Result<Job, Error> {
    let job = super::jobs::get_job(app, user, id).await?;
    match job.status() {
        JobState::Canceled => return Ok(job),
        JobState::Queued => {}
        state => return Err(Error::NotCancelable { state }),
    }
    match app
        .store
        .cancel_and_refund(&job, &clock::format(clock::now()))
        .await?
    {
        FinishOutcome::Done => {
            tracing::info!(job_id = %id, credits = job.credits.get(), "job_canceled_refunded");
            crate::adapters::metrics::failed_and_refunded(
                crate::domain::FailureCode::Canceled,
                crate::adapters::metrics::RefundSource::Cancel,
                job.credits,
            );
        }
        FinishOutcome::NotInState => {}
    }
    // Read back: a claim may have won the race, or a concurrent cancel.
    let now = super::jobs::get_job(app, user, id).await?;
    match now.status() {
        JobState::Canceled => Ok(now),
        state => Err(Error::NotCancelable { state }),
    }
}
