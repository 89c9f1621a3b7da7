//! The sweeper (rules 4, 6, 8): nothing charged is ever stranded.
//!
//! Each run, bounded in items and time, and safe when two runs overlap:
//! 1. jobs still `queued` when their next re-send is due are sent again (`{ "jobId" }` only),
//!    each re-send waiting four times longer than the one before, capped: a message waiting in
//!    a backlog is not lost, so waiting is not failure. A job still queued past the absolute
//!    deadline since it was created fails and is refunded. Deliveries that really fail are the
//!    queue's to count (its redrive policy moves such a message to the dead-letter queue);
//! 2. jobs `processing` longer than the stuck threshold (longer than the consumer's timeout,
//!    so no live consumer holds them) fail and are refunded, settling their open reservations
//!    in the same transaction;
//! 3. reservations left open longer than that are settled from the usage saved on them, or
//!    kept booked when there is none. No model is ever called;
//! 4. account deletions that answered `202 pending` (a job was processing) are finished once
//!    their jobs ended (`privacy::resume_deletions`).
//!
//! Candidates come from sparse indexes keyed by state and time, never a scan; every action is
//! a conditional write that loses cleanly to a concurrent consumer or sweeper.

use std::time::Duration;

use serde::Serialize;

use super::App;
use super::budget::{self, day_of};
use crate::clock::{self, Instant};
use crate::domain::Job;
use crate::domain::{FailureCode, JobFailure, JobState};
use crate::error::Error;
use crate::store::Joined;
use crate::store::budget::SettleOutcome;
use crate::store::jobs::FinishOutcome;
use crate::store::schema::AttemptItem;

/// Pending account deletions one sweep finishes at most (each lists and deletes the user's
/// objects); the rest wait for the next minute.
const DELETIONS_PER_SWEEP: i32 = 10;

/// Bounds of one run.
#[derive(Debug, Clone, Copy)]
pub struct SweepLimits {
    /// Candidates read per phase.
    pub max_items: i32,
    /// Stop starting new actions after this long (the function's timeout is longer).
    pub time_budget: Duration,
}

impl Default for SweepLimits {
    fn default() -> SweepLimits {
        SweepLimits {
            max_items: 100,
            time_budget: Duration::from_secs(40),
        }
    }
}

/// Counts of each action, logged as one `sweep_completed` line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepSummary {
    pub requeued: u64,
    /// Queued jobs failed and refunded past the queued deadline.
    pub deadline_failed: u64,
    pub stuck_failed: u64,
    pub reservations_settled: u64,
    /// Settled at their estimate because no usage was saved.
    pub reservations_kept_booked: u64,
    /// Candidates another consumer or sweeper finished first.
    pub lost_races: u64,
    pub send_failures: u64,
    /// Jobs due a refund (dispatch limit, stuck) whose refund transaction failed: money owed
    /// to a user and not yet given back. The next sweep tries again; emitted as
    /// `RefundsFailed` and alarmed on. Not counted again under `errors`.
    pub refund_failures: u64,
    /// Any other failure (an index query, a requeue, an orphan settlement).
    pub errors: u64,
    /// Account deletions finished this sweep (they had answered `202 pending`).
    pub deletions_finished: u64,
    /// Account deletions still waiting for a processing job.
    pub deletions_pending: u64,
    /// Items DynamoDB read from the sweep indexes.
    pub items_read: u64,
    pub out_of_time: bool,
}

/// One sweep at time `now` (injected: tests move the clock instead of sleeping).
pub async fn sweep(app: &App, now: Instant, limits: SweepLimits) -> SweepSummary {
    let mut run = Run {
        started: std::time::Instant::now(),
        limits,
        summary: SweepSummary::default(),
    };
    let stuck_before = now - Duration::from_secs(app.config.limits.stuck_after_secs);
    // 1. Queued jobs whose next re-send (or deadline) is due: their `sweep_at` is that time.
    run.jobs(app, JobState::Queued, now, now).await;
    // 2. Jobs stuck in processing: their `sweep_at` is the claim.
    run.jobs(app, JobState::Processing, stuck_before, now).await;
    // 3. Reservations a crashed consumer left open (today and yesterday, UTC).
    for day in [day_of(now - Duration::from_secs(86_400)), day_of(now)] {
        run.orphans(app, &day, stuck_before).await;
    }
    // 4. Account deletions left pending by a processing job.
    run.deletions(app).await;
    run.report()
}

/// One sweep in progress: its bounds and its counts.
struct Run {
    started: std::time::Instant,
    limits: SweepLimits,
    summary: SweepSummary,
}

impl Run {
    /// Past the time budget: stop starting new actions (and say so in the summary).
    fn out_of_time(&mut self) -> bool {
        let over = self.started.elapsed() > self.limits.time_budget;
        self.summary.out_of_time |= over;
        over
    }

