//! A repair job's steps (rule 7): find the version the user holds → load → reserve the edit
//! and the comparison together → edit from that version → composite and store the candidate
//! → compare → deliver the better one, settling and updating the lineage on the root in the
//! same transaction.
//!
//! - `improved`: the candidate is delivered and becomes the lineage's current version.
//! - `unchanged` / `worse`: the previous version is delivered again (`retained_previous`),
//!   the candidate is kept for inspection, and repairs on the lineage stop.
//! - Comparison unavailable: the candidate is delivered as `not_verified`; nothing is
//!   retained and repairs do not stop, for lack of evidence either way.

use std::time::Duration;

use image::RgbaImage;

use super::compose::compose;
use super::edit_job::{Made, StoredImage};
use super::inputs::{Inputs, internal_image, prompt_chars, vision_images};
use super::{EDIT_PROMPT_ALLOWANCE_CHARS, Outcome, Run, Sized, Step, Stop};
use crate::adapters::assets::AssetReadError;
use crate::adapters::credentials::Parent;
use crate::adapters::model::{CallKind, ImageRole, ModelClient, Outcome as Compared};
use crate::domain::imaging::DecodeLimits;
use crate::domain::prompts::{self, EditPrompt, VisionPrompt};
use crate::domain::{
    ComparisonOutcome, ComparisonRecord, FailureCode, JobId, JobResult, LeakageRecord,
    ReviewRecord, ReviewVerdict,
};
use crate::domain::{CurrentVersion, Job, RepairOf};
use crate::error::Error;

/// The version a repair starts from.
struct Base {
    root: Job,
    /// The job whose image the user holds (the root or an earlier repair) and its key.
    current_job: JobId,
    current_key: String,
    /// What the root's readiness check saw.
    observation: String,
}

/// The candidate a repair made.
struct Candidate {
    stored: StoredImage,
    leakage: Option<LeakageRecord>,
}

