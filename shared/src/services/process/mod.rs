//! Processing one job (DESIGN.md rules 5–9): claim, load, reserve, look, edit, composite,
//! store, review, deliver.
//!
//! - The claim is a compare-and-set; the loser does nothing. A claimed job never re-enters a
//!   paid call: every failure after the claim fails the job and refunds it in one
//!   transaction; nothing here retries a paid call.
//! - Every paid call is covered by a budget reservation made first (check + edit share one,
//!   the review has its own). Each call's usage is saved on the attempt as soon as it returns;
//!   settlement uses the real cost, or keeps the estimate booked when the cost is unknown.
//! - The readiness check may stop the job with questions before the expensive edit; the
//!   review never passes what it did not see (`not_verified`).
//! - For a brushed area the result is composited over the original through the mask, so every
//!   pixel outside the selection is the original's; leakage is measured for every target with
//!   a known selection.

mod repair;

use aws_sdk_dynamodb::types::TransactWriteItem;
use image::RgbaImage;

use super::App;
use super::budget::{self, Reservation, ReserveRequest};
use crate::assets::{AssetReadError, Assets};
use crate::clock;
use crate::domain::{AssetKind, EditSpec, JobId, Target};
use crate::error::Error;
use crate::imaging::{self, DecodeLimits, ImagingError, Mask};
use crate::model::{
    CallKind, EditCall, EditSize, ImageInput, ImageRole, ModelClient, ModelError, Usage, Verdict,
    pricing,
};
use crate::prompts;
use crate::store::jobs::FinishOutcome;
use crate::store::schema::{
    AttemptItem, CallRecord, JobFailure, JobItem, JobResult, LeakageRecord, ReviewRecord,
    ReviewVerdict,
};

/// Longest side of an image sent to the edit call (the model works at 1–2 MP; the result is
/// scaled back and composited at the original's size).
const EDIT_MAX_SIDE: u32 = 1536;
/// Soft edge of the composite, inside the selection only.
const FEATHER_PX: u32 = 4;
/// Allowance for the edit prompt's length before the observation is known.
pub(super) const EDIT_PROMPT_ALLOWANCE_CHARS: usize = 6_000;

/// A point in processing, for fault injection: the process "dies" right after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    AfterClaim,
    AfterReserve,
    AfterCheck,
    /// The edit call returned and its usage is saved; nothing settled or stored yet.
    AfterEdit,
    AfterStore,
    AfterReview,
}

/// How processing a message ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Unknown job, already claimed, or finished: nothing done.
    NotClaimed,
    Delivered {
        verdict: ReviewVerdict,
    },
    /// Failed and refunded with this code.
    Failed {
        code: String,
    },
    /// Someone else (the sweeper) finished the job first.
    LostRace,
}

/// Errors that reach the consumer's edge.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// Nothing was claimed: the message may be redelivered.
    #[error("before the claim")]
    BeforeClaim(#[source] Error),
    /// The job is claimed and could not be finished (the sweeper fails and refunds it).
    #[error("after the claim")]
    AfterClaim(#[source] Error),
    /// Fault injection: the process "died" here.
    #[error("simulated crash after {0:?}")]
    Crashed(Step),
}

/// Why a run stopped short of delivery.
enum Stop {
    Crash(Step),
    Fail(JobFailure),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        tracing::error!(error = %crate::error::chain(&e), "job_step_failed");
        Stop::Fail(failure(
            "INTERNAL_ERROR",
            "Something went wrong on our side. Your credits were refunded.",
        ))
    }
}

fn failure(code: &str, message: &str) -> JobFailure {
    JobFailure {
        code: code.to_owned(),
        message: message.to_owned(),
        questions: Vec::new(),
    }
}

fn budget_paused() -> JobFailure {
    failure(
        "BUDGET_PAUSED",
        "Edits are temporarily paused. Your credits were refunded; please try again later.",
    )
}

