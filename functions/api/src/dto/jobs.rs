//! Edits and repairs as their owner sees them: the job, its settings, result, failure and
//! lineage, and a page of jobs.

use atelier_shared::domain::credentials::{ACTION_EDITED, DIGITAL_SOURCE_TYPE, LABEL};
use atelier_shared::domain::{
    AreaBox, ContentCredentials, Job, JobFailure, JobState, Operation, ResultFormat, Stage,
    Strength, StyleId, Target,
};
use atelier_shared::services::jobs::ResultLinks;
use atelier_shared::services::lineage::Lineage;
use serde::Serialize;
use utoipa::ToSchema;

use super::review::{ComparisonView, LeakageView, ReviewView};

/// The settings of an edit, as validated.
#[derive(Debug, Serialize, ToSchema)]
pub struct EditSettings {
    pub style: StyleId,
    pub target: Target,
    pub strength: Strength,
    pub original_asset_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mask_asset_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub style_reference_asset_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_style: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_description: Option<String>,
    pub locks: Vec<String>,
}

/// A job as its owner sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobView {
    pub id: String,
    pub operation: Operation,
    pub status: JobState,
    /// While queued or processing, what it is doing: `queued`, `looking` (the readiness
    /// check), `drawing` (the edit), `checking` (the review, or a repair's comparison), as the
    /// consumer last recorded it. Absent once finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// While queued or processing (on `GET /v1/edits/{id}` only): how long, in seconds from
    /// submit to delivery, the caller's recent edits usually took (the median of their last
    /// delivered ones, at least 3); absent without enough of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usual_secs: Option<u32>,
    /// Credits charged for this job.
    pub credits: i64,
    pub settings: EditSettings,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureView>,
    /// Present once the job succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultView>,
    /// A repair: the edit it repairs and the instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairView>,
    /// An edit that has repairs, or a repair (on `GET /v1/edits/{id}` only): the versions
    /// and which one the user holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lineage: Option<LineageView>,
    /// When the job's images (inputs, result, candidates) were deleted at the owner's
    /// request: the job keeps its money fields and state, has no download links and cannot be
    /// repaired.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub images_deleted_at: Option<String>,
    /// When the retention period (`ATELIER_RESULT_RETENTION_DAYS`) removed the job's images:
    /// it has no download links any more.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub images_expired_at: Option<String>,
    /// A delivered job whose images are kept: a small JPEG of its result (at most 256 pixels
    /// a side), presigned like `result.url` and shown inline. Lists carry it instead of the
    /// result.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = "uri")]
    pub thumbnail_url: Option<String>,
    /// A repair that did not improve on the version kept (the user holds the previous one):
    /// not a new delivered version.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub retained_previous: bool,
}

/// What a repair job repairs.
#[derive(Debug, Serialize, ToSchema)]
pub struct RepairView {
    /// The original edit of the lineage (the parent of every repair).
    pub parent_job_id: String,
    pub instruction: String,
}

/// An edit and its repairs.
#[derive(Debug, Serialize, ToSchema)]
pub struct LineageView {
    pub root_job_id: String,
    pub repairs_used: u32,
    pub repairs_left: u32,
    /// A repair did not improve on the version kept: no more repairs on this lineage.
    pub repairs_stopped: bool,
    /// The job whose image the user holds now.
    pub current_job_id: String,
    /// The edit, then each repair, oldest first.
    pub versions: Vec<VersionView>,
}

/// One job of a lineage.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionView {
    pub job_id: String,
    pub operation: Operation,
    pub status: JobState,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonView>,
    pub retained_previous: bool,
    /// This job's image is the one the user holds.
    pub current: bool,
}

impl LineageView {
    pub fn new(l: &Lineage) -> LineageView {
        let current = l
            .root
            .current
            .as_ref()
            .map_or(&l.root.job_id, |c| &c.job_id);
        let version = |j: &Job| VersionView {
            job_id: j.job_id.to_string(),
            operation: j.operation,
            status: j.status(),
            instruction: j.repair.as_ref().map(|r| r.instruction.clone()),
            review: j.result().map(|r| ReviewView::from(&r.review)),
            comparison: j
                .result()
                .and_then(|r| r.comparison.as_ref().map(ComparisonView::from)),
            retained_previous: j.result().is_some_and(|r| r.retained_previous),
            current: &j.job_id == current,
        };
        LineageView {
            root_job_id: l.root.job_id.to_string(),
            repairs_used: l.root.repairs_used,
            repairs_left: l.root.repairs_left(),
            repairs_stopped: l.root.repairs_stopped,
            current_job_id: current.to_string(),
            versions: std::iter::once(&l.root)
                .chain(l.repairs.iter())
                .map(version)
                .collect(),
        }
    }
}

