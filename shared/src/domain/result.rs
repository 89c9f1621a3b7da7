//! What a delivered job carries: the reviewer's verdict, a repair's comparison, the measured
//! leakage outside the selection, and where the image is. Domain values, kept on the job as
//! they are; the API shows them through its own views (`functions/api/src/dto.rs`), so the
//! stored layout is not the public contract.

use serde::{Deserialize, Serialize};

use super::ids::JobId;

/// The reviewer's verdict on a delivered image. `NotVerified` when the reviewer was down,
/// answered malformed JSON, or the budget refused the review: never a silent pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdict {
    Passed,
    Failed,
    NotVerified,
}

/// What the reviewer said, kept with the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRecord {
    pub verdict: ReviewVerdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_reads_as_medium: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest_photographic: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style_leaked: Option<bool>,
    /// The reviewer's notes, or why there is no verdict.
    pub notes: String,
}

impl ReviewRecord {
    /// No verdict, and why: never a pass.
    pub fn not_verified(notes: &str) -> ReviewRecord {
        ReviewRecord {
            verdict: ReviewVerdict::NotVerified,
            target_reads_as_medium: None,
            rest_photographic: None,
            style_leaked: None,
            notes: notes.to_owned(),
        }
    }
}

/// How a repair's candidate compared with the version the user held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComparisonOutcome {
    Improved,
    Unchanged,
    Worse,
    /// The reviewer was down or its answer unusable: no evidence either way.
    NotVerified,
}

impl ComparisonOutcome {
    /// Whether the candidate replaces the version the user holds: only an improvement, or
    /// no evidence either way (then it is delivered `not_verified`).
    pub fn keeps_candidate(self) -> bool {
        matches!(
            self,
            ComparisonOutcome::Improved | ComparisonOutcome::NotVerified
        )
    }
}

/// The comparison kept with a repair's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComparisonRecord {
    pub outcome: ComparisonOutcome,
    pub notes: String,
    /// The job whose image the candidate was compared with.
    pub compared_with: JobId,
}

/// The area the readiness check found around a pet or person, in thousandths of the photo's
/// width and height (x0, y0 top-left; x1, y1 bottom-right, 0..1000): where the edit was meant
/// to change things, and outside which leakage is measured (basis `region`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AreaBox {
    pub x0: u16,
    pub y0: u16,
    pub x1: u16,
    pub y1: u16,
}

/// Measured change outside the selection: parts per million of outside pixels that changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakageRecord {
    pub changed_outside: u64,
    pub outside: u64,
    pub ratio_ppm: u32,
    /// `mask` (a brushed area: exact) or `region` (the checker's box around the target).
    pub basis: String,
}

/// The file a delivered result is downloaded as. The lossless PNG is the master: what
/// repairs start from and what leakage is measured on; the JPEG is its rendition for phones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResultFormat {
    /// Baseline JPEG at quality 85: a tenth of the PNG's size or less for a photo.
    #[default]
    Jpeg,
    /// The lossless master, pixel for pixel what was measured.
    Png,
}

impl ResultFormat {
    /// From its name in a query string (`jpeg`, `png`).
    pub fn parse(s: &str) -> Option<ResultFormat> {
        match s {
            "jpeg" => Some(ResultFormat::Jpeg),
            "png" => Some(ResultFormat::Png),
            _ => None,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            ResultFormat::Jpeg => "jpg",
            ResultFormat::Png => "png",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            ResultFormat::Jpeg => "image/jpeg",
            ResultFormat::Png => "image/png",
        }
    }
}

/// Where the list thumbnail of the rendition at `jpeg_key` is stored: beside it, named after
/// it (`…/v1.jpg` → `…/v1-thumb.jpg`), under the same job prefix, so it goes with it.
pub fn thumbnail_key(jpeg_key: &str) -> String {
    let stem = jpeg_key.strip_suffix(".jpg").unwrap_or(jpeg_key);
    format!("{stem}-thumb.jpg")
}

impl JobResult {
    /// The object key of the result's list thumbnail, when one was stored.
    pub fn thumbnail_key(&self) -> Option<String> {
        self.jpeg_key
            .as_deref()
            .filter(|_| self.thumbnail)
            .map(thumbnail_key)
    }
}