/// The decoded inputs of a job.
struct Inputs {
    original: RgbaImage,
    mask: Option<Mask>,
    reference: Option<RgbaImage>,
}

/// Processes jobs; built once per process.
#[derive(Clone, Debug)]
pub struct Processor {
    pub app: App,
    pub model: ModelClient,
    /// Fault injection for tests: stop (as a crash would) right after this step.
    pub crash_at: Option<Step>,
}

impl Processor {
    pub fn new(app: App, model: ModelClient) -> Processor {
        Processor {
            app,
            model,
            crash_at: None,
        }
    }

    fn crash(&self, step: Step) -> Result<(), Stop> {
        if self.crash_at == Some(step) {
            tracing::warn!(step = ?step, "simulated_crash");
            return Err(Stop::Crash(step));
        }
        Ok(())
    }

    /// Processes the job named by a queue message.
    pub async fn process(&self, id: &JobId) -> Result<Outcome, ProcessError> {
        let job = match self.app.store.claim(id, &clock::format(clock::now())).await {
            Ok(Some(job)) => job,
            Ok(None) => {
                tracing::info!(job_id = %id, "job_not_claimed");
                return Ok(Outcome::NotClaimed);
            }
            Err(e) => return Err(ProcessError::BeforeClaim(e)),
        };
        tracing::info!(job_id = %id, user_id = %job.user_id, "job_claimed");
        let mut open: Option<AttemptItem> = None;
        let stop = match self.run(&job, &mut open).await {
            Ok(outcome) => {
                self.emit_budget_metric().await;
                return Ok(outcome);
            }
            Err(stop) => stop,
        };
        let result = match stop {
            Stop::Crash(step) => Err(ProcessError::Crashed(step)),
            Stop::Fail(failure) => self.fail(&job, failure, open).await,
        };
        self.emit_budget_metric().await;
        result
    }

    /// Inside Lambda: the day's spend as a percent of its cap, for the 80 % alarm (one
    /// read per job; skipped elsewhere).
    async fn emit_budget_metric(&self) {
        if !crate::metrics::enabled() {
            return;
        }
        let day = budget::day_of(clock::now());
        if let Ok(Some(d)) = self.app.store.get_budget_day(&day).await {
            let pct = crate::metrics::used_percent(d.used_micros, d.reserved_micros, d.cap_micros);
            crate::metrics::emit(crate::metrics::BUDGET_USED_PERCENT, "Percent", pct);
        }
    }

    /// Fails and refunds, settling an open reservation in the same transaction.
    async fn fail(
        &self,
        job: &JobItem,
        failure: JobFailure,
        open: Option<AttemptItem>,
    ) -> Result<Outcome, ProcessError> {
        let now = clock::format(clock::now());
        let mut extra: Vec<TransactWriteItem> = Vec::new();
        if let Some(mut attempt) = open {
            for call in attempt.planned.clone() {
                attempt
                    .calls
                    .entry(call)
                    .or_insert_with(|| budget::skipped(clock::now()));
            }
            let cost = budget::settlement_cost(&attempt);
            extra = self
                .app
                .store
                .settle_items(&attempt, cost, "consumer", &now)
                .map_err(ProcessError::AfterClaim)?;
        }
        let outcome = self
            .app
            .store
            .fail_and_refund(
                job,
                crate::domain::JobState::Processing,
                &failure,
                &now,
                extra,
            )
            .await
            .map_err(ProcessError::AfterClaim)?;
        match outcome {
            FinishOutcome::Done => {
                tracing::info!(job_id = %job.job_id, code = %failure.code, credits = job.credits, "job_failed_refunded");
                Ok(Outcome::Failed { code: failure.code })
            }
            FinishOutcome::NotInState => {
                tracing::warn!(job_id = %job.job_id, "job_finished_elsewhere");
                Ok(Outcome::LostRace)
            }
        }
    }

