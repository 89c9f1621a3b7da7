//! An edit job's steps: load → check (reserving the check and the edit together) → edit →
//! composite and store → review (its own reservation) → deliver. The edit step is shared
//! with repairs.

use std::time::Duration;

use image::RgbaImage;

use super::compose::compose;
use super::inputs::{Inputs, edit_call, internal_image, prompt_chars, vision_images};
use super::memory::{MemoryKey, Remembered, area_of};
use super::{EDIT_PROMPT_ALLOWANCE_CHARS, Outcome, Run, Sized, Step, Stop};
use crate::adapters::assets::Assets;
use crate::adapters::credentials::{Claim, Parent};
use crate::adapters::model::{CallKind, ImageRole, ModelClient, Readiness, Review, Verdict};
use crate::clock;
use crate::domain::catalogue::Model;
use crate::domain::imaging;
use crate::domain::prompts::{self, EditPrompt};
use crate::domain::{
    AreaBox, Candidate, ContentCredentials, Credits, FailureCode, JobFailure, JobResult,
    ResultFormat, ReviewRecord, ReviewVerdict, Stage,
};
use crate::error::Error;

/// Where an image of a job was stored: its master, its download rendition and its thumbnail;
/// and what the credentials signed into the first two say.
pub(super) struct StoredImage {
    pub key: String,
    pub jpeg_key: String,
    pub thumb_key: String,
    pub credentials: ContentCredentials,
}

/// The provider's answer to the edit: its image as encoded, and the model that drew it (the
/// one a failover reached).
pub(super) struct Edited {
    pub image: Vec<u8>,
    pub model: &'static Model,
}

/// What an image was made from, for its content credentials.
pub(super) struct Made<'a> {
    pub edited: &'a Edited,
    /// The redrawn box, when the readiness check measured one.
    pub region: Option<AreaBox>,
    pub parent: Parent<'a>,
}