/// A delivered image: a short-lived download URL, the review and the measured leakage.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResultView {
    /// Presigned GET, valid until `url_expires_at`, that a browser saves as a file
    /// (`Content-Disposition: attachment`, a name such as `atelier-embroidery-pet-01jf3xk2.jpg`).
    /// Ask for the job again for a fresh one.
    #[schema(format = "uri")]
    pub url: String,
    #[schema(format = DateTime)]
    pub url_expires_at: String,
    /// What `url` serves (`?format=`): `jpeg` by default; `png` when asked for, and for
    /// results delivered before JPEG renditions existed.
    pub format: ResultFormat,
    pub width: u32,
    pub height: u32,
    pub review: ReviewView,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leakage: Option<LeakageView>,
    /// A pet or person edit: the box the readiness check found around the target, in
    /// thousandths of the photo's width and height — where the edit was meant to change things
    /// and outside which `leakage` is measured. Absent for a brushed area (the mask is the
    /// area), a background and a repair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub area: Option<AreaBox>,
    /// A repair: how its candidate compared with the version the user held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonView>,
    /// A repair that did not improve: `url` is the previous version, kept.
    pub retained_previous: bool,
    /// When the owner chose this repair's candidate over the version the comparison kept
    /// (`POST /v1/edits/{id}/adopt`): `url` is then the candidate.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub adopted_at: Option<String>,
    /// The candidate such a repair made, for inspection (presigned like `url`, as a PNG).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = "uri")]
    pub candidate_url: Option<String>,
    /// The photo the edit started from (the lineage's kept copy), presigned like `url` and
    /// shown inline: the "before" of a before/after compare, on any device, after a reload.
    #[schema(format = "uri")]
    pub original_url: String,
    /// What the image's content credentials (C2PA) say: the image is labelled "Edited with
    /// AI" and both files `url` serves (the JPEG and the PNG master) carry the signed manifest
    /// (docs/api.md, "Content credentials"). Absent on results delivered before signing existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_credentials: Option<CredentialsView>,
}

/// A result's content credentials (C2PA), as people read them: the label to show, a sentence
/// saying what changed, and the facts the signed manifest records. The manifest in the file is
/// the proof; this is its reading. It names no user and carries no text the user wrote.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ContentCredentials)]
pub struct CredentialsView {
    /// The label to show with the image wherever people see it: always "Edited with AI".
    pub label: &'static str,
    /// One sentence for people: what changed, with which model, when and who signed it.
    pub summary: String,
    /// The C2PA action the manifest records: `c2pa.edited` (part of an existing photo changed).
    pub action: &'static str,
    /// The action's IPTC digital source type: `compositeWithTrainedAlgorithmicMedia` (a photo
    /// whose region an AI model redrew).
    #[schema(format = "uri")]
    pub digital_source_type: &'static str,
    /// The model that redrew the region (the action's `softwareAgent`), e.g. `gpt-image-1`.
    pub model: String,
    /// The model's provider: `openai` or `gemini`.
    pub provider: String,
    /// The medium: a style id from `GET /v1/styles`, never a custom style's text.
    pub medium: String,
    /// When the manifest was signed.
    #[schema(format = DateTime)]
    pub signed_at: String,
    /// Who signed it: the organisation of the signing certificate.
    pub issuer: String,
    /// The provider's output carried a manifest of its own, kept in ours as an ingredient.
    pub provider_manifest: bool,
}

impl From<&ContentCredentials> for CredentialsView {
    fn from(c: &ContentCredentials) -> CredentialsView {
        CredentialsView {
            label: LABEL,
            summary: c.summary(),
            action: ACTION_EDITED,
            digital_source_type: DIGITAL_SOURCE_TYPE,
            model: c.model.clone(),
            provider: c.provider.clone(),
            medium: c.medium.clone(),
            signed_at: c.signed_at.clone(),
            issuer: c.issuer.clone(),
            provider_manifest: c.provider_manifest,
        }
    }
}