    async fn run(&self, job: &JobItem, open: &mut Option<AttemptItem>) -> Result<Outcome, Stop> {
        self.crash(Step::AfterClaim)?;
        if let Some(repair) = &job.repair {
            return self.run_repair(job, repair, open).await;
        }
        let spec = &job.request;
        let inputs = self.load(job).await?;

        // Images for the vision calls, downscaled.
        let vision = |img: &RgbaImage| {
            imaging::encode_png(&imaging::downscale(img, imaging::VISION_MAX_SIDE))
        };
        let original_small = vision(&inputs.original).map_err(internal_image)?;
        let reference_small = inputs
            .reference
            .as_ref()
            .map(vision)
            .transpose()
            .map_err(internal_image)?;
        let mask_small = inputs
            .mask
            .as_ref()
            .map(|m| {
                imaging::encode_png(&imaging::downscale(
                    &m.to_visual(),
                    imaging::VISION_MAX_SIDE,
                ))
            })
            .transpose()
            .map_err(internal_image)?;
        let pick = |role: ImageRole, result: Option<&Vec<u8>>| -> Option<Vec<u8>> {
            match role {
                ImageRole::Original => Some(original_small.clone()),
                ImageRole::StyleReference => reference_small.clone(),
                ImageRole::Mask => mask_small.clone(),
                ImageRole::Result => result.cloned(),
                ImageRole::Current | ImageRole::Candidate => None,
            }
        };
        let images_for =
            |roles: &[ImageRole], result: Option<&Vec<u8>>| -> Result<Vec<ImageInput>, Stop> {
                roles
                    .iter()
                    .map(|r| pick(*r, result).map(|png| ImageInput::png(*r, png)))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        Stop::Fail(failure(
                            "INTERNAL_ERROR",
                            "An input image was missing. Your credits were refunded.",
                        ))
                    })
            };

        // Reservation A covers the check and the edit.
        let check_prompt = prompts::readiness(spec);
        let check_images = images_for(&check_prompt.images, None)?;
        let (ow, oh) = inputs.original.dimensions();
        let edit_dims = imaging::fit_within((ow, oh), EDIT_MAX_SIDE);
        let vision_dims: Vec<(u32, u32)> = check_prompt
            .images
            .iter()
            .map(|_| imaging::fit_within((ow, oh), imaging::VISION_MAX_SIDE))
            .collect();
        let mut edit_inputs = vec![edit_dims];
        if let Some(r) = &inputs.reference {
            edit_inputs.push(imaging::fit_within(r.dimensions(), EDIT_MAX_SIDE));
        }
        let quality = self.model.config().quality;
        let estimate = pricing::estimate_micros(
            CallKind::Check,
            &vision_dims,
            check_prompt.system.len() + check_prompt.text.len(),
            quality,
        ) + pricing::estimate_micros(
            CallKind::Edit,
            &edit_inputs,
            EDIT_PROMPT_ALLOWANCE_CHARS,
            quality,
        );
        let reservation = budget::reserve(
            &self.app,
            &ReserveRequest {
                job: &job.job_id,
                attempt: "01-check-edit",
                planned: &["check", "edit"],
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

        // Look before you generate.
        let check = self
            .model
            .check_readiness(&job.job_id, &check_prompt, &check_images)
            .await;
        let usage = match &check {
            Ok(r) => r.usage,
            Err(e) => e.usage().copied(),
        };
        self.record(
            open,
            "check",
            CallKind::Check,
            call_outcome(check.as_ref().err()),
            usage,
            check.as_ref().err(),
        )
        .await?;
        let readiness = match check {
            Ok(r) => r.answer,
            Err(e) => {
                tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "check_failed");
                return Err(Stop::Fail(failure(
                    "CHECK_FAILED",
                    "We could not check your photo before editing it. Your credits were refunded; please try again.",
                )));
            }
        };
        if !readiness.ready {
            tracing::info!(job_id = %job.job_id, questions = readiness.questions.len(), "check_not_ready");
            let mut f = failure(
                "NEEDS_CLARIFICATION",
                "Your request needs a detail before we can edit it. Your credits were refunded.",
            );
            f.questions = readiness.questions.into_iter().take(3).collect();
            return Err(Stop::Fail(f));
        }
        self.crash(Step::AfterCheck)?;

        // The expensive call.
        let edit_prompt = prompts::edit(spec, &readiness.observation, None);
        let edited = self
            .call_edit(job, open, edit_prompt, &inputs, None)
            .await?;
        self.crash(Step::AfterEdit)?;
        if let Some(attempt) = open.take() {
            budget::settle(&self.app, &attempt, "consumer").await?;
        }

        // Only the selection changes.
        let (result, leakage) = compose(job, &inputs, &edited, readiness.target_box)?;
        let result_png = imaging::encode_png(&result).map_err(internal_image)?;
        let key = Assets::result_key(&job.user_id, &job.job_id, "v1");
        self.app
            .assets
            .put_png(&key, result_png)
            .await
            .map_err(Error::from)?;
        tracing::info!(job_id = %job.job_id, leakage_ppm = leakage.as_ref().map(|l| l.ratio_ppm), "result_stored");
        self.crash(Step::AfterStore)?;

        // Review after, with its own reservation; no review is never a pass.
        let review_prompt = prompts::review(spec);
        let result_small = vision(&result).map_err(internal_image)?;
        let review_images = images_for(&review_prompt.images, Some(&result_small))?;
        let review_estimate = pricing::estimate_micros(
            CallKind::Review,
            &review_prompt
                .images
                .iter()
                .map(|_| imaging::fit_within((ow, oh), imaging::VISION_MAX_SIDE))
                .collect::<Vec<_>>(),
            review_prompt.system.len() + review_prompt.text.len(),
            quality,
        );
        let reservation = budget::reserve(
            &self.app,
            &ReserveRequest {
                job: &job.job_id,
                attempt: "02-review",
                planned: &["review"],
                estimate_micros: i64::try_from(review_estimate).unwrap_or(i64::MAX),
                sale_credits: 0,
                price_table: pricing::PRICE_TABLE_VERSION,
            },
            clock::now(),
        )
        .await?;
        let review = match reservation {
            Reservation::Refused { .. } => {
                not_verified("The review was skipped because reviews are paused.")
            }
            Reservation::Granted(attempt) => {
                *open = Some(*attempt);
                let reply = self
                    .model
                    .review(&job.job_id, &review_prompt, &review_images)
                    .await;
                let usage = match &reply {
                    Ok(r) => r.usage,
                    Err(e) => e.usage().copied(),
                };
                self.record(
                    open,
                    "review",
                    CallKind::Review,
                    call_outcome(reply.as_ref().err()),
                    usage,
                    reply.as_ref().err(),
                )
                .await?;
                match reply {
                    Ok(r) => ReviewRecord {
                        verdict: match r.answer.verdict {
                            Verdict::Passed => ReviewVerdict::Passed,
                            Verdict::Failed => ReviewVerdict::Failed,
                        },
                        target_reads_as_medium: Some(r.answer.target_reads_as_medium),
                        rest_photographic: Some(r.answer.rest_photographic),
                        style_leaked: Some(r.answer.style_leaked),
                        notes: r.answer.notes,
                    },
                    Err(e) => {
                        tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "review_unavailable");
                        not_verified(
                            "The reviewer was unavailable, so this result is not verified.",
                        )
                    }
                }
            }
        };
        self.crash(Step::AfterReview)?;

        // Deliver, settling the review's reservation in the same transaction.
        let now = clock::format(clock::now());
        let extra = match open.take() {
            Some(attempt) => self.app.store.settle_items(
                &attempt,
                budget::settlement_cost(&attempt),
                "consumer",
                &now,
            )?,
            None => Vec::new(),
        };
        let verdict = review.verdict;
        let result = JobResult {
            asset_key: key,
            width: ow,
            height: oh,
            review,
            leakage,
            observation: Some(readiness.observation),
            comparison: None,
            retained_previous: false,
            candidate_asset_key: None,
        };
        match self.app.store.deliver(job, &result, &now, extra).await? {
            FinishOutcome::Done => {
                tracing::info!(job_id = %job.job_id, verdict = ?verdict, "job_delivered");
                Ok(Outcome::Delivered { verdict })
            }
            FinishOutcome::NotInState => {
                tracing::warn!(job_id = %job.job_id, "job_finished_elsewhere");
                Ok(Outcome::LostRace)
            }
        }
    }

    /// The edit call: images in the prompt's order (`current`, a repair's starting image, as
    /// Image 1 when given), the mask at the first image's size; usage saved on the open
    /// attempt as soon as it returns. A provider error fails the job (never retried).
    async fn call_edit(
        &self,
        job: &JobItem,
        open: &mut Option<AttemptItem>,
        prompt: prompts::EditPrompt,
        inputs: &Inputs,
        current: Option<&RgbaImage>,
    ) -> Result<Vec<u8>, Stop> {
        let png = |img: &RgbaImage| -> Result<Vec<u8>, Stop> {
            imaging::encode_png(&imaging::downscale(img, EDIT_MAX_SIDE)).map_err(internal_image)
        };
        let first = imaging::downscale(current.unwrap_or(&inputs.original), EDIT_MAX_SIDE);
        let mut images = Vec::new();
        for role in &prompt.images {
            let bytes = match role {
                ImageRole::Current => current.map(png).transpose()?,
                ImageRole::Original => Some(png(&inputs.original)?),
                ImageRole::StyleReference => inputs.reference.as_ref().map(png).transpose()?,
                _ => None,
            };
            let Some(bytes) = bytes else {
                return Err(Stop::Fail(failure(
                    "INTERNAL_ERROR",
                    "An input image was missing. Your credits were refunded.",
                )));
            };
            images.push(ImageInput::png(*role, bytes));
        }
        let mask_png = match (&inputs.mask, prompt.masked) {
            (Some(m), true) => {
                let (w, h) = first.dimensions();
                Some(m.resized(w, h).to_alpha_png().map_err(internal_image)?)
            }
            _ => None,
        };
        let call = EditCall {
            prompt,
            images,
            mask_png,
            size: EditSize::for_dimensions(first.width(), first.height()),
        };
        let edit = self.model.edit(&job.job_id, call).await;
        let usage = match &edit {
            Ok(r) => r.usage,
            Err(e) => e.usage().copied(),
        };
        self.record(
            open,
            "edit",
            CallKind::Edit,
            call_outcome(edit.as_ref().err()),
            usage,
            edit.as_ref().err(),
        )
        .await?;
        match edit {
            Ok(r) => Ok(r.image),
            Err(e) => {
                tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "edit_failed");
                Err(Stop::Fail(failure(
                    "EDIT_FAILED",
                    "The image model could not make this edit. Your credits were refunded; please try again.",
                )))
            }
        }
    }

    /// Loads and decodes the inputs, within hard limits, before any paid call.
    async fn load(&self, job: &JobItem) -> Result<Inputs, Stop> {
        let spec: &EditSpec = &job.request;
        let original = self
            .read_image(job, AssetKind::Original, &spec.original_asset_id)
            .await?;
        let original = DecodeLimits::for_asset(AssetKind::Original)
            .decode(&original)
            .map_err(invalid_input)?
            .to_rgba8();
        let mask = match &spec.mask_asset_id {
            Some(id) => {
                let bytes = self.read_image(job, AssetKind::Mask, id).await?;
                let mask =
                    imaging::mask_from_png(&bytes, original.dimensions()).map_err(invalid_input)?;
                if mask.is_empty() {
                    return Err(Stop::Fail(failure(
                        "INVALID_MASK",
                        "The brushed area is empty. Your credits were refunded.",
                    )));
                }
                Some(mask)
            }
            None => None,
        };
        let reference = match &spec.style_reference_asset_id {
            Some(id) => {
                let bytes = self.read_image(job, AssetKind::StyleReference, id).await?;
                Some(
                    DecodeLimits::for_asset(AssetKind::StyleReference)
                        .decode(&bytes)
                        .map_err(invalid_input)?
                        .to_rgba8(),
                )
            }
            None => None,
        };
        Ok(Inputs {
            original,
            mask,
            reference,
        })
    }

    async fn read_image(
        &self,
        job: &JobItem,
        kind: AssetKind,
        id: &crate::domain::AssetId,
    ) -> Result<Vec<u8>, Stop> {
        let key = Assets::upload_key(&job.user_id, kind, id);
        match self
            .app
            .assets
            .get_limited(&key, DecodeLimits::for_asset(kind).max_bytes)
            .await
        {
            Ok(Some(bytes)) => Ok(bytes),
            Ok(None) => Err(Stop::Fail(failure(
                "ASSET_MISSING",
                "An uploaded image is gone. Your credits were refunded.",
            ))),
            Err(AssetReadError::TooLarge { .. }) => Err(Stop::Fail(failure(
                "INVALID_IMAGE",
                "An uploaded image is too large. Your credits were refunded.",
            ))),
            Err(AssetReadError::Aws(e)) => Err(Error::from(e).into()),
        }
    }

    /// Saves a call's outcome and usage on the open attempt as soon as it returns.
    async fn record(
        &self,
        open: &mut Option<AttemptItem>,
        name: &str,
        kind: CallKind,
        outcome: &str,
        usage: Option<Usage>,
        error: Option<&ModelError>,
    ) -> Result<(), Stop> {
        let Some(attempt) = open.as_mut() else {
            return Ok(());
        };
        let cost = match (error, &usage) {
            (_, Some(u)) => pricing::cost_micros(kind, u).and_then(|c| i64::try_from(c).ok()),
            // An error status: providers do not bill a refused request.
            (
                Some(
                    ModelError::Http { .. }
                    | ModelError::InvalidInput { .. }
                    | ModelError::Build { .. },
                ),
                None,
            ) => Some(0),
            // Timeout, dropped connection, or an answer without usage: unknown.
            _ => None,
        };
        let record = CallRecord {
            outcome: outcome.to_owned(),
            cost_micros: cost,
            usage: usage.and_then(|u| serde_json::to_value(u).ok()),
            at: clock::format(clock::now()),
        };
        tracing::info!(job_id = %attempt.job_id, call = name, outcome, cost_micros = cost, "call_recorded");
        budget::record_call(&self.app, attempt, name, record)
            .await
            .map_err(Stop::from)
    }
}

