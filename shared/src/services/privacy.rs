//! People's photos are theirs: deleting one upload, one edit's images, or the whole account,
//! and exporting what is kept. Deletion never touches money: balances, ledger rows and a job's
//! money fields and states stay (the ledger is the financial record, referring only to ids).
//!
//! Every deletion marks first and deletes objects second, and every step is idempotent, so a
//! deletion that dies half way is finished by running it again.

use super::App;
use crate::adapters::assets::Assets;
use crate::clock;
use crate::domain::Job;
use crate::domain::{AssetId, AssetKind, EmailStatus, JobId, JobState, ResultFormat, UserId};
use crate::error::Error;
use crate::store::accounts::Opening;
use crate::store::jobs::FinishOutcome;
use crate::store::schema::{AccountItem, LedgerItem};

/// Deletes the caller's upload `id`. Refused while a queued or processing job of theirs
/// reads it; an id that names no upload of theirs is `NotFound`.
pub async fn delete_asset(app: &App, user: &UserId, id: &AssetId) -> Result<(), Error> {
    let mut key = None;
    for kind in AssetKind::ALL {
        let candidate = Assets::upload_key(user, kind, id);
        if app.assets.exists(&candidate).await? {
            key = Some(candidate);
            break;
        }
    }
    let key = key.ok_or(Error::NotFound { what: "asset" })?;
    let unfinished = app.store.unfinished_jobs(user).await?;
    if let Some(job) = unfinished
        .iter()
        .find(|j| j.request.assets().iter().any(|(_, _, a)| *a == id))
    {
        return Err(Error::AssetInUse {
            job_id: job.job_id.clone(),
            state: job.status(),
        });
    }
    app.assets.delete(&key).await?;
    tracing::info!(user_id = %user, asset_id = %id, "asset_deleted");
    Ok(())
}

/// Deletes the images of the caller's finished edit `id` and of its whole lineage (the
/// original, mask and style reference uploads, the kept inputs, the result, every repair's
/// result and candidate). The jobs stay, marked, with their money fields and states; the
/// edit can no longer be repaired. Returns the job `id` as it now stands.
pub async fn delete_edit_images(app: &App, user: &UserId, id: &JobId) -> Result<Job, Error> {
    let job = super::jobs::get_job(app, user, id).await?;
    let root = match &job.repair {
        None => job.clone(),
        Some(r) => super::jobs::get_job(app, user, &r.root_job_id).await?,
    };
    let mut lineage = vec![root.clone()];
    for repair in &root.repair_jobs {
        lineage.push(super::jobs::get_job(app, user, repair).await?);
    }
    let now = clock::format(clock::now());
    for j in &lineage {
        if !j.status().is_terminal() || root.repair_active.is_some() {
            return Err(Error::ImagesInUse {
                state: unfinished_state(&lineage),
            });
        }
        if !app.store.mark_images_deleted(j, &now).await? {
            // A repair was submitted since the read: it runs first.
            return Err(Error::ImagesInUse {
                state: JobState::Queued,
            });
        }
    }
    for (_, kind, asset) in root.request.assets() {
        app.assets
            .delete(&Assets::upload_key(user, kind, asset))
            .await?;
    }
    let mut objects = 0;
    for j in &lineage {
        objects += app
            .assets
            .delete_prefix(&Assets::job_prefix(user, &j.job_id))
            .await?;
    }
    tracing::info!(user_id = %user, job_id = %root.job_id, jobs = lineage.len(), objects, "edit_images_deleted");
    super::jobs::get_job(app, user, id).await
}

/// The state to report for a lineage that is not finished: its first unfinished job's.
fn unfinished_state(lineage: &[Job]) -> JobState {
    lineage
        .iter()
        .map(|j| j.status())
        .find(|s| !s.is_terminal())
        .unwrap_or(JobState::Queued)
}

/// How an account deletion ended.
#[derive(Debug, Clone)]
pub enum AccountDeletion {
    /// Every image gone, every job's personal text cleared; the account closed for good.
    Finished {
        account: Box<AccountItem>,
        canceled: usize,
        redacted: usize,
        objects: usize,
    },
    /// The account is closed and its queued jobs canceled and refunded, but some jobs are
    /// still processing (a consumer is paying for their calls): run the deletion again once
    /// they finish (at most the consumer's timeout; the sweeper fails them after 15 minutes).
    Pending { processing: usize, canceled: usize },
}

/// Who asked for a deletion; recorded on the account as `closed_by`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeletedBy {
    User,
    Operator(crate::domain::Operator),
}

impl DeletedBy {
    fn as_record(&self) -> String {
        match self {
            DeletedBy::User => "user".to_owned(),
            DeletedBy::Operator(o) => format!("operator:{}", o.as_str()),
        }
    }
}

