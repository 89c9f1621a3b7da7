//! What the edit and the repair paths share: the charged create, replay or conflict, the
//! debit refusals and the deferred send (the module's docs say why).

use crate::domain::Job;
use crate::error::Error;
use crate::services::App;
use crate::store::jobs::{CreateOutcome, DebitRefusal};

/// A submitted edit or repair.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub job: Job,
    /// The same request had been made before with this key: nothing new was charged.
    pub replayed: bool,
}

/// Creates `job` by `transaction` (the job's conditional put, the debit and the ledger row,
/// plus any conditions of the path's own, all or nothing, written for `job`) and rings the
/// queue. A refusal of the path's own conditions becomes the error `refused` makes of it.
pub(crate) async fn create_charged<R, Tx>(
    app: &App,
    job: &Job,
    transaction: impl Fn() -> Tx,
    refused: impl FnOnce(R) -> Error,
) -> Result<Submitted, Error>
where
    Tx: Future<Output = Result<CreateOutcome<R>, Error>>,
{
    let max_in_flight = app.config.limits.max_in_flight;
    // At most two rounds: the second only after creating a missing account.
    for _ in 0..2 {
        match transaction().await? {
            CreateOutcome::Created => {
                log_created(job);
                if let Err(e) = app.queue.send_job(&job.job_id, job.trace.as_ref()).await {
                    // The job is charged and queued in the database; the sweeper re-sends.
                    tracing::warn!(job_id = %job.job_id, error = %crate::error::chain(&e), "queue_dispatch_deferred");
                }
                return Ok(Submitted {
                    job: job.clone(),
                    replayed: false,
                });
            }
            CreateOutcome::Exists(old) => return replay_or_conflict(*old, job),
            CreateOutcome::DebitRefused(DebitRefusal::AccountMissing) => {
                // Only reachable with an asset but no account (every upload creates the
                // account): created without the signup grant, which needs the token's
                // verified e-mail and is given by the account and upload calls.
                crate::services::accounts::ensure_account(
                    app,
                    &job.user_id,
                    crate::domain::EmailStatus::Unverified,
                )
                .await?;
            }
            CreateOutcome::DebitRefused(refusal) => {
                return Err(debit_refused(refusal, job, max_in_flight));
            }
            CreateOutcome::Refused(r) => return Err(refused(r)),
        }
    }
    Err(debit_refused(
        DebitRefusal::AccountMissing,
        job,
        max_in_flight,
    ))
}

fn log_created(job: &Job) {
    crate::adapters::metrics::charged(job.operation.as_str(), job.credits);
    match &job.repair {
        None => {
            tracing::info!(user_id = %job.user_id, job_id = %job.job_id, trace_id = job.trace_id(), credits = job.credits.get(), "job_created");
        }
        Some(r) => {
            tracing::info!(user_id = %job.user_id, job_id = %job.job_id, trace_id = job.trace_id(), root_job_id = %r.root_job_id, credits = job.credits.get(), "repair_created");
        }
    }
}

/// The key was used before: the same request (same hash, same user, same operation) is a
/// replay of `old`, nothing charged; anything else is a conflict. Never skipped.
fn replay_or_conflict(old: Job, new: &Job) -> Result<Submitted, Error> {
    if old.request_hash == new.request_hash
        && old.user_id == new.user_id
        && old.operation == new.operation
    {
        tracing::info!(job_id = %old.job_id, "job_replayed");
        crate::adapters::metrics::replayed();
        Ok(Submitted {
            job: old,
            replayed: true,
        })
    } else {
        tracing::info!(job_id = %old.job_id, "idempotency_conflict");
        crate::adapters::metrics::idempotency_conflict();
        Err(Error::IdempotencyConflict)
    }
}

