//! The catalogue of job failures: every way a charged job can end without a result, with the
//! stable code clients and tests match, the sentence the user reads, and whether the job's
//! credits come back. Nothing else writes a failure code or message.

use serde::{Deserialize, Serialize};

use super::result::AreaBox;

/// Why a charged job ended without a result. Stored and served as its `SCREAMING_SNAKE` code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FailureCode {
    /// An upload is not a usable PNG, JPEG or WebP image within the limits.
    InvalidImage,
    /// The brushed area is empty, not a PNG, or not the photo's size.
    InvalidMask,
    /// An upload the job names is no longer in the bucket.
    AssetMissing,
    /// The day's model budget refused the reservation (halted or over the cap).
    BudgetPaused,
    /// The owner's share of the day's model budget (rule 12) refused the reservation. Not
    /// `BUDGET_PAUSED`: edits are not paused for everyone, only this user's are, until the
    /// next UTC day, and the client should say so.
    DailyLimitReached,
    /// The readiness check failed (provider error, timeout, malformed answer).
    CheckFailed,
    /// The readiness check asked questions instead of allowing the edit.
    NeedsClarification,
    /// The edit call failed or returned an unusable image.
    EditFailed,
    /// A repair's starting version is gone or unreadable.
    RepairBaseMissing,
    /// Our own fault (store, storage, image processing).
    InternalError,
    /// The job stayed `queued` past the queued deadline since it was created (sweeper). The
    /// stable code predates the deadline (it once counted dispatches) and stays for clients.
    DispatchLimit,
    /// The job stayed `processing` past the stuck threshold (sweeper).
    TimedOut,
    /// The owner canceled it while queued.
    Canceled,
    /// Not a failure: a preview (`"preview": true`) stops after the check by design, with
    /// the area it found as its one candidate; nothing was drawn and the charge comes back.
    Previewed,
}

impl FailureCode {
    pub const ALL: [FailureCode; 14] = [
        FailureCode::InvalidImage,
        FailureCode::InvalidMask,
        FailureCode::AssetMissing,
        FailureCode::BudgetPaused,
        FailureCode::DailyLimitReached,
        FailureCode::CheckFailed,
        FailureCode::NeedsClarification,
        FailureCode::EditFailed,
        FailureCode::RepairBaseMissing,
        FailureCode::InternalError,
        FailureCode::DispatchLimit,
        FailureCode::TimedOut,
        FailureCode::Canceled,
        FailureCode::Previewed,
    ];

    /// The stable machine code (what the API shows and clients match).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::InvalidImage => "INVALID_IMAGE",
            FailureCode::InvalidMask => "INVALID_MASK",
            FailureCode::AssetMissing => "ASSET_MISSING",
            FailureCode::BudgetPaused => "BUDGET_PAUSED",
            FailureCode::DailyLimitReached => "DAILY_LIMIT_REACHED",
            FailureCode::CheckFailed => "CHECK_FAILED",
            FailureCode::NeedsClarification => "NEEDS_CLARIFICATION",
            FailureCode::EditFailed => "EDIT_FAILED",
            FailureCode::RepairBaseMissing => "REPAIR_BASE_MISSING",
            FailureCode::InternalError => "INTERNAL_ERROR",
            FailureCode::DispatchLimit => "DISPATCH_LIMIT",
            FailureCode::TimedOut => "TIMED_OUT",
            FailureCode::Canceled => "CANCELED",
            FailureCode::Previewed => "PREVIEWED",
        }
    }

    /// The sentence the user reads.
    pub fn message(self) -> &'static str {
        match self {
            FailureCode::InvalidImage => {
                "An uploaded file is not a usable PNG, JPEG or WebP image within our size limits. Your credits were refunded."
            }
            FailureCode::InvalidMask => {
                "The brushed area is not usable: it must be a PNG mask exactly the size of the photo, with something brushed. Your credits were refunded."
            }
            FailureCode::AssetMissing => "An uploaded image is gone. Your credits were refunded.",
            FailureCode::BudgetPaused => {
                "Edits are temporarily paused. Your credits were refunded; please try again later."
            }
            FailureCode::DailyLimitReached => {
                "You have reached today's limit of edits. Your credits were refunded; please try again after midnight UTC."
            }
            FailureCode::CheckFailed => {
                "We could not check your photo before editing it. Your credits were refunded; please try again."
            }
            FailureCode::NeedsClarification => {
                "Your request needs a detail before we can edit it. Your credits were refunded."
            }
            FailureCode::EditFailed => {
                "The image model could not make this edit. Your credits were refunded; please try again."
            }
            FailureCode::RepairBaseMissing => {
                "The version to repair is no longer available. Your credits were refunded."
            }
            FailureCode::InternalError => {
                "Something went wrong on our side. Your credits were refunded."
            }
            FailureCode::DispatchLimit => {
                "Your edit waited too long to start and was stopped. Your credits were refunded; please try again."
            }
            FailureCode::TimedOut => {
                "Your edit took too long and was stopped. Your credits were refunded; please try again."
            }
            FailureCode::Canceled => {
                "Canceled before processing started. Your credits were refunded."
            }
            FailureCode::Previewed => {
                "This is the area that would be redrawn. Nothing was drawn and your credits were refunded."
            }
        }
    }

    /// Whether ending a job this way gives its credits back. Every failure does today: a
    /// refused or unhelpful edit costs the user nothing (the model's cost is ours).
    pub fn refunded(self) -> bool {
        true
    }

    /// The code for its stable text.
    pub fn parse(code: &str) -> Option<FailureCode> {
        FailureCode::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

impl std::fmt::Display for FailureCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Most questions a failure carries back to the user.
pub const MAX_QUESTIONS: usize = 3;

/// How a job failed, as kept on the job: the code, its sentence at the time, and for
/// [`FailureCode::NeedsClarification`] the checker's questions and the subjects it found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFailure {
    pub code: FailureCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
}