impl JobView {
    /// The full view: the result's download URLs and the lineage, or when the images expired.
    pub fn detailed(
        j: Job,
        links: Option<ResultLinks>,
        lineage: Option<&Lineage>,
        retention_days: u32,
    ) -> JobView {
        let expired_at = atelier_shared::services::jobs::images_expired_at(&j, retention_days)
            .filter(|_| j.images_deleted_at.is_none() && j.result().is_some());
        let result = j.result().cloned().zip(links).map(|(r, l)| ResultView {
            url: l.url,
            url_expires_at: l.expires_at,
            format: l.format,
            width: r.width,
            height: r.height,
            review: ReviewView::from(&r.review),
            leakage: r.leakage.as_ref().map(LeakageView::from),
            area: r.area,
            comparison: r.comparison.as_ref().map(ComparisonView::from),
            retained_previous: r.retained_previous,
            adopted_at: r.adopted_at.clone(),
            candidate_url: l.candidate_url,
            original_url: l.original_url,
            content_credentials: r.credentials.as_ref().map(CredentialsView::from),
        });
        let mut view = JobView::from(j);
        view.result = result;
        view.images_expired_at = expired_at;
        view.lineage = lineage.map(LineageView::new);
        view
    }
}

impl From<Job> for JobView {
    fn from(j: Job) -> JobView {
        let status = j.status();
        let failure = j.failure().cloned().map(FailureView::from);
        let retained_previous = j.result().is_some_and(|r| r.retained_previous);
        let stage = j.stage();
        let r = j.request;
        JobView {
            id: j.job_id.to_string(),
            operation: j.operation,
            status,
            stage,
            usual_secs: None,
            credits: j.credits.get(),
            settings: EditSettings {
                style: r.style,
                target: r.target,
                strength: r.strength,
                original_asset_id: r.original_asset_id.to_string(),
                mask_asset_id: r.mask_asset_id.map(|a| a.to_string()),
                style_reference_asset_id: r.style_reference_asset_id.map(|a| a.to_string()),
                custom_style: r.custom_style,
                target_description: r.target_description,
                locks: r.locks,
            },
            created_at: j.created_at,
            updated_at: j.updated_at,
            failure,
            result: None,
            repair: j.repair.map(|r| RepairView {
                parent_job_id: r.root_job_id.to_string(),
                instruction: r.instruction,
            }),
            lineage: None,
            images_deleted_at: j.images_deleted_at,
            images_expired_at: None,
            thumbnail_url: None,
            retained_previous,
        }
    }
}

/// A failure a user can read: stable code and a sentence.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = JobFailure)]
pub struct FailureView {
    /// Stable code: `NEEDS_CLARIFICATION`, `BUDGET_PAUSED` (everyone's edits are paused),
    /// `DAILY_LIMIT_REACHED` (the owner's share of the day's model budget is spent), `EDIT_FAILED`,
    /// `CHECK_FAILED`, `TIMED_OUT`, `INVALID_IMAGE`, `INVALID_MASK`, `ASSET_MISSING`,
    /// `REPAIR_BASE_MISSING`, `DISPATCH_LIMIT`, `INTERNAL_ERROR`, `CANCELED` or `PREVIEWED`
    /// (not a failure: a preview stopped after the check by design, its area the one
    /// candidate; nothing drawn, refunded).
    #[schema(value_type = atelier_shared::domain::FailureCode)]
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
    /// `NEEDS_CLARIFICATION`: the subjects the checker found, each with its words (send one
    /// back as `target_description`) and its box in thousandths of the photo. `PREVIEWED`:
    /// the one area the edit would redraw.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateView>,
    /// `NEEDS_CLARIFICATION` or `PREVIEWED` with candidates, in `GET /v1/edits/{id}` while
    /// the images are kept: the photo they are outlined on (presigned, inline, short-lived).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = "uri")]
    pub photo_url: Option<String>,
}

/// One subject a clarification offers.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ClarificationCandidate)]
pub struct CandidateView {
    /// The checker's words for it, e.g. "the one on the left".
    pub label: String,
    pub area: AreaBox,
}

impl From<JobFailure> for FailureView {
    fn from(f: JobFailure) -> FailureView {
        FailureView {
            code: f.code.as_str().to_owned(),
            message: f.message,
            questions: f.questions,
            candidates: f
                .candidates
                .into_iter()
                .map(|c| CandidateView {
                    label: c.label,
                    area: c.area,
                })
                .collect(),
            photo_url: None,
        }
    }
}

/// A page of jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobPage {
    pub items: Vec<JobView>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