fn call_outcome(error: Option<&ModelError>) -> &'static str {
    match error {
        None => "ok",
        Some(e) => e.code(),
    }
}

fn not_verified(notes: &str) -> ReviewRecord {
    ReviewRecord {
        verdict: ReviewVerdict::NotVerified,
        target_reads_as_medium: None,
        rest_photographic: None,
        style_leaked: None,
        notes: notes.to_owned(),
    }
}

fn invalid_input(e: ImagingError) -> Stop {
    let (code, message) = match e {
        ImagingError::SizeMismatch { .. } => (
            "INVALID_MASK",
            "The mask must be exactly the size of the photo. Your credits were refunded.",
        ),
        _ => (
            "INVALID_IMAGE",
            "An uploaded file is not a usable PNG, JPEG or WebP image. Your credits were refunded.",
        ),
    };
    tracing::info!(code = e.code(), error = %e, "input_refused");
    Stop::Fail(failure(code, message))
}

fn internal_image(e: ImagingError) -> Stop {
    tracing::error!(code = e.code(), error = %e, "image_processing_failed");
    Stop::Fail(failure(
        "INTERNAL_ERROR",
        "Something went wrong on our side. Your credits were refunded.",
    ))
}

/// The edited image at the photo's size; for a brushed area composited over the original
/// through the mask, so only the selection changes. Leakage is measured against the mask, or
/// against the checker's box for a pet or person when there is one.
fn compose(
    job: &JobItem,
    inputs: &Inputs,
    edited: &[u8],
    target_box: Option<crate::model::TargetBox>,
) -> Result<(RgbaImage, Option<LeakageRecord>), Stop> {
    let edited = DecodeLimits::MODEL_OUTPUT.decode(edited).map_err(|e| {
        tracing::warn!(job_id = %job.job_id, code = e.code(), error = %e, "edit_output_invalid");
        Stop::Fail(failure(
            "EDIT_FAILED",
            "The image model returned an unusable image. Your credits were refunded.",
        ))
    })?;
    let edited = edited.into_rgba8();
    let (ow, oh) = inputs.original.dimensions();
    let (result, selection) = match (&inputs.mask, job.request.target) {
        (Some(mask), Target::Brush) => (
            imaging::composite(&inputs.original, &edited, mask, FEATHER_PX)
                .map_err(internal_image)?,
            Some((mask.clone(), "mask")),
        ),
        _ => {
            let result = imaging::resize_exact(&edited, ow, oh);
            let region = target_box.map(|b| (box_mask(b, ow, oh), "region"));
            (result, region)
        }
    };
    let leakage = match &selection {
        Some((mask, basis)) => {
            let l = imaging::leakage(&inputs.original, &result, mask).map_err(internal_image)?;
            Some(LeakageRecord {
                changed_outside: l.changed_outside,
                outside: l.outside,
                ratio_ppm: l.ratio_ppm,
                basis: (*basis).to_owned(),
            })
        }
        None => None,
    };
    Ok((result, leakage))
}