    /// Acts on the jobs in `state` whose `sweep_at` is at or before `due_before`.
    async fn jobs(&mut self, app: &App, state: JobState, due_before: Instant, now: Instant) {
        let before = clock::format(due_before);
        let (jobs, read) = match app
            .store
            .jobs_due(state, &before, self.limits.max_items)
            .await
        {
            Ok(found) => found,
            Err(e) => {
                self.summary.errors += 1;
                tracing::error!(state = state.as_str(), error = %crate::error::chain(&e), "sweep_query_failed");
                return;
            }
        };
        self.summary.items_read += read;
        for job in jobs {
            if self.out_of_time() {
                break;
            }
            let acted = match state {
                JobState::Queued => requeue(app, &job, now, &mut self.summary).await,
                _ => fail_stuck(app, &job, now, &mut self.summary).await,
            };
            match acted {
                Ok(()) => {}
                Err(SweepError::Refund(e)) => {
                    self.summary.refund_failures += 1;
                    tracing::error!(job_id = %job.job_id, user_id = %job.user_id, credits = job.credits.get(), state = state.as_str(), error = %crate::error::chain(&e), "sweep_refund_failed");
                }
                Err(SweepError::Other(e)) => {
                    self.summary.errors += 1;
                    tracing::error!(job_id = %job.job_id, state = state.as_str(), error = %crate::error::chain(&e), "sweep_action_failed");
                }
            }
        }
    }

    /// Settles the reservations of `day` left open since before `before`.
    async fn orphans(&mut self, app: &App, day: &str, before: Instant) {
        let before = clock::format(before);
        let (attempts, read) = match app
            .store
            .open_attempts(day, &before, self.limits.max_items)
            .await
        {
            Ok(found) => found,
            Err(e) => {
                self.summary.errors += 1;
                tracing::error!(error = %crate::error::chain(&e), "sweep_query_failed");
                return;
            }
        };
        self.summary.items_read += read;
        for candidate in attempts {
            if self.out_of_time() {
                break;
            }
            if let Err(e) = settle_orphan(app, &candidate, &mut self.summary).await {
                self.summary.errors += 1;
                tracing::error!(job_id = %candidate.job_id, error = %crate::error::chain(&e), "sweep_settle_failed");
            }
        }
    }

    /// Finishes the account deletions a processing job left pending.
    async fn deletions(&mut self, app: &App) {
        if self.out_of_time() {
            return;
        }
        match super::privacy::resume_deletions(app, DELETIONS_PER_SWEEP).await {
            Ok(done) => {
                self.summary.deletions_finished += done.finished;
                self.summary.deletions_pending += done.pending;
                self.summary.errors += done.errors;
            }
            Err(e) => {
                self.summary.errors += 1;
                tracing::error!(error = %crate::error::chain(&e), "sweep_query_failed");
            }
        }
    }

    /// The metrics and the one `sweep_completed` line; the counts.
    fn report(self) -> SweepSummary {
        let summary = self.summary;
        crate::adapters::metrics::sweep(
            &[
                ("requeued", summary.requeued),
                ("deadline_failed", summary.deadline_failed),
                ("stuck_failed", summary.stuck_failed),
                ("reservations_settled", summary.reservations_settled),
                ("reservations_kept_booked", summary.reservations_kept_booked),
                ("lost_races", summary.lost_races),
                ("send_failures", summary.send_failures),
                ("deletions_finished", summary.deletions_finished),
                ("errors", summary.errors),
            ],
            summary.stuck_failed,
            summary.refund_failures,
        );
        tracing::info!(
            requeued = summary.requeued,
            deadline_failed = summary.deadline_failed,
            stuck_failed = summary.stuck_failed,
            reservations_settled = summary.reservations_settled,
            reservations_kept_booked = summary.reservations_kept_booked,
            lost_races = summary.lost_races,
            send_failures = summary.send_failures,
            refund_failures = summary.refund_failures,
            deletions_finished = summary.deletions_finished,
            deletions_pending = summary.deletions_pending,
            errors = summary.errors,
            items_read = summary.items_read,
            out_of_time = summary.out_of_time,
            elapsed_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "sweep_completed"
        );
        summary
    }
}

/// Why acting on one job failed: its refund (money owed to a user), or anything else.
enum SweepError {
    Refund(Error),
    Other(Error),
}

impl From<Error> for SweepError {
    fn from(e: Error) -> SweepError {
        SweepError::Other(e)
    }
}

