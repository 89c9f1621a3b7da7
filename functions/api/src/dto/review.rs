//! How a delivered image was judged: the reviewer's verdict, a repair's comparison and the
//! measured leakage, as kept with a result.

use atelier_shared::domain::{
    ComparisonOutcome, ComparisonRecord, LeakageRecord, ReviewRecord, ReviewVerdict,
};
use serde::Serialize;
use utoipa::ToSchema;

/// The reviewer's verdict on a delivered image. `NotVerified` when the reviewer was down,
/// answered malformed JSON, or the budget refused the review: never a silent pass.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = ReviewVerdict)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdictView {
    Passed,
    Failed,
    NotVerified,
}

impl From<ReviewVerdict> for ReviewVerdictView {
    fn from(v: ReviewVerdict) -> ReviewVerdictView {
        match v {
            ReviewVerdict::Passed => ReviewVerdictView::Passed,
            ReviewVerdict::Failed => ReviewVerdictView::Failed,
            ReviewVerdict::NotVerified => ReviewVerdictView::NotVerified,
        }
    }
}

/// What the reviewer said, kept with the result.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ReviewRecord)]
pub struct ReviewView {
    pub verdict: ReviewVerdictView,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_reads_as_medium: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rest_photographic: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style_leaked: Option<bool>,
    /// The reviewer's notes, or why there is no verdict.
    pub notes: String,
}

impl From<&ReviewRecord> for ReviewView {
    fn from(r: &ReviewRecord) -> ReviewView {
        ReviewView {
            verdict: r.verdict.into(),
            target_reads_as_medium: r.target_reads_as_medium,
            rest_photographic: r.rest_photographic,
            style_leaked: r.style_leaked,
            notes: r.notes.clone(),
        }
    }
}

/// How a repair's candidate compared with the version the user held.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[schema(as = ComparisonOutcome)]
#[serde(rename_all = "snake_case")]
pub enum ComparisonOutcomeView {
    Improved,
    Unchanged,
    Worse,
    /// The reviewer was down or its answer unusable: no evidence either way.
    NotVerified,
}

/// The comparison kept with a repair's result.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ComparisonRecord)]
pub struct ComparisonView {
    pub outcome: ComparisonOutcomeView,
    pub notes: String,
    /// The job whose image the candidate was compared with.
    pub compared_with: String,
}

impl From<&ComparisonRecord> for ComparisonView {
    fn from(c: &ComparisonRecord) -> ComparisonView {
        ComparisonView {
            outcome: match c.outcome {
                ComparisonOutcome::Improved => ComparisonOutcomeView::Improved,
                ComparisonOutcome::Unchanged => ComparisonOutcomeView::Unchanged,
                ComparisonOutcome::Worse => ComparisonOutcomeView::Worse,
                ComparisonOutcome::NotVerified => ComparisonOutcomeView::NotVerified,
            },
            notes: c.notes.clone(),
            compared_with: c.compared_with.to_string(),
        }
    }
}

/// Measured change outside the selection: parts per million of outside pixels that changed.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = LeakageRecord)]
pub struct LeakageView {
    pub changed_outside: u64,
    pub outside: u64,
    pub ratio_ppm: u32,
    /// `mask` (a brushed area: exact) or `region` (the checker's box around the target).
    pub basis: String,
}

impl From<&LeakageRecord> for LeakageView {
    fn from(l: &LeakageRecord) -> LeakageView {
        LeakageView {
            changed_outside: l.changed_outside,
            outside: l.outside,
            ratio_ppm: l.ratio_ppm,
            basis: l.basis.clone(),
        }
    }
}
