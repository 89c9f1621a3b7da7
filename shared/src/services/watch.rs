//! Watching a job (`GET /v1/edits/{id}` with `Prefer: wait=N`, `?wait=N`, `If-None-Match`):
//! which version of a job a client has seen, and waiting until that version changes.
//!
//! A version is a hash of what the job's view shows (the job item and the items of its
//! lineage, without the dispatch bookkeeping), never of the download links, which are signed
//! afresh on every read: two reads of an unchanged job carry the same version.
//!
//! A wait costs reads, not writes: after the first (consistent) read it reads the job again
//! after pauses of 100 ms doubling to 1 s ([`pauses`]: at most 23 more reads in 20 s), by
//! eventually consistent reads (half the read units; a stale answer only delays noticing a
//! change). A change is confirmed by a consistent read before it is answered, so a client never
//! sees a job step back to an older state and the credits and state it shows are the stored
//! truth. A job with repairs also reads its lineage at each look (consistently).
//!
//! A wait happens only when there is something to wait for and room for it: a job that is
//! settled (final, no repair in flight) or a client whose copy is already stale is answered at
//! once, and so is a user who already holds [`WAITS_PER_USER`] waits (counted across every API
//! instance by lease slots in DynamoDB, `store::waits`): one user's flood of long-polls holds
//! at most that many API instances, however many requests it sends.

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::App;
use super::jobs;
use super::lineage::{self, Lineage};
use crate::domain::Job;
use crate::domain::{JobId, ResultFormat, UserId};
use crate::error::Error;
use crate::store::schema::{JobItem, attr};
use crate::store::waits::{Take, WaitSlot};

/// The longest wait: a waiting request must end well inside API Gateway's 30 s integration
/// limit (the API function's timeout is 29 s).
pub const MAX_WAIT_SECS: u64 = 20;

/// Waits one user may hold open at once, across every API instance; more are answered at
/// once. Enough for a phone, a browser tab and the CLI each watching an edit.
pub const WAITS_PER_USER: usize = 4;

/// How long a wait's slot outlives the wait: a wait whose instance dies frees its slot this
/// long after it would have ended anyway.
const LEASE_SLACK_SECS: u64 = 5;

/// Attempts at taking a slot when concurrent waits of the same user take the free ones first:
/// each lost attempt after the first means another slot became held (slots are only freed
/// by waits that end), so after this many every slot is held and the refusal is true.
const TAKE_ATTEMPTS: usize = WAITS_PER_USER + 1;

/// The first pause between two reads of a waiting request; each next one doubles...
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// ...up to this, which bounds how late a change is noticed.
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// How long a read waits for its job to change: 1 to [`MAX_WAIT_SECS`] seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait(u64);

impl Wait {
    /// Exactly `secs`, or `None` outside 1..=[`MAX_WAIT_SECS`] (the `?wait=` parameter).
    pub fn exact(secs: u64) -> Option<Wait> {
        (1..=MAX_WAIT_SECS).contains(&secs).then_some(Wait(secs))
    }

    /// `secs` up to the longest wait (a `Prefer` header is a wish: a longer one gets the
    /// longest); `None` for 0, which asks for no wait.
    pub fn at_most(secs: u64) -> Option<Wait> {
        (secs >= 1).then_some(Wait(secs.min(MAX_WAIT_SECS)))
    }

    pub fn secs(self) -> u64 {
        self.0
    }

    pub fn duration(self) -> Duration {
        Duration::from_secs(self.0)
    }
}

/// The pauses between the reads of a wait of `total`: 100 ms doubling to 1 s, the last one
/// cut so that they add up to `total` (a read follows each).
pub fn pauses(total: Duration) -> impl Iterator<Item = Duration> {
    let mut next = FIRST_PAUSE;
    let mut left = total;
    std::iter::from_fn(move || {
        if left.is_zero() {
            return None;
        }
        let pause = next.min(left);
        left -= pause;
        next = (next * 2).min(LONGEST_PAUSE);
        Some(pause)
    })
}

/// A version of what a job's view shows (see the module's comment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(String);

impl Version {
    /// The entity tag of the job's view with result links in `format`. Weak: two bodies of
    /// one version differ in their freshly signed links.
    pub fn etag(&self, format: ResultFormat) -> String {
        let format = match format {
            ResultFormat::Jpeg => "jpeg",
            ResultFormat::Png => "png",
        };
        format!("W/\"{}-{format}\"", self.0)
    }
}

/// A job as its owner sees it at one moment: the job, its lineage, their version.
#[derive(Debug, Clone)]
pub struct Watched {
    pub job: Job,
    pub lineage: Option<Lineage>,
    pub version: Version,
}