/// Deletes `user`'s account: closes it (no new uploads or submits, ever; a new token for the
/// same subject finds it closed), then finishes the deletion ([`finish_deletion`]).
/// Idempotent: a rerun after a crash at any point finishes the work.
pub async fn delete_account(
    app: &App,
    user: &UserId,
    by: &DeletedBy,
) -> Result<AccountDeletion, Error> {
    close(app, user, by).await?;
    finish_deletion(app, user).await
}

/// Finishes the deletion of the closed account of `user`: cancels and refunds queued jobs
/// (one transaction each, as a cancel does), waits for processing ones (answering
/// [`AccountDeletion::Pending`]: the sweeper comes back, [`resume_deletions`]), clears every
/// job's personal text, deletes every object under the user's prefixes, and records that it
/// finished.
///
/// The jobs are found without an index: the ledger's debit rows, read consistently, name every
/// job ever created (each in one transaction with its row), and the close commits before the
/// read, so no job can be created after it. A job committed an instant before the close is
/// canceled or waited for like any other, never missed by a lagging index.
async fn finish_deletion(app: &App, user: &UserId) -> Result<AccountDeletion, Error> {
    let (canceled, processing) = settle_unfinished(app, user).await?;
    if processing > 0 {
        tracing::info!(user_id = %user, processing, canceled, "account_deletion_pending");
        return Ok(AccountDeletion::Pending {
            processing,
            canceled,
        });
    }
    let redacted = redact_jobs(app, user).await?;
    let objects = delete_objects(app, user, None).await?;
    // The close committed first, so no device can be registered after this read.
    let devices = crate::services::devices::remove_all(app, user).await?;
    let now = clock::format(clock::now());
    app.store.mark_account_deleted(user, &now).await?;
    let account = read_account(app, user).await?;
    tracing::info!(user_id = %user, canceled, redacted, objects, devices, closed_by = account.closed_by.as_deref().unwrap_or(""), "account_deleted");
    Ok(AccountDeletion::Finished {
        account: Box::new(account),
        canceled,
        redacted,
        objects,
    })
}

/// What one round of [`resume_deletions`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResumedDeletions {
    pub finished: u64,
    /// Still waiting for a processing job.
    pub pending: u64,
    pub errors: u64,
}

/// The sweeper's round: finishes up to `limit` deletions that answered `202 pending` (closed
/// accounts not yet deleted, from the sparse index), each read consistently first. A failure
/// is logged and left to the next round.
pub async fn resume_deletions(app: &App, limit: i32) -> Result<ResumedDeletions, Error> {
    let mut done = ResumedDeletions::default();
    for user in app.store.accounts_deleting(limit).await? {
        let account = read_account(app, &user).await?;
        if account.closed_at.is_none() || account.deleted_at.is_some() {
            continue; // the index lags the table: already finished
        }
        match finish_deletion(app, &user).await {
            Ok(AccountDeletion::Finished { .. }) => done.finished += 1,
            Ok(AccountDeletion::Pending { .. }) => done.pending += 1,
            Err(e) => {
                done.errors += 1;
                tracing::error!(user_id = %user, error = %crate::error::chain(&e), "account_deletion_resume_failed");
            }
        }
    }
    Ok(done)
}

/// Fault tests only: an account deletion that "dies" after deleting `objects` objects (every
/// step before it done), as a killed process would leave it.
#[cfg(feature = "fault-injection")]
pub async fn delete_account_dying_after(
    app: &App,
    user: &UserId,
    by: &DeletedBy,
    objects: usize,
) -> Result<(), Error> {
    close(app, user, by).await?;
    settle_unfinished(app, user).await?;
    redact_jobs(app, user).await?;
    delete_objects(app, user, Some(objects)).await?;
    tracing::warn!(user_id = %user, objects, "simulated_crash");
    Ok(())
}

/// Closes the account; a user without one gets a closed one (at 0, no grant), so the
/// closed item is the record a later token finds.
async fn close(app: &App, user: &UserId, by: &DeletedBy) -> Result<AccountItem, Error> {
    if app.store.get_account(user).await?.is_none() {
        app.store
            .create_account(user, Opening::Pending, &clock::format(clock::now()))
            .await?;
    }
    let account = app
        .store
        .close_account(user, &by.as_record(), &clock::format(clock::now()))
        .await?;
    tracing::info!(user_id = %user, closed_by = account.closed_by.as_deref().unwrap_or(""), "account_closed");
    Ok(account)
}

/// Every job of the user, each read consistently, found by the ledger's debit rows (see
/// [`finish_deletion`]).
async fn every_job(app: &App, user: &UserId) -> Result<Vec<Job>, Error> {
    let mut jobs = Vec::new();
    for id in app.store.debited_job_ids(user).await? {
        match app.store.get_job(&id).await? {
            Some(job) if job.user_id == *user => jobs.push(job),
            _ => {
                return Err(Error::corrupt(format!(
                    "the debit of job {id} names no job of user {user}"
                )));
            }
        }
    }
    Ok(jobs)
}