/// One subject a clarification offers: the checker's words for it (sent back as the answer)
/// and where it is on the photo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    pub label: String,
    pub area: AreaBox,
}

impl JobFailure {
    pub fn new(code: FailureCode) -> JobFailure {
        JobFailure {
            code,
            message: code.message().to_owned(),
            questions: Vec::new(),
            candidates: Vec::new(),
        }
    }

    /// A clarification request with at most [`MAX_QUESTIONS`] questions and the subjects the
    /// checker outlined.
    pub fn needs_clarification(questions: Vec<String>, candidates: Vec<Candidate>) -> JobFailure {
        JobFailure {
            questions: questions.into_iter().take(MAX_QUESTIONS).collect(),
            candidates,
            ..JobFailure::new(FailureCode::NeedsClarification)
        }
    }
}

/// The one candidate of a preview: the area the checker would have redrawn.
pub const PREVIEW_AREA_LABEL: &str = "the area to redraw";

impl JobFailure {
    /// A preview's end: the area the check found (none when it outlined nothing, as for a
    /// background it leaves unboxed).
    pub fn previewed(area: Option<AreaBox>) -> JobFailure {
        JobFailure {
            candidates: area
                .map(|area| Candidate {
                    label: PREVIEW_AREA_LABEL.to_owned(),
                    area,
                })
                .into_iter()
                .collect(),
            ..JobFailure::new(FailureCode::Previewed)
        }
    }
}

impl From<FailureCode> for JobFailure {
    fn from(code: FailureCode) -> JobFailure {
        JobFailure::new(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_text_and_storage() {
        for code in FailureCode::ALL {
            assert_eq!(FailureCode::parse(code.as_str()), Some(code));
            let stored = serde_json::to_value(code).expect("a code serializes");
            assert_eq!(stored, serde_json::json!(code.as_str()), "{code:?}");
        }
        assert_eq!(FailureCode::parse("NO_SUCH_CODE"), None);
    }

    #[test]
    fn the_message_says_credits_came_back_exactly_when_they_did() {
        for code in FailureCode::ALL {
            assert_eq!(
                code.message().contains("refunded"),
                code.refunded(),
                "{code:?}: {}",
                code.message()
            );
        }
    }

    #[test]
    fn a_clarification_keeps_at_most_three_questions() {
        let f = JobFailure::needs_clarification(vec!["a".into(); 5], Vec::new());
        assert_eq!(f.code, FailureCode::NeedsClarification);
        assert_eq!(f.questions.len(), MAX_QUESTIONS);
    }

    #[test]
    fn a_failure_is_stored_with_the_same_layout_as_before_the_enum() {
        let f = JobFailure::new(FailureCode::TimedOut);
        let v = serde_json::to_value(&f).expect("a failure serializes");
        assert_eq!(v["code"], "TIMED_OUT");
        assert_eq!(v["message"], FailureCode::TimedOut.message());
        assert!(v.get("questions").is_none());
    }
}