/// A selection mask from the checker's box (255 inside).
fn box_mask(b: crate::model::TargetBox, width: u32, height: u32) -> Mask {
    let (x0, y0, x1, y1) = b.to_pixels(width, height);
    let weights = image::GrayImage::from_fn(width, height, |x, y| {
        image::Luma([if x >= x0 && x < x1 && y >= y0 && y < y1 {
            255
        } else {
            0
        }])
    });
    Mask::from_weights(weights)
}

/// Building the processor at cold start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("reading the provider key from Secrets Manager ({secret_id})")]
    Secret {
        secret_id: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("building the model client")]
    Model(#[source] ModelError),
}

impl Processor {
    /// The processor as the consumer Lambda builds it: model settings from the environment,
    /// the provider key read once from Secrets Manager when configured.
    pub async fn from_env(
        app: App,
        clients: &crate::aws::Clients,
    ) -> Result<Processor, SetupError> {
        let settings = crate::config::ModelSettings::from_env()?;
        let mut config = crate::model::ModelConfig::new(settings.base_url.clone());
        config.api_key = match &settings.api_key_secret_id {
            Some(id) => {
                let out = clients
                    .secrets
                    .get_secret_value()
                    .secret_id(id)
                    .send()
                    .await
                    .map_err(|e| SetupError::Secret {
                        secret_id: id.clone(),
                        source: Box::new(e),
                    })?;
                out.secret_string().map(str::to_owned)
            }
            None => settings.api_key.clone(),
        };
        if let Some(m) = &settings.vision_model {
            config.vision_model = m.clone();
        }
        if let Some(m) = &settings.image_model {
            config.image_model = m.clone();
        }
        tracing::info!(base_url = %config.base_url, keyed = config.api_key.is_some(), "model_configured");
        Ok(Processor::new(
            app,
            ModelClient::new(config).map_err(SetupError::Model)?,
        ))
    }
}
