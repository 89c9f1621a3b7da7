//! Job lifecycle. The enum is the vocabulary; the transitions themselves are the conditional
//! writes in `store::jobs` (claim, deliver, fail/cancel with refund), written there once.

use serde::{Deserialize, Serialize};

/// A job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Charged, waiting for the consumer.
    Queued,
    /// Claimed by a consumer; never re-enters a paid call.
    Processing,
    Succeeded,
    /// Failed and refunded.
    Failed,
    /// Canceled while queued, and refunded.
    Canceled,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Processing => "processing",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Canceled => "canceled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Failed | JobState::Canceled
        )
    }
}