/// Stored attributes a view never shows and that change without anything shown changing.
const NOT_SHOWN: [&str; 4] = [
    attr::DISPATCH_COUNT,
    attr::DISPATCHED_AT,
    attr::SWEEP_STATE,
    attr::SWEEP_AT,
];

impl Watched {
    async fn of(app: &App, job: Job) -> Result<Watched, Error> {
        let lineage = lineage::lineage_of(app, &job).await?;
        let expired =
            jobs::images_expired_at(&job, app.config.limits.result_retention_days).is_some();
        let version = version(&job, lineage.as_ref(), expired);
        Ok(Watched {
            job,
            lineage,
            version,
        })
    }
}

fn version(job: &Job, lineage: Option<&Lineage>, expired: bool) -> Version {
    let mut hash = Sha256::new();
    let items = std::iter::once(job).chain(
        lineage
            .into_iter()
            .flat_map(|l| std::iter::once(&l.root).chain(&l.repairs)),
    );
    for item in items {
        // A `serde_json::Value` map keeps its keys sorted: the same item hashes the same.
        let mut value = serde_json::to_value(JobItem::from(item.clone())).unwrap_or_default();
        if let Some(fields) = value.as_object_mut() {
            for name in NOT_SHOWN {
                fields.remove(name);
            }
        }
        hash.update(value.to_string().as_bytes());
        hash.update([0]);
    }
    hash.update([u8::from(expired)]);
    Version(hex::encode(&hash.finalize()[..16]))
}

impl Watched {
    /// Nothing left to wait for: the job is final and no repair of its lineage is in flight
    /// (what it shows changes only if its owner asks for a repair or deletes its images).
    pub fn is_settled(&self) -> bool {
        let (root, repairs) = match &self.lineage {
            Some(l) => (&l.root, l.repairs.as_slice()),
            None => (&self.job, [].as_slice()),
        };
        self.job.status().is_terminal()
            && root.repair_active.is_none()
            && repairs.iter().all(|r| r.status().is_terminal())
    }
}

/// What became of a wish to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The request waited (up to this long) for a change.
    Applied(Wait),
    /// No wait was asked for.
    NotAsked,
    /// The client's copy was already stale: the job at once.
    Stale,
    /// The job is settled ([`Watched::is_settled`]): nothing to wait for.
    Settled,
    /// The user already holds [`WAITS_PER_USER`] waits: the job at once.
    TooManyWaits,
}

/// Waits up to `wait` for `seen` to change, when it is worth it (see [`Waited`]); `stale`:
/// the client holds an older version than `seen`.
pub async fn wait_if_useful(
    app: &App,
    seen: Watched,
    wait: Option<Wait>,
    stale: bool,
) -> Result<(Watched, Waited), Error> {
    let Some(wait) = wait else {
        return Ok((seen, Waited::NotAsked));
    };
    let not_now = if stale {
        Some(Waited::Stale)
    } else if seen.is_settled() {
        Some(Waited::Settled)
    } else {
        None
    };
    if let Some(why) = not_now {
        tracing::info!(job_id = %seen.job.job_id, reason = ?why, "wait_skipped");
        return Ok((seen, why));
    }
    let user = seen.job.user_id.clone();
    let Some(slot) = take_slot(app, &user, wait).await? else {
        tracing::info!(user_id = %user, job_id = %seen.job.job_id, limit = WAITS_PER_USER, "wait_refused");
        return Ok((seen, Waited::TooManyWaits));
    };
    let result = wait_for_change(app, seen, wait).await;
    // Given back whatever the wait's end; a failed release only holds the slot to its lease end.
    if let Err(e) = app.store.release_wait_slot(&user, &slot).await {
        tracing::warn!(user_id = %user, error = %crate::error::chain(&e), "wait_slot_release_failed");
    }
    Ok((result?, Waited::Applied(wait)))
}

/// Takes one of `user`'s wait slots for `wait` (plus the lease's slack), or `None` when all
/// are held.
async fn take_slot(app: &App, user: &UserId, wait: Wait) -> Result<Option<WaitSlot>, Error> {
    let now = crate::clock::now().unix_timestamp();
    let until = now.saturating_add_unsigned(wait.secs() + LEASE_SLACK_SECS);
    let expires_at = until.saturating_add(86_400);
    let holder = hex::encode(rand::random::<[u8; 12]>());
    let mut index = pick(WAITS_PER_USER);
    for _ in 0..TAKE_ATTEMPTS {
        let slot = WaitSlot {
            index,
            holder: holder.clone(),
        };
        let times = (now, until, expires_at);
        match app
            .store
            .take_wait_slot(user, &slot, WAITS_PER_USER, times)
            .await?
        {
            Take::Taken(slot) => return Ok(Some(slot)),
            Take::Held { free } if free.is_empty() => return Ok(None),
            Take::Held { free } => index = free[pick(free.len())],
        }
    }
    Ok(None)
}

