//! Reading a lineage: an original edit (the root) and the repairs of it, as their owner sees
//! them. Read-only; the lineage's conditional writes are in `store::lineage`. A root that is
//! gone or another user's is no lineage at all.

use super::App;
use crate::domain::Job;
use crate::error::Error;

/// A lineage as its owner sees it: the root edit, its repairs oldest first.
#[derive(Debug, Clone)]
pub struct Lineage {
    pub root: Job,
    pub repairs: Vec<Job>,
}

/// The lineage a job belongs to (the root and every repair), or `None` for an edit that was
/// never repaired.
pub async fn lineage_of(app: &App, job: &Job) -> Result<Option<Lineage>, Error> {
    let root = match &job.repair {
        None if job.repair_jobs.is_empty() => return Ok(None),
        None => job.clone(),
        Some(r) => match app.store.get_job(&r.root_job_id).await? {
            Some(root) if root.user_id == job.user_id => root,
            _ => return Ok(None),
        },
    };
    let repairs = app.store.get_jobs(&root.repair_jobs).await?;
    Ok(Some(Lineage { root, repairs }))
}