impl Run<'_> {
    pub(super) async fn edit_job(&mut self) -> Result<Outcome, Stop> {
        let (original, inputs) = self.load().await?;
        let readiness = self.check(&inputs).await?;
        let prompt = prompts::edit(&self.job.request, &readiness.observation, None);
        let edited = self.edit(&inputs, prompt, None).await?;
        self.crash(Step::AfterEdit)?;
        self.settle_now().await?;

        let (result, leakage) = compose(
            self.job,
            original,
            &inputs,
            &edited.image,
            readiness.target_box,
        )?;
        let area = readiness.target_box.map(area_of);
        let made = Made {
            edited: &edited,
            region: area,
            parent: Parent::Photo {
                sha256: inputs.original_sha256,
            },
        };
        // The review sees the small copy; the result itself is dropped once encoded.
        let (stored, seen) = self.store_image(result, "v1", made).await?;
        tracing::info!(job_id = %self.job.job_id, leakage_ppm = leakage.as_ref().map(|l| l.ratio_ppm), "result_stored");
        self.crash(Step::AfterStore)?;

        let review = self.review(&inputs, &seen).await?;
        self.crash(Step::AfterReview)?;
        let (width, height) = inputs.size;
        let result = JobResult {
            asset_key: stored.key,
            jpeg_key: Some(stored.jpeg_key),
            thumbnail: true,
            width,
            height,
            review,
            leakage,
            area,
            observation: Some(readiness.observation),
            comparison: None,
            retained_previous: false,
            candidate_asset_key: None,
            adopted_at: None,
            credentials: Some(stored.credentials),
            candidate_credentials: None,
        };
        self.deliver(result, None).await
    }

    /// Look before you generate: reserves the check and the edit together, then asks the
    /// checker; not ready stops the job with its questions before the expensive call. The
    /// same check already answered "not ready" today is answered from memory, unpaid; one a
    /// preview answered "ready" is drawn from without a second check. A preview reserves
    /// and pays the check only, remembers a ready answer and stops with its area.
    async fn check(&mut self, inputs: &Inputs) -> Result<Readiness, Stop> {
        let (p, job) = (self.p, self.job);
        let prompt = prompts::readiness(&job.request);
        let images = vision_images(inputs, &prompt, &[])?;
        let vision_model = p.providers.first(CallKind::Check).config().vision_model.id;
        let memory =
            MemoryKey::readiness(&job.user_id, vision_model, &prompt, &images, clock::now());
        match self.recall(&memory).await {
            Some(Remembered::Asked(asked)) => {
                tracing::info!(job_id = %job.job_id, questions = asked.questions.len(), "check_answered_from_memory");
                return Err(Stop::Fail(asked));
            }
            Some(Remembered::Ready(readiness)) => {
                return self.after_preview(inputs, readiness).await;
            }
            None => {}
        }
        // Never pay for a check when the edit after it could not run in time.
        let Some(model) = self.model_for(CallKind::Check, p.time.least_edit) else {
            return Err(Stop::fail(FailureCode::TimedOut));
        };
        let check_sizes = inputs.vision_sizes(&prompt);
        let sized = Sized {
            images: &check_sizes,
            prompt_chars: prompt_chars(&prompt),
        };
        self.reserve_check(inputs, sized).await?;
        let ask = |m: ModelClient| {
            let (id, prompt, images) = (&job.job_id, &prompt, &images);
            async move { m.check_readiness(id, prompt, images).await }
        };
        let reply = self
            .paid_call(CallKind::Check, (model, p.time.least_edit), sized, ask)
            .await?;
        let readiness = match reply {
            Ok(r) => r.answer,
            Err(e) => {
                tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "check_failed");
                return Err(Stop::fail(FailureCode::CheckFailed));
            }
        };
        if !readiness.ready {
            let asked = clarification(readiness);
            self.remember(&memory, &asked).await;
            tracing::info!(job_id = %job.job_id, questions = asked.questions.len(), candidates = asked.candidates.len(), "check_not_ready");
            return Err(Stop::Fail(asked));
        }
        self.crash(Step::AfterCheck)?;
        if job.request.preview {
            self.remember_ready(&memory, &readiness).await;
            return self.after_preview(inputs, readiness).await;
        }
        Ok(readiness)
    }

    /// Reserves the check of `sized`, and the edit after it unless the job is a preview,
    /// before the check is paid.
    async fn reserve_check(&mut self, inputs: &Inputs, sized: Sized<'_>) -> Result<(), Stop> {
        let job = self.job;
        let edit_sizes = inputs.edit_sizes(&edit_roles(inputs));
        let edit_sized = Sized {
            images: &edit_sizes,
            prompt_chars: EDIT_PROMPT_ALLOWANCE_CHARS,
        };
        let planned = [(CallKind::Check, sized), (CallKind::Edit, edit_sized)];
        let planned = if job.request.preview {
            &planned[..1]
        } else {
            &planned[..]
        };
        if let Err(code) = self.reserve("01-check-edit", planned, job.credits).await? {
            return Err(Stop::fail(code));
        }
        self.crash(Step::AfterReserve)?;
        Ok(())
    }

    /// A preview's "ready": a preview stops with the area it found (nothing drawn, refunded);
    /// the edit after it reserves its drawing alone and draws from that answer.
    async fn after_preview(
        &mut self,
        inputs: &Inputs,
        readiness: Readiness,
    ) -> Result<Readiness, Stop> {
        let job = self.job;
        if job.request.preview {
            tracing::info!(job_id = %job.job_id, area = readiness.target_box.is_some(), "preview_answered");
            return Err(Stop::Fail(JobFailure::previewed(
                readiness.target_box.map(area_of),
            )));
        }
        let sizes = inputs.edit_sizes(&edit_roles(inputs));
        let sized = Sized {
            images: &sizes,
            prompt_chars: EDIT_PROMPT_ALLOWANCE_CHARS,
        };
        if let Err(code) = self
            .reserve("01-edit", &[(CallKind::Edit, sized)], job.credits)
            .await?
        {
            return Err(Stop::fail(code));
        }
        self.crash(Step::AfterReserve)?;
        tracing::info!(job_id = %job.job_id, "check_answered_by_preview");
        Ok(readiness)
    }

    /// The expensive call, under the reservation in force; `current` is a repair's starting
    /// image. A provider error fails the job (never retried).
    pub(super) async fn edit(
        &mut self,
        inputs: &Inputs,
        prompt: EditPrompt,
        current: Option<&RgbaImage>,
    ) -> Result<Edited, Stop> {
        let job = self.job;
        let Some(model) = self.model_for(CallKind::Edit, Duration::ZERO) else {
            return Err(Stop::fail(FailureCode::TimedOut));
        };
        self.record_stage(Stage::Drawing).await;
        let sizes = inputs.edit_sizes(&prompt.images);
        let sized = Sized {
            images: &sizes,
            prompt_chars: EDIT_PROMPT_ALLOWANCE_CHARS,
        };
        let call = edit_call(inputs, prompt, current)?;
        let ask = |m: ModelClient| {
            let (id, call) = (&job.job_id, call.clone());
            async move { m.edit(id, call).await }
        };
        match self
            .paid_call(CallKind::Edit, (model, Duration::ZERO), sized, ask)
            .await?
        {
            Ok(reply) => Ok(Edited {
                image: reply.image,
                model: reply.model,
            }),
            Err(e) => {
                tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "edit_failed");
                Err(Stop::fail(FailureCode::EditFailed))
            }
        }
    }

    /// Records the step reached, for the owner watching (one conditional write per step, no
    /// model call). Progress decides nothing: a write that fails is logged and the job goes on.
    pub(super) async fn record_stage(&self, stage: Stage) {
        let id = &self.job.job_id;
        match self.p.app.store.set_stage(id, stage).await {
            Ok(_) => tracing::info!(job_id = %id, stage = stage.as_str(), "stage_recorded"),
            Err(e) => {
                tracing::warn!(job_id = %id, stage = stage.as_str(), error = %crate::error::chain(&e), "stage_not_recorded");
            }
        }
    }

    /// Stores an image of this job (`v1`, `candidate`) in the private bucket: the lossless
    /// master, its JPEG rendition for download and its list thumbnail, written at once. All
    /// under the job's prefix, so every deletion of the job's images removes the thumbnail too.
    /// Also returns the image at the vision calls' size, the review's or comparison's picture:
    /// the thumbnail is made from it, one shrink of the full image instead of two (issue 50).
    /// The master and the rendition carry the same signed content credentials (C2PA); the
    /// thumbnail carries none (a list's picture, not a copy of the result).
    pub(super) async fn store_image(
        &self,
        image: RgbaImage,
        name: &str,
        made: Made<'_>,
    ) -> Result<(StoredImage, RgbaImage), Stop> {
        let seen = imaging::downscale(&image, imaging::VISION_MAX_SIDE);
        let png = imaging::encode_png(&image).map_err(internal_image)?;
        let jpeg = imaging::encode_jpeg(&image, imaging::JPEG_QUALITY).map_err(internal_image)?;
        // A 12 MP result's 48 MB are not held while signing or over the review's call.
        drop(image);
        let thumb = imaging::encode_thumbnail(&seen).map_err(internal_image)?;
        let (credentials, png, jpeg) = self.sign(&made, &png, &jpeg)?;
        let (user, job) = (&self.job.user_id, &self.job.job_id);
        let jpeg_key = Assets::result_key(user, job, name, ResultFormat::Jpeg);
        let stored = StoredImage {
            key: Assets::result_key(user, job, name, ResultFormat::Png),
            thumb_key: crate::domain::result::thumbnail_key(&jpeg_key),
            jpeg_key,
            credentials,
        };
        let assets = &self.p.app.assets;
        tokio::try_join!(
            assets.put_image(&stored.key, png, ResultFormat::Png),
            assets.put_image(&stored.jpeg_key, jpeg, ResultFormat::Jpeg),
            assets.put_image(&stored.thumb_key, thumb, ResultFormat::Jpeg),
        )
        .map_err(Error::from)?;
        Ok((stored, seen))
    }

    /// Signs the master and the rendition: the credentials the job records and the signed
    /// bytes. A failure is ours (the key was checked at cold start): the job fails, refunded.
    fn sign(
        &self,
        made: &Made<'_>,
        png: &[u8],
        jpeg: &[u8],
    ) -> Result<(ContentCredentials, Vec<u8>, Vec<u8>), Stop> {
        let (job, signing) = (self.job, &self.p.signing);
        let mut credentials = ContentCredentials {
            model: made.edited.model.id.to_owned(),
            provider: made.edited.model.provider.as_str().to_owned(),
            medium: job.request.style.as_str().to_owned(),
            target: job.request.target,
            signed_at: clock::format(clock::now()),
            issuer: signing.issuer().to_owned(),
            provider_manifest: false,
            repair: matches!(made.parent, Parent::Version { .. }),
        };
        let claim = Claim {
            credentials: &credentials,
            region: made.region,
            parent: made.parent,
            provider_output: &made.edited.image,
        };
        let signed = signing.sign_both(&claim, png, jpeg).map_err(|e| {
            tracing::error!(job_id = %job.job_id, error = %crate::error::chain(&e), "credentials_failed");
            Stop::fail(FailureCode::InternalError)
        })?;
        credentials.provider_manifest = signed.provider_manifest;
        Ok((credentials, signed.png, signed.jpeg))
    }

    /// Review after, under its own reservation; no review is never a pass. `result` is the
    /// delivered image at the vision calls' size (what [`Run::store_image`] returns).
    async fn review(&mut self, inputs: &Inputs, result: &RgbaImage) -> Result<ReviewRecord, Stop> {
        self.record_stage(Stage::Checking).await;
        let job = self.job;
        let Some(model) = self.model_for(CallKind::Review, Duration::ZERO) else {
            return Ok(ReviewRecord::not_verified(
                "The review was skipped: not enough time was left to run it.",
            ));
        };
        let prompt = prompts::review(&job.request);
        let images = vision_images(inputs, &prompt, &[(ImageRole::Result, result)])?;
        let sizes = inputs.vision_sizes(&prompt);
        let sized = Sized {
            images: &sizes,
            prompt_chars: prompt_chars(&prompt),
        };
        if let Err(code) = self
            .reserve("02-review", &[(CallKind::Review, sized)], Credits::ZERO)
            .await?
        {
            return Ok(ReviewRecord::not_verified(match code {
                FailureCode::DailyLimitReached => {
                    "The review was skipped because today's limit was reached."
                }
                _ => "The review was skipped because reviews are paused.",
            }));
        }
        let ask = |m: ModelClient| {
            let (id, prompt, images) = (&job.job_id, &prompt, &images);
            async move { m.review(id, prompt, images).await }
        };
        let reply = self
            .paid_call(CallKind::Review, (model, Duration::ZERO), sized, ask)
            .await?;
        Ok(match reply {
            Ok(r) => review_record(r.answer),
            Err(e) => {
                tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "review_unavailable");
                ReviewRecord::not_verified(
                    "The reviewer was unavailable, so this result is not verified.",
                )
            }
        })
    }
}

/// The images an edit sends: the photo, and the style reference when there is one.
fn edit_roles(inputs: &Inputs) -> Vec<ImageRole> {
    let mut roles = vec![ImageRole::Original];
    if inputs.reference.is_some() {
        roles.push(ImageRole::StyleReference);
    }
    roles
}

fn review_record(answer: Review) -> ReviewRecord {
    ReviewRecord {
        verdict: match answer.verdict {
            Verdict::Passed => ReviewVerdict::Passed,
            Verdict::Failed => ReviewVerdict::Failed,
        },
        target_reads_as_medium: Some(answer.target_reads_as_medium),
        rest_photographic: Some(answer.rest_photographic),
        style_leaked: Some(answer.style_leaked),
        notes: answer.notes,
    }
}

/// A "not ready" answer as the job keeps it: the questions, and the subjects outlined.
fn clarification(readiness: Readiness) -> JobFailure {
    let candidates = readiness
        .candidates
        .into_iter()
        .map(|c| Candidate {
            label: c.label,
            area: AreaBox {
                x0: c.target_box.x0,
                y0: c.target_box.y0,
                x1: c.target_box.x1,
                y1: c.target_box.y1,
            },
        })
        .collect();
    JobFailure::needs_clarification(readiness.questions, candidates)
}