/// A queued job whose `sweep_at` has passed: past its deadline it fails and is refunded (one
/// transaction, from `queued` only, so a consumer's claim or another sweeper wins cleanly);
/// otherwise its dispatch is recorded (conditional on the `sweep_at` read, so of two sweepers
/// only one sends) with the next re-send time, then its message is sent again.
async fn requeue(
    app: &App,
    job: &Job,
    now: Instant,
    summary: &mut SweepSummary,
) -> Result<(), SweepError> {
    let stamp = clock::format(now);
    let limits = &app.config.limits;
    let created = clock::parse(&job.created_at).ok_or_else(|| {
        Error::corrupt(format!(
            "job {} created_at {:?}",
            job.job_id, job.created_at
        ))
    })?;
    let deadline = created + limits.queued_deadline();
    if now >= deadline {
        match app
            .store
            .fail_and_refund(
                job,
                JobState::Queued,
                &JobFailure::new(FailureCode::DispatchLimit),
                &stamp,
                Joined::none(),
            )
            .await
            .map_err(SweepError::Refund)?
        {
            FinishOutcome::Done => {
                summary.deadline_failed += 1;
                crate::adapters::metrics::failed_and_refunded(
                    FailureCode::DispatchLimit,
                    crate::adapters::metrics::RefundSource::Sweeper,
                    job.credits,
                );
                tracing::warn!(job_id = %job.job_id, created_at = %job.created_at, dispatches = job.dispatch.count, "job_queued_deadline_refunded");
            }
            FinishOutcome::NotInState => summary.lost_races += 1,
        }
        return Ok(());
    }
    let dispatches = job.dispatch.count.saturating_add(1);
    // The next visit: the next re-send, or the deadline if that comes first.
    let next = (now + limits.resend_wait(dispatches)).min(deadline);
    if !app
        .store
        .redispatch(job, &stamp, &clock::format(next))
        .await?
    {
        summary.lost_races += 1;
        return Ok(());
    }
    match app.queue.send_job(&job.job_id, job.trace.as_ref()).await {
        Ok(()) => {
            summary.requeued += 1;
            tracing::info!(job_id = %job.job_id, trace_id = job.trace_id(), dispatch = dispatches, next_resend_at = %clock::format(next), "job_requeued");
        }
        Err(e) => {
            // Recorded as a dispatch all the same: the next re-send (or the deadline) follows.
            summary.send_failures += 1;
            tracing::warn!(job_id = %job.job_id, error = %crate::error::chain(&e), "queue_dispatch_deferred");
        }
    }
    Ok(())
}

/// The transaction items that settle a job's open reservations (from saved usage, else at
/// their estimate), read consistently from the table.
async fn settlements(
    app: &App,
    job: &Job,
    now: &str,
    summary: &mut SweepSummary,
) -> Result<Joined, Error> {
    let mut items = Joined::none();
    for attempt in app.store.attempts_of(&job.job_id).await? {
        if attempt.open_day.is_none() {
            continue;
        }
        let cost = budget::settlement_cost(&attempt);
        if cost >= attempt.reserved_micros {
            summary.reservations_kept_booked += 1;
        }
        summary.reservations_settled += 1;
        items = items.and(app.store.settlement(&attempt, cost, "sweeper", now)?);
    }
    Ok(items)
}

async fn fail_stuck(
    app: &App,
    job: &Job,
    now: Instant,
    summary: &mut SweepSummary,
) -> Result<(), SweepError> {
    let stamp = clock::format(now);
    let before = summary.clone();
    // Reading the job's reservations is part of its refund: without them it cannot be made.
    let extra = settlements(app, job, &stamp, summary)
        .await
        .map_err(SweepError::Refund)?;
    let refunded = app
        .store
        .fail_and_refund(
            job,
            JobState::Processing,
            &JobFailure::new(FailureCode::TimedOut),
            &stamp,
            extra,
        )
        .await;
    let refunded = match refunded {
        Ok(r) => r,
        Err(e) => {
            // Nothing was written: the counts taken for its settlements do not stand.
            summary.reservations_settled = before.reservations_settled;
            summary.reservations_kept_booked = before.reservations_kept_booked;
            return Err(SweepError::Refund(e));
        }
    };
    match refunded {
        FinishOutcome::Done => {
            summary.stuck_failed += 1;
            crate::adapters::metrics::failed_and_refunded(
                FailureCode::TimedOut,
                crate::adapters::metrics::RefundSource::Sweeper,
                job.credits,
            );
            tracing::warn!(job_id = %job.job_id, started_at = ?job.started_at(), "job_stuck_refunded");
        }
        FinishOutcome::NotInState => {
            // The consumer finished it after all; its settlements were not ours to make.
            summary.reservations_settled = before.reservations_settled;
            summary.reservations_kept_booked = before.reservations_kept_booked;
            summary.lost_races += 1;
        }
    }
    Ok(())
}

async fn settle_orphan(
    app: &App,
    candidate: &AttemptItem,
    summary: &mut SweepSummary,
) -> Result<(), Error> {
    // The index may lag: decide from the table.
    let Some(attempt) = app
        .store
        .get_attempt(&candidate.job_id, &candidate.attempt)
        .await?
    else {
        return Ok(());
    };
    if attempt.open_day.is_none() {
        return Ok(());
    }
    let booked = budget::settlement_cost(&attempt) >= attempt.reserved_micros;
    match budget::settle(app, &attempt, "sweeper").await? {
        SettleOutcome::Settled => {
            summary.reservations_settled += 1;
            if booked {
                summary.reservations_kept_booked += 1;
            }
        }
        SettleOutcome::AlreadySettled => summary.lost_races += 1,
    }
    Ok(())
}