/// A delivered result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResult {
    /// Object key of the delivered image's lossless master (PNG) in the private bucket.
    pub asset_key: String,
    /// Object key of its JPEG rendition, for download. Absent on results stored before
    /// renditions existed: those are downloaded as their master.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jpeg_key: Option<String>,
    /// Whether a small JPEG thumbnail (lists) is stored beside the rendition, at
    /// [`thumbnail_key`] of `jpeg_key`. False on results stored before thumbnails existed:
    /// those are listed without one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub thumbnail: bool,
    pub width: u32,
    pub height: u32,
    pub review: ReviewRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leakage: Option<LeakageRecord>,
    /// The readiness check's box around the target (an edit of a pet or person); none for a
    /// brushed area (the mask is the area), a background, or a repair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub area: Option<AreaBox>,
    /// What the readiness check saw (fed into the edit prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<String>,
    /// A repair: the comparison with the version the user held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<ComparisonRecord>,
    /// A repair that did not improve: `asset_key` is the previous version, kept; the
    /// candidate is stored at `candidate_asset_key` for inspection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retained_previous: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_asset_key: Option<String>,
    /// When the owner chose the candidate over the version the comparison kept (a free
    /// re-pointing of the lineage, no model call): `asset_key` is then the candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopted_at: Option<String>,
    /// What the delivered image's content credentials (C2PA) say. Absent on results stored
    /// before results were signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<super::credentials::ContentCredentials>,
    /// A repair that did not improve: what the kept candidate's credentials say (they become
    /// `credentials` when the owner adopts it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_credentials: Option<super::credentials::ContentCredentials>,
}

/// Why a job's candidate cannot be chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAdoptable {
    /// Not a repair, or a repair whose candidate replaced the previous version already.
    NoRejectedCandidate,
    /// The lineage moved on (its images deleted, or another version is current).
    LineageMoved,
}

impl NotAdoptable {
    pub fn as_str(self) -> &'static str {
        match self {
            NotAdoptable::NoRejectedCandidate => {
                "only a repair whose candidate was not kept has a candidate to choose"
            }
            NotAdoptable::LineageMoved => {
                "the edit no longer holds the version this repair was compared with"
            }
        }
    }
}

impl JobResult {
    /// A repair's result once its owner chose the rejected candidate: the candidate (and
    /// its rendition, `candidate_jpeg_key`) becomes what the job delivers; the comparison
    /// stays, so the record still says the reviewer preferred the other version. `None` when
    /// there is no rejected candidate to choose.
    pub fn with_candidate_adopted(&self, candidate_jpeg_key: String, at: &str) -> Option<Self> {
        let candidate = self.candidate_asset_key.clone()?;
        if !self.retained_previous || self.adopted_at.is_some() {
            return None;
        }
        Some(JobResult {
            asset_key: candidate,
            jpeg_key: Some(candidate_jpeg_key),
            review: ReviewRecord::not_verified(
                "You chose this candidate over the version the comparison kept; it was not reviewed on its own.",
            ),
            leakage: None,
            area: None,
            retained_previous: false,
            candidate_asset_key: None,
            adopted_at: Some(at.to_owned()),
            credentials: self.candidate_credentials.clone(),
            candidate_credentials: None,
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod adopt_tests {
    use super::*;
    use crate::domain::job::fixtures;

    #[test]
    fn only_a_rejected_candidate_not_yet_chosen_can_be_adopted() {
        let kept = fixtures::result();
        assert_eq!(
            kept.with_candidate_adopted("c.jpg".into(), "t"),
            None,
            "no candidate"
        );
        let rejected = JobResult {
            retained_previous: true,
            candidate_asset_key: Some("c.png".into()),
            ..fixtures::result()
        };
        let adopted = rejected
            .with_candidate_adopted("c.jpg".into(), "t")
            .unwrap_or_else(|| panic!("a rejected candidate can be chosen"));
        assert_eq!(adopted.asset_key, "c.png");
        assert_eq!(adopted.jpeg_key.as_deref(), Some("c.jpg"));
        assert_eq!(adopted.review.verdict, ReviewVerdict::NotVerified);
        assert!(!adopted.retained_previous);
        assert_eq!(
            adopted.with_candidate_adopted("c.jpg".into(), "t2"),
            None,
            "once"
        );
    }
}
