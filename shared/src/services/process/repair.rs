//! Processing a repair (rule 7): edit from the version the user holds, compare the candidate
//! with it, keep the better one. One reservation covers the edit and the comparison; it is
//! settled in the delivery transaction, which also updates the lineage on the root job.
//!
//! - `improved`: the candidate is delivered and becomes the lineage's current version.
//! - `unchanged` / `worse`: the previous version is delivered again (`retained_previous`),
//!   the candidate is kept for inspection, and repairs on the lineage stop.
//! - Comparison unavailable: the candidate is delivered as `not_verified`; nothing is
//!   retained and repairs do not stop, for lack of evidence either way.

use image::RgbaImage;

use super::{EDIT_MAX_SIDE, EDIT_PROMPT_ALLOWANCE_CHARS, failure, internal_image, not_verified};
use super::{Inputs, Outcome, Processor, Step, Stop, budget_paused, call_outcome, compose};
use crate::assets::{AssetReadError, Assets};
use crate::clock;
use crate::domain::AssetKind;
use crate::error::Error;
use crate::imaging::{self, DecodeLimits};
use crate::model::{CallKind, ImageInput, ImageRole, Outcome as Compared, pricing};
use crate::prompts;
use crate::services::budget::{self, Reservation, ReserveRequest};
use crate::store::jobs::FinishOutcome;
use crate::store::schema::{
    AttemptItem, ComparisonOutcome, ComparisonRecord, CurrentVersion, JobItem, JobResult, RepairOf,
    ReviewRecord, ReviewVerdict,
};

fn base_missing() -> Stop {
    Stop::Fail(failure(
        "REPAIR_BASE_MISSING",
        "The version to repair is no longer available. Your credits were refunded.",
    ))
}

impl Processor {
    pub(super) async fn run_repair(
        &self,
        job: &JobItem,
        repair: &RepairOf,
        open: &mut Option<AttemptItem>,
    ) -> Result<Outcome, Stop> {
        let root = match self.app.store.get_job(&repair.root_job_id).await? {
            Some(root) if root.user_id == job.user_id => root,
            _ => return Err(base_missing()),
        };
        let (Some(current_key), Some(root_result)) = (
            root.current_asset_key().map(str::to_owned),
            root.result.as_ref(),
        ) else {
            return Err(base_missing());
        };
        let current_job = root
            .current
            .as_ref()
            .map_or(root.job_id.clone(), |c| c.job_id.clone());
        let observation = root_result.observation.clone().unwrap_or_default();
        let spec = &job.request;
        let inputs = self.load(job).await?;
        let current = self.read_current(&current_key, &inputs).await?;

        // One reservation for the edit and the comparison.
        let edit_prompt = prompts::edit(spec, &observation, Some(&repair.instruction));
        let compare_prompt = prompts::comparison(spec, Some(&repair.instruction));
        let (ow, oh) = inputs.original.dimensions();
        let quality = self.model.config().quality;
        let edit_dims: Vec<(u32, u32)> = edit_prompt
            .images
            .iter()
            .map(|role| match (role, &inputs.reference) {
                (ImageRole::StyleReference, Some(r)) => {
                    imaging::fit_within(r.dimensions(), EDIT_MAX_SIDE)
                }
                _ => imaging::fit_within((ow, oh), EDIT_MAX_SIDE),
            })
            .collect();
        let vision_dims: Vec<(u32, u32)> = compare_prompt
            .images
            .iter()
            .map(|_| imaging::fit_within((ow, oh), imaging::VISION_MAX_SIDE))
            .collect();
        let estimate = pricing::estimate_micros(
            CallKind::Edit,
            &edit_dims,
            EDIT_PROMPT_ALLOWANCE_CHARS,
            quality,
        ) + pricing::estimate_micros(
            CallKind::Compare,
            &vision_dims,
            compare_prompt.system.len() + compare_prompt.text.len(),
            quality,
        );
        let reservation = budget::reserve(
            &self.app,
            &ReserveRequest {
                job: &job.job_id,
                attempt: "01-edit-compare",
                planned: &["edit", "compare"],
                estimate_micros: i64::try_from(estimate).unwrap_or(i64::MAX),
                sale_credits: job.credits,
                price_table: pricing::PRICE_TABLE_VERSION,
            },
            clock::now(),
        )
        .await?;
        let Reservation::Granted(attempt) = reservation else {
            return Err(Stop::Fail(budget_paused()));
        };
        *open = Some(*attempt);
        self.crash(Step::AfterReserve)?;

        let edited = self
            .call_edit(job, open, edit_prompt, &inputs, Some(&current))
            .await?;
        self.crash(Step::AfterEdit)?;

        // For a brushed area the composite keeps every outside pixel the original's; a pet,
        // person or background repair has no measured box here (the comparison judges spill).
        let (candidate, leakage) = compose(job, &inputs, &edited, None)?;
        let candidate_key = Assets::result_key(&job.user_id, &job.job_id, "candidate");
        let candidate_png = imaging::encode_png(&candidate).map_err(internal_image)?;
        self.app
            .assets
            .put_png(&candidate_key, candidate_png)
            .await
            .map_err(Error::from)?;
        tracing::info!(job_id = %job.job_id, "repair_candidate_stored");
        self.crash(Step::AfterStore)?;

        // Compare with the version the user holds.
        let small = |img: &RgbaImage| {
            imaging::encode_png(&imaging::downscale(img, imaging::VISION_MAX_SIDE))
                .map_err(internal_image)
        };
        let mut images = Vec::new();
        for role in &compare_prompt.images {
            let png = match role {
                ImageRole::Original => small(&inputs.original)?,
                ImageRole::Current => small(&current)?,
                ImageRole::Candidate => small(&candidate)?,
                ImageRole::Mask => match &inputs.mask {
                    Some(m) => small(&m.to_visual())?,
                    None => return Err(Error::corrupt("comparison wants a mask").into()),
                },
                _ => return Err(Error::corrupt(format!("unexpected role {role:?}")).into()),
            };
            images.push(ImageInput::png(*role, png));
        }
        let reply = self
            .model
            .compare(&job.job_id, &compare_prompt, &images)
            .await;
        let usage = match &reply {
            Ok(r) => r.usage,
            Err(e) => e.usage().copied(),
        };
        self.record(
            open,
            "compare",
            CallKind::Compare,
            call_outcome(reply.as_ref().err()),
            usage,
            reply.as_ref().err(),
        )
        .await?;
        let (outcome, notes) = match reply {
            Ok(r) => (
                match r.answer.outcome {
                    Compared::Improved => ComparisonOutcome::Improved,
                    Compared::Unchanged => ComparisonOutcome::Unchanged,
                    Compared::Worse => ComparisonOutcome::Worse,
                },
                r.answer.notes,
            ),
            Err(e) => {
                tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "comparison_unavailable");
                (
                    ComparisonOutcome::NotVerified,
                    "The reviewer was unavailable, so this repair is not verified.".to_owned(),
                )
            }
        };
        self.crash(Step::AfterReview)?;

