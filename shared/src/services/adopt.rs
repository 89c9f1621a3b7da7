//! Choosing a repair's rejected candidate: the comparison kept the previous version, and the
//! owner prefers the candidate anyway. Free (no model call, no charge, no ledger row) and
//! idempotent: the repair then delivers the candidate and the lineage's current version is
//! it. Only the owner's repair, only a candidate that was not kept, only while the lineage
//! still holds the version the candidate was compared with.

use super::App;
use crate::adapters::assets::Assets;
use crate::clock;
use crate::domain::{Job, JobId, NotAdoptable, ResultFormat, UserId};
use crate::error::Error;

/// Makes the caller's repair `id` deliver its candidate; returns the repair as it now stands.
/// Choosing it again changes nothing and answers the same.
pub async fn adopt_candidate(app: &App, user: &UserId, id: &JobId) -> Result<Job, Error> {
    let repair = super::jobs::get_job(app, user, id).await?;
    let Some(result) = repair.result() else {
        return Err(refused(NotAdoptable::NoRejectedCandidate));
    };
    if result.adopted_at.is_some() {
        return Ok(repair);
    }
    let (Some(_), Some(comparison)) = (&repair.repair, &result.comparison) else {
        return Err(refused(NotAdoptable::NoRejectedCandidate));
    };
    if repair.images_deleted_at.is_some() {
        return Err(refused(NotAdoptable::LineageMoved));
    }
    let at = clock::format(clock::now());
    let jpeg = Assets::result_key(user, id, "candidate", ResultFormat::Jpeg);
    let adopted = result
        .with_candidate_adopted(jpeg, &at)
        .ok_or(refused(NotAdoptable::NoRejectedCandidate))?;
    let compared_with = comparison.compared_with.clone();
    if app
        .store
        .adopt_candidate(&repair, &adopted, &compared_with, &at)
        .await?
    {
        tracing::info!(job_id = %id, root = %repair.root_id(), "repair_candidate_adopted");
    }
    // Read back: a concurrent choice may have won (then this one answers the same), or the
    // lineage moved on since it was read.
    let now = super::jobs::get_job(app, user, id).await?;
    match now.result() {
        Some(r) if r.adopted_at.is_some() => Ok(now),
        _ => Err(refused(NotAdoptable::LineageMoved)),
    }
}

fn refused(why: NotAdoptable) -> Error {
    Error::CandidateNotAdoptable { why }
}