/// A random index below `len` (> 0): concurrent waits spread over the free slots.
fn pick(len: usize) -> usize {
    usize::try_from(rand::random::<u32>()).unwrap_or(0) % len.max(1)
}

/// The caller's job as it is now (a consistent read), or `NotFound` at once (also for
/// another user's job: nobody waits on a job that is not theirs).
pub async fn look(app: &App, user: &UserId, id: &JobId) -> Result<Watched, Error> {
    let job = jobs::get_job(app, user, id).await?;
    Watched::of(app, job).await
}

/// Waits up to `wait` for the job to differ from `seen`; the job as it is then, changed
/// (confirmed by a consistent read) or, at the end of the wait, `seen` itself.
pub async fn wait_for_change(app: &App, seen: Watched, wait: Wait) -> Result<Watched, Error> {
    let deadline = tokio::time::Instant::now() + wait.duration();
    let mut reads = 0_u32;
    for pause in pauses(wait.duration()) {
        // Reads take time too: never sleep past the deadline.
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            break;
        }
        tokio::time::sleep(pause.min(left)).await;
        reads += 1;
        let Some(job) = app.store.peek_job(&seen.job.job_id).await? else {
            continue; // not replicated yet to the replica that answered
        };
        let peeked = Watched::of(app, job).await?;
        if peeked.version == seen.version {
            continue;
        }
        let now = look(app, &seen.job.user_id, &seen.job.job_id).await?;
        // An eventually consistent read may also answer an older version: not a change.
        if now.version != seen.version {
            tracing::info!(job_id = %seen.job.job_id, reads, "wait_changed");
            return Ok(now);
        }
    }
    tracing::info!(job_id = %seen.job.job_id, reads, "wait_timed_out");
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_twenty_second_wait_reads_the_job_at_most_23_more_times() {
        let total = Duration::from_secs(MAX_WAIT_SECS);
        let p: Vec<Duration> = pauses(total).collect();
        assert_eq!(p.len(), 23, "{p:?}");
        assert_eq!(p.iter().sum::<Duration>(), total);
        assert_eq!(
            &p[..5],
            &[100, 200, 400, 800, 1000].map(Duration::from_millis)
        );
        assert!(p.iter().all(|d| *d <= LONGEST_PAUSE), "{p:?}");
    }

    #[test]
    fn a_short_wait_ends_on_time() {
        let p: Vec<Duration> = pauses(Duration::from_secs(2)).collect();
        assert_eq!(
            p,
            [100, 200, 400, 800, 500]
                .map(Duration::from_millis)
                .to_vec()
        );
    }

    fn queued_job() -> Job {
        Job::queued(
            crate::domain::job::fixtures::new_edit(None),
            "2026-12-01T00:00:00.000Z",
            "2026-12-01T00:01:00.000Z",
        )
    }

    #[test]
    fn the_version_changes_with_what_a_job_shows_and_not_with_its_dispatch_bookkeeping() {
        let job = queued_job();
        let seen = version(&job, None, false);
        assert_eq!(version(&job.clone(), None, false), seen, "the same job");

        let mut resent = job.clone();
        resent.dispatch.count += 1;
        resent.state = crate::domain::job::State::Queued {
            resend_at: "2099-01-01T00:00:00.000Z".into(),
        };
        assert_eq!(
            version(&resent, None, false),
            seen,
            "bookkeeping is not shown"
        );

        let mut claimed = job.clone();
        claimed.state = crate::domain::job::State::Processing {
            started_at: "2026-12-01T00:00:01.000Z".into(),
        };
        assert_ne!(version(&claimed, None, false), seen, "a new state");
        assert_ne!(version(&job, None, true), seen, "the images expired");
        assert_ne!(
            seen.etag(ResultFormat::Jpeg),
            seen.etag(ResultFormat::Png),
            "another format is another body"
        );
    }

    #[test]
    fn a_header_wait_is_capped_and_a_parameter_wait_is_checked() {
        let cases = [
            (0, None, None, "zero asks for no wait"),
            (1, Some(1), Some(1), "the shortest"),
            (20, Some(20), Some(20), "the longest"),
            (21, Some(20), None, "longer: the header gets the longest"),
            (u64::MAX, Some(20), None, "far longer"),
        ];
        for (secs, header, param, why) in cases {
            assert_eq!(Wait::at_most(secs).map(Wait::secs), header, "{why}");
            assert_eq!(Wait::exact(secs).map(Wait::secs), param, "{why}");
        }
    }
}