        // Keep the better version.
        let keep_candidate = matches!(
            outcome,
            ComparisonOutcome::Improved | ComparisonOutcome::NotVerified
        );
        let review = match outcome {
            ComparisonOutcome::Improved => ReviewRecord {
                verdict: ReviewVerdict::Passed,
                target_reads_as_medium: None,
                rest_photographic: None,
                style_leaked: None,
                notes: format!("Improved on the previous version. {notes}"),
            },
            ComparisonOutcome::NotVerified => not_verified(&notes),
            // The delivered image is the previous one: its own review stands.
            ComparisonOutcome::Unchanged | ComparisonOutcome::Worse => {
                self.review_of(&root, &current_job).await?
            }
        };
        let now = clock::format(clock::now());
        let mut extra = match open.take() {
            Some(attempt) => self.app.store.settle_items(
                &attempt,
                budget::settlement_cost(&attempt),
                "consumer",
                &now,
            )?,
            None => Vec::new(),
        };
        let new_current = keep_candidate.then(|| CurrentVersion {
            job_id: job.job_id.clone(),
            asset_key: candidate_key.clone(),
        });
        extra.push(self.app.store.lineage_after_repair(
            &root.job_id,
            &job.job_id,
            new_current.as_ref(),
            !keep_candidate,
        )?);
        let verdict = review.verdict;
        let result = JobResult {
            asset_key: if keep_candidate {
                candidate_key.clone()
            } else {
                current_key
            },
            width: ow,
            height: oh,
            review,
            leakage: if keep_candidate { leakage } else { None },
            observation: None,
            comparison: Some(ComparisonRecord {
                outcome,
                notes,
                compared_with: current_job,
            }),
            retained_previous: !keep_candidate,
            candidate_asset_key: (!keep_candidate).then_some(candidate_key),
        };
        match self.app.store.deliver(job, &result, &now, extra).await? {
            FinishOutcome::Done => {
                tracing::info!(job_id = %job.job_id, outcome = ?outcome, retained_previous = !keep_candidate, "repair_delivered");
                Ok(Outcome::Delivered { verdict })
            }
            FinishOutcome::NotInState => {
                tracing::warn!(job_id = %job.job_id, "job_finished_elsewhere");
                Ok(Outcome::LostRace)
            }
        }
    }

    /// The version the user holds, decoded within the photo's limits; it must be the photo's
    /// size (every delivered image is).
    async fn read_current(&self, key: &str, inputs: &Inputs) -> Result<RgbaImage, Stop> {
        let limits = DecodeLimits::for_asset(AssetKind::Original);
        let bytes = match self.app.assets.get_limited(key, limits.max_bytes).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) | Err(AssetReadError::TooLarge { .. }) => return Err(base_missing()),
            Err(AssetReadError::Aws(e)) => return Err(Error::from(e).into()),
        };
        let image = limits.decode(&bytes).map_err(internal_image)?.to_rgba8();
        if image.dimensions() != inputs.original.dimensions() {
            return Err(base_missing());
        }
        Ok(image)
    }

    /// The review of the version `job` delivered (the root's, or an earlier repair's).
    async fn review_of(
        &self,
        root: &JobItem,
        job: &crate::domain::JobId,
    ) -> Result<ReviewRecord, Stop> {
        let owner = if *job == root.job_id {
            Some(root.clone())
        } else {
            self.app.store.get_job(job).await?
        };
        owner
            .and_then(|j| j.result)
            .map(|r| r.review)
            .ok_or_else(base_missing)
    }
}