impl Run<'_> {
    pub(super) async fn repair_job(&mut self, repair: &RepairOf) -> Result<Outcome, Stop> {
        let base = self.base(repair).await?;
        let (original, inputs) = self.load().await?;
        let (current, current_png) = self.read_current(&base.current_key, &inputs).await?;
        let spec = &self.job.request;
        let edit_prompt = prompts::edit(spec, &base.observation, Some(&repair.instruction));
        let compare_prompt = prompts::comparison(spec, Some(&repair.instruction));
        self.reserve_edit_compare(&inputs, &edit_prompt, &compare_prompt)
            .await?;

        let edited = self.edit(&inputs, edit_prompt, Some(&current)).await?;
        self.crash(Step::AfterEdit)?;
        // For a brushed area the composite keeps every outside pixel the original's; a pet,
        // person or background repair has no measured box here (the comparison judges spill).
        let (candidate, leakage) = compose(self.job, original, &inputs, &edited.image, None)?;
        // Its credentials name the version it repaired (with that version's manifest) as parent.
        let made = Made {
            edited: &edited,
            region: None,
            parent: Parent::Version { png: &current_png },
        };
        // From here on the candidate at the vision calls' size, as the comparison sees it.
        let (stored, candidate) = self.store_image(candidate, "candidate", made).await?;
        drop(current_png);
        tracing::info!(job_id = %self.job.job_id, "repair_candidate_stored");
        self.crash(Step::AfterStore)?;

        let images = [
            (ImageRole::Current, &current),
            (ImageRole::Candidate, &candidate),
        ];
        let comparison = self
            .compare(&inputs, &compare_prompt, &images, &base)
            .await?;
        self.crash(Step::AfterReview)?;
        let (width, height) = inputs.size;
        let candidate = Candidate { stored, leakage };
        self.deliver_better(base, candidate, comparison, (width, height))
            .await
    }

    /// The lineage's root and the version the user holds now.
    async fn base(&self, repair: &RepairOf) -> Result<Base, Stop> {
        let missing = || Stop::fail(FailureCode::RepairBaseMissing);
        let root = match self.p.app.store.get_job(&repair.root_job_id).await? {
            Some(root) if root.user_id == self.job.user_id => root,
            _ => return Err(missing()),
        };
        let (Some(current_key), Some(result)) = (root.current_asset_key(), root.result()) else {
            return Err(missing());
        };
        Ok(Base {
            current_job: root
                .current
                .as_ref()
                .map_or(root.job_id.clone(), |c| c.job_id.clone()),
            current_key: current_key.to_owned(),
            observation: result.observation.clone().unwrap_or_default(),
            root,
        })
    }

    /// The version the user holds, decoded within the limits of what this system delivers at
    /// the photo's size (not the upload limit: a textured full-size result is larger than any
    /// upload); it must be the photo's size (every delivered image is).
    /// Also returns its bytes, the parent of the candidate's credentials.
    async fn read_current(&self, key: &str, inputs: &Inputs) -> Result<(RgbaImage, Vec<u8>), Stop> {
        let missing = || Stop::fail(FailureCode::RepairBaseMissing);
        let limits = DecodeLimits::for_delivered(inputs.size);
        let bytes = match self.p.app.assets.get_limited(key, limits.max_bytes).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(missing()),
            Err(AssetReadError::TooLarge { bytes, max }) => {
                tracing::warn!(job_id = %self.job.job_id, bytes, max, "repair_base_too_large");
                return Err(missing());
            }
            Err(AssetReadError::Aws(e)) => return Err(Error::from(e).into()),
        };
        let image = limits.decode(&bytes).map_err(internal_image)?.into_rgba8();
        if image.dimensions() != inputs.size {
            return Err(missing());
        }
        Ok((image, bytes))
    }

    /// One reservation for the edit and the comparison.
    async fn reserve_edit_compare(
        &mut self,
        inputs: &Inputs,
        edit: &EditPrompt,
        compare: &VisionPrompt,
    ) -> Result<(), Stop> {
        let (edit_sizes, compare_sizes) = (
            inputs.edit_sizes(&edit.images),
            inputs.vision_sizes(compare),
        );
        let planned = [
            (
                CallKind::Edit,
                Sized {
                    images: &edit_sizes,
                    prompt_chars: EDIT_PROMPT_ALLOWANCE_CHARS,
                },
            ),
            (
                CallKind::Compare,
                Sized {
                    images: &compare_sizes,
                    prompt_chars: prompt_chars(compare),
                },
            ),
        ];
        if let Err(code) = self
            .reserve("01-edit-compare", &planned, self.job.credits)
            .await?
        {
            return Err(Stop::fail(code));
        }
        self.crash(Step::AfterReserve)
    }

    /// Compares the candidate with the version the user holds; a comparer that is down or
    /// unusable is no evidence either way (`not_verified`).
    async fn compare(
        &mut self,
        inputs: &Inputs,
        prompt: &VisionPrompt,
        extra: &[(ImageRole, &RgbaImage)],
        base: &Base,
    ) -> Result<ComparisonRecord, Stop> {
        self.record_stage(crate::domain::Stage::Checking).await;
        let job = self.job;
        let Some(model) = self.model_for(CallKind::Compare, Duration::ZERO) else {
            return Ok(ComparisonRecord {
                outcome: ComparisonOutcome::NotVerified,
                notes: "The comparison was skipped: not enough time was left to run it.".to_owned(),
                compared_with: base.current_job.clone(),
            });
        };
        let images = vision_images(inputs, prompt, extra)?;
        let sizes = inputs.vision_sizes(prompt);
        let sized = Sized {
            images: &sizes,
            prompt_chars: prompt_chars(prompt),
        };
        let ask = |m: ModelClient| {
            let (id, images) = (&job.job_id, &images);
            async move { m.compare(id, prompt, images).await }
        };
        let reply = self
            .paid_call(CallKind::Compare, (model, Duration::ZERO), sized, ask)
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
        Ok(ComparisonRecord {
            outcome,
            notes,
            compared_with: base.current_job.clone(),
        })
    }

    /// Delivers the better version: the candidate when it improved (or no evidence either
    /// way), else the previous version again, stopping repairs on the lineage.
    async fn deliver_better(
        &mut self,
        base: Base,
        candidate: Candidate,
        comparison: ComparisonRecord,
        (width, height): (u32, u32),
    ) -> Result<Outcome, Stop> {
        let keep = comparison.outcome.keeps_candidate();
        // The version delivered again when the candidate is not kept: its own review and
        // rendition stand.
        let previous = if keep {
            None
        } else {
            Some(self.result_of(&base.root, &base.current_job).await?)
        };
        let review = match (comparison.outcome, &previous) {
            (ComparisonOutcome::Improved, _) => ReviewRecord {
                verdict: ReviewVerdict::Passed,
                target_reads_as_medium: None,
                rest_photographic: None,
                style_leaked: None,
                notes: format!("Improved on the previous version. {}", comparison.notes),
            },
            (_, Some(previous)) => previous.review.clone(),
            _ => ReviewRecord::not_verified(&comparison.notes),
        };
        let new_current = keep.then(|| CurrentVersion {
            job_id: self.job.job_id.clone(),
            asset_key: candidate.stored.key.clone(),
        });
        let lineage = self.p.app.store.lineage_after_repair(
            &base.root.job_id,
            &self.job.job_id,
            new_current.as_ref(),
            !keep,
        )?;
        // The kept version's own rendition and thumbnail (stored beside it).
        let signed = Some(candidate.stored.credentials);
        let (asset_key, jpeg_key, thumbnail, candidate_asset_key, credentials) = match previous {
            None => (
                candidate.stored.key,
                Some(candidate.stored.jpeg_key),
                true,
                None,
                (signed, None),
            ),
            Some(previous) => (
                base.current_key,
                previous.jpeg_key,
                previous.thumbnail,
                Some(candidate.stored.key),
                (previous.credentials, signed),
            ),
        };
        let result = JobResult {
            asset_key,
            jpeg_key,
            thumbnail,
            width,
            height,
            review,
            leakage: if keep { candidate.leakage } else { None },
            area: None,
            observation: None,
            comparison: Some(comparison),
            retained_previous: !keep,
            candidate_asset_key,
            adopted_at: None,
            credentials: credentials.0,
            candidate_credentials: credentials.1,
        };
        self.deliver(result, Some(lineage)).await
    }

    /// The result of the version `job` delivered (the root's, or an earlier repair's).
    async fn result_of(&self, root: &Job, job: &JobId) -> Result<JobResult, Stop> {
        let owner = if *job == root.job_id {
            Some(root.clone())
        } else {
            self.p.app.store.get_job(job).await?
        };
        owner
            .and_then(|j| j.result().cloned())
            .ok_or_else(|| Stop::fail(FailureCode::RepairBaseMissing))
    }
}