/// Cancels and refunds every queued job; returns (canceled, still unfinished). A job claimed
/// between the read and the cancel is counted as unfinished.
async fn settle_unfinished(app: &App, user: &UserId) -> Result<(usize, usize), Error> {
    let mut canceled = 0;
    let mut unfinished = 0;
    for job in every_job(app, user).await? {
        if job.status() == JobState::Queued {
            let now = clock::format(clock::now());
            if app.store.cancel_and_refund(&job, &now).await? == FinishOutcome::Done {
                tracing::info!(job_id = %job.job_id, credits = job.credits.get(), "job_canceled_refunded");
                canceled += 1;
                continue;
            }
        }
        if !job.status().is_terminal() {
            unfinished += 1;
        }
    }
    Ok((canceled, unfinished))
}

/// Clears the personal text of every job of the user; returns how many changed. Jobs
/// already redacted are left alone.
async fn redact_jobs(app: &App, user: &UserId) -> Result<usize, Error> {
    let now = clock::format(clock::now());
    let mut redacted = 0;
    for job in every_job(app, user).await? {
        let clean = job.redacted(&now);
        if clean == job {
            continue;
        }
        if !app.store.put_redacted(&clean).await? {
            return Err(Error::corrupt(format!(
                "job {} changed while its account was being deleted",
                job.job_id
            )));
        }
        redacted += 1;
    }
    Ok(redacted)
}

/// Deletes every object under the user's prefixes (all of them, or the first `limit` in
/// fault tests); returns how many.
async fn delete_objects(app: &App, user: &UserId, limit: Option<usize>) -> Result<usize, Error> {
    let mut deleted = 0;
    for prefix in Assets::user_prefixes(user) {
        match limit {
            None => deleted += app.assets.delete_prefix(&prefix).await?,
            Some(limit) => {
                for key in app.assets.list_page(&prefix).await? {
                    if deleted >= limit {
                        return Ok(deleted);
                    }
                    app.assets.delete(&key).await?;
                    deleted += 1;
                }
            }
        }
    }
    Ok(deleted)
}

async fn read_account(app: &App, user: &UserId) -> Result<AccountItem, Error> {
    app.store
        .get_account(user)
        .await?
        .ok_or(Error::NotFound { what: "account" })
}

/// One page of a user's export.
#[derive(Debug, Clone)]
pub struct ExportPage {
    /// The account, on the first page only.
    pub account: Option<AccountItem>,
    pub ledger: Vec<LedgerItem>,
    /// Jobs with short-lived links to their images that still exist.
    pub jobs: Vec<(Job, Option<super::jobs::ResultLinks>)>,
    pub next_cursor: Option<String>,
}

/// The export's cursor: the ledger's pages first, then the jobs'. Opaque to clients.
const LEDGER_PART: &str = "l.";
const JOBS_PART: &str = "j.";

/// One page of the export: the account (first page), then the ledger, then the jobs, `limit`
/// rows a page, each part paged by its own table's cursor.
pub async fn export_page(
    app: &App,
    user: &UserId,
    email: EmailStatus,
    limit: u16,
    cursor: Option<&str>,
) -> Result<ExportPage, Error> {
    let account = super::accounts::ensure_account(app, user, email).await?;
    let mut page = ExportPage {
        account: None,
        ledger: Vec::new(),
        jobs: Vec::new(),
        next_cursor: None,
    };
    let (part, inner) = match cursor {
        None => {
            page.account = Some(account);
            (LEDGER_PART, None)
        }
        Some(c) if c.starts_with(LEDGER_PART) => (LEDGER_PART, Some(&c[LEDGER_PART.len()..])),
        Some(c) if c.starts_with(JOBS_PART) => (JOBS_PART, Some(&c[JOBS_PART.len()..])),
        Some(_) => return Err(Error::InvalidCursor),
    };
    let inner = inner.filter(|c| !c.is_empty());
    if part == LEDGER_PART {
        let (rows, next) = app.store.ledger_page(user, limit, inner).await?;
        page.ledger = rows;
        page.next_cursor = Some(match next {
            Some(n) => format!("{LEDGER_PART}{n}"),
            None => JOBS_PART.to_owned(),
        });
        return Ok(page);
    }
    let (jobs, next) = app.store.jobs_page(user, limit, inner).await?;
    for job in jobs {
        // An export hands out the lossless master, not the phone-sized copy.
        let links = super::jobs::result_links(app, &job, ResultFormat::Png).await?;
        page.jobs.push((job, links));
    }
    page.next_cursor = next.map(|n| format!("{JOBS_PART}{n}"));
    Ok(page)
}
