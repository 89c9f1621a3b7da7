//! What a delivered job carries: the reviewer's verdict, a repair's comparison, the measured
//! leakage outside the selection, and where the image is. Domain values, kept on the job as
//! they are; the API shows them through its own views (`functions/api/src/dto.rs`), so the
//! stored layout is not the public contract.

use serde::{Deserialize, Serialize};

use super::JobId;

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

/// A delivered result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResult {
    /// Object key of the delivered image's lossless master (PNG) in the private bucket.
    pub asset_key: String,
    /// Object key of its JPEG rendition, for download. Absent on results stored before
    /// renditions existed: those are downloaded as their master.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jpeg_key: Option<String>,
    pub width: u32,
    pub height: u32,
    pub review: ReviewRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leakage: Option<LeakageRecord>,
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
}