/// The error for an account that refused to pay for `job`.
fn debit_refused(refusal: DebitRefusal, job: &Job, max_in_flight: u32) -> Error {
    match refusal {
        // Still missing after it was created: only a deleted account does this.
        DebitRefusal::AccountMissing => Error::NotFound { what: "account" },
        DebitRefusal::InsufficientCredits { balance } => Error::InsufficientCredits {
            balance,
            price: job.credits,
        },
        DebitRefusal::TooManyInFlight { in_flight } => Error::TooManyInFlight {
            in_flight,
            limit: max_in_flight,
        },
        // The day the check was made on is the job's creation day.
        DebitRefusal::DailyLimitReached => Error::DailyLimitReached {
            retry_after_secs: crate::clock::retry_after_next_utc_day(
                crate::clock::parse(&job.created_at).unwrap_or_else(crate::clock::now),
            ),
        },
        DebitRefusal::OnHold => Error::AccountOnHold,
        DebitRefusal::Closed => Error::AccountClosed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock;
    use crate::domain::NewJob;
    use crate::domain::{AssetId, Credits, EditRequest, IdempotencyKey, JobId, Operation, UserId};

    fn job(user: &str, operation: Operation, style: &str) -> Job {
        let (Some(user), Some(key)) = (UserId::parse(user), IdempotencyKey::parse("key-1")) else {
            panic!("test ids must parse");
        };
        let request = EditRequest {
            style: Some(style.into()),
            target: Some("pet".into()),
            original_asset_id: Some(AssetId::generate().as_str().to_owned()),
            ..Default::default()
        }
        .validate()
        .unwrap_or_else(|e| panic!("{e}"));
        let new = NewJob {
            job_id: JobId::derive(&user, operation, &key),
            user_id: user,
            operation,
            request,
            // The style alone decides the hash here (each call uploads a fresh asset).
            request_hash: format!("hash-of-{style}"),
            inputs: Vec::new(),
            credits: Credits::new(4),
            repair: None,
            trace: crate::domain::TraceId::for_job("job_test", 0),
        };
        let now = clock::format(clock::now());
        Job::queued(new, &now, &now)
    }

    #[test]
    fn the_same_request_under_the_same_key_is_a_replay_of_the_job_already_there() {
        let old = job("alice", Operation::Edit, "embroidery");
        let again = job("alice", Operation::Edit, "embroidery");

        let submitted = replay_or_conflict(old.clone(), &again);

        let Ok(submitted) = submitted else {
            panic!("expected a replay, got {submitted:?}");
        };
        assert!(submitted.replayed);
        assert_eq!(submitted.job, old);
    }

    #[test]
    fn another_body_under_the_same_key_is_a_conflict() {
        let old = job("alice", Operation::Edit, "embroidery");
        let other = job("alice", Operation::Edit, "origami");

        let submitted = replay_or_conflict(old, &other);

        assert!(matches!(submitted, Err(Error::IdempotencyConflict)));
    }

    #[test]
    fn the_same_body_from_another_user_is_a_conflict() {
        let old = job("alice", Operation::Edit, "embroidery");
        let other = job("bob", Operation::Edit, "embroidery");

        let submitted = replay_or_conflict(old, &other);

        assert!(matches!(submitted, Err(Error::IdempotencyConflict)));
    }

    #[test]
    fn the_same_body_as_another_operation_is_a_conflict() {
        let old = job("alice", Operation::Edit, "embroidery");
        let other = job("alice", Operation::Repair, "embroidery");

        let submitted = replay_or_conflict(old, &other);

        assert!(matches!(submitted, Err(Error::IdempotencyConflict)));
    }

    #[test]
    fn too_few_credits_is_refused_with_the_balance_and_the_jobs_price() {
        let new = job("alice", Operation::Edit, "embroidery");

        let balance = Credits::new(3);
        let error = debit_refused(DebitRefusal::InsufficientCredits { balance }, &new, 5);

        assert!(
            matches!(
                error,
                Error::InsufficientCredits { balance, price }
                    if balance == Credits::new(3) && price == Credits::new(4)
            ),
            "{error:?}"
        );
    }

    #[test]
    fn too_many_in_flight_is_refused_with_the_count_and_the_limit() {
        let new = job("alice", Operation::Edit, "embroidery");

        let error = debit_refused(DebitRefusal::TooManyInFlight { in_flight: 5 }, &new, 5);

        assert!(
            matches!(
                error,
                Error::TooManyInFlight {
                    in_flight: 5,
                    limit: 5
                }
            ),
            "{error:?}"
        );
    }

    #[test]
    fn an_account_still_missing_after_it_was_created_is_not_found() {
        let new = job("alice", Operation::Edit, "embroidery");

        let error = debit_refused(DebitRefusal::AccountMissing, &new, 5);

        assert!(
            matches!(error, Error::NotFound { what: "account" }),
            "{error:?}"
        );
    }
}
