//! Support's questions, answered from the same tables the functions write: a user's books
//! and recent work, one job's whole history (state, attempts with every call's outcome and
//! cost, its ledger rows), and an operator's refund of a delivered job. `atelier-admin user
//! show`, `job show` and `job refund` only translate.
//!
//! A job is refunded at most once, whoever refunds it: an operator's refund writes the same
//! `refund:job:<id>` row a failure's refund writes, with `attribute_not_exists`, in the
//! transaction that credits the balance (rule 6), so a rerun or a concurrent second refund
//! finds the row and changes nothing.

use super::App;
use crate::clock;
use crate::domain::Job;
use crate::domain::{GrantReason, JobId, JobState, LedgerKind, Micros, Operator, UserId};
use crate::error::Error;
use crate::store::jobs::OperatorRefundOutcome;
use crate::store::schema::{AccountItem, AttemptItem, JobItem, LedgerItem, reference};

/// Why an operator refunded a job: the same rules as a grant's reason (a slug, so two
/// reasons that read the same are the same).
pub type RefundReason = GrantReason;

/// A user as support sees them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct UserView {
    pub account: AccountItem,
    /// Newest first, as stored.
    pub recent_jobs: Vec<JobItem>,
    /// Newest first.
    pub recent_ledger: Vec<LedgerItem>,
}

/// The user's account with their `recent` newest jobs and ledger rows; `None` without an
/// account.
pub async fn user(app: &App, user: &UserId, recent: u16) -> Result<Option<UserView>, Error> {
    let Some(account) = app.store.get_account(user).await? else {
        return Ok(None);
    };
    let (recent_jobs, _) = app.store.jobs_page(user, recent, None).await?;
    let (recent_ledger, _) = app.store.ledger_page(user, recent, None).await?;
    Ok(Some(UserView {
        account,
        recent_jobs: recent_jobs.into_iter().map(JobItem::from).collect(),
        recent_ledger,
    }))
}

/// One job's whole history.
#[derive(Debug, Clone, serde::Serialize)]
pub struct JobHistory {
    /// The job as stored: state, times, dispatches, failure or result.
    pub job: JobItem,
    /// Each reservation with the calls it covered (outcome, usage, cost), oldest first.
    pub attempts: Vec<AttemptItem>,
    /// The job's ledger rows: its debit, and its refund if it was refunded.
    pub ledger: Vec<LedgerItem>,
    /// What the model calls cost, as settled (micro-dollars; unsettled attempts count 0).
    pub settled_cost_micros: i64,
}

/// The job's history; `None` for an unknown job.
pub async fn job(app: &App, id: &JobId) -> Result<Option<JobHistory>, Error> {
    let Some(job) = app.store.get_job(id).await? else {
        return Ok(None);
    };
    let mut attempts = app.store.attempts_of(id).await?;
    attempts.sort_by(|a, b| a.attempt.cmp(&b.attempt));
    let ledger = job_rows(app, &job).await?;
    let settled_cost_micros = attempts
        .iter()
        .filter_map(|a| a.settled_cost_micros.map(Micros::get))
        .sum();
    Ok(Some(JobHistory {
        job: JobItem::from(job),
        attempts,
        ledger,
        settled_cost_micros,
    }))
}

/// The owner's ledger rows that name `job` (a consistent read of the owner's ledger).
async fn job_rows(app: &App, job: &Job) -> Result<Vec<LedgerItem>, Error> {
    let mut rows: Vec<LedgerItem> = app
        .store
        .ledger_rows(&job.user_id)
        .await?
        .into_iter()
        .filter(|r| r.job_id.as_ref() == Some(&job.job_id))
        .collect();
    rows.sort_by(|a, b| a.at_ref.cmp(&b.at_ref));
    Ok(rows)
}

/// An operator's refund.
#[derive(Debug, Clone)]
pub struct RefundRequest {
    pub reason: RefundReason,
    pub operator: Operator,
    /// Required to refund a delivered job (the only kind not refunded already).
    pub force: bool,
}

/// What an operator's refund did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundResult {
    /// The job's credits went back to its owner.
    Refunded {
        user: UserId,
        credits: i64,
    },
    /// Refunded before (this row): nothing changed.
    AlreadyRefunded(Box<LedgerItem>),
    /// Queued or processing: the pipeline will deliver or refund it; nothing changed.
    InFlight(JobState),
    /// Delivered: refunding it takes `force`; nothing changed.
    Delivered,
    JobMissing,
    AccountMissing,
}

/// Refunds a job for an operator, once ever per job (see the module doc).
pub async fn refund(app: &App, id: &JobId, req: &RefundRequest) -> Result<RefundResult, Error> {
    let Some(job) = app.store.get_job(id).await? else {
        return Ok(RefundResult::JobMissing);
    };
    let refunded = job_rows(app, &job)
        .await?
        .into_iter()
        .find(|r| r.kind == LedgerKind::Refund);
    if let Some(row) = refunded {
        return Ok(RefundResult::AlreadyRefunded(Box::new(row)));
    }
    match job.status() {
        JobState::Queued | JobState::Processing => return Ok(RefundResult::InFlight(job.status())),
        JobState::Succeeded if !req.force => return Ok(RefundResult::Delivered),
        JobState::Succeeded => {}
        JobState::Failed | JobState::Canceled => {
            return Err(Error::corrupt(format!(
                "job {id} is {} without its refund row",
                job.status().as_str()
            )));
        }
    }
    let mut row = LedgerItem::new(
        &job.user_id,
        reference::refund(&job.job_id),
        job.credits,
        LedgerKind::Refund,
        &clock::format(clock::now()),
    );
    row.job_id = Some(job.job_id.clone());
    row.reason = Some(req.reason.as_str().to_owned());
    row.operator = Some(req.operator.as_str().to_owned());
    Ok(match app.store.refund_delivered(&job, &row).await? {
        OperatorRefundOutcome::Refunded => {
            tracing::info!(job_id = %job.job_id, user_id = %job.user_id, credits = job.credits.get(), operator = %req.operator.as_str(), reason = %req.reason, "job_refunded_by_operator");
            crate::adapters::metrics::refunded(
                crate::adapters::metrics::RefundSource::Operator,
                job.credits,
            );
            RefundResult::Refunded {
                user: job.user_id.clone(),
                credits: job.credits.get(),
            }
        }
        OperatorRefundOutcome::Exists(row) => RefundResult::AlreadyRefunded(row),
        // Finished jobs never change state; only a foreign write gets here.
        OperatorRefundOutcome::NotDelivered => RefundResult::InFlight(job.status()),
        OperatorRefundOutcome::AccountMissing => RefundResult::AccountMissing,
    })
}
