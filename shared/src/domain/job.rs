//! Job lifecycle. Transitions are made by conditional writes in the store; this enum is the
//! vocabulary, and which transitions exist is written here once.

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

    /// Whether `self -> to` is a transition of the lifecycle.
    pub fn can_become(self, to: JobState) -> bool {
        use JobState::*;
        matches!(
            (self, to),
            (Queued, Processing)
                | (Queued, Canceled)
                | (Queued, Failed)
                | (Processing, Succeeded)
                | (Processing, Failed)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::JobState::*;

    #[test]
    fn terminal_states_go_nowhere() {
        for from in [Succeeded, Failed, Canceled] {
            for to in [Queued, Processing, Succeeded, Failed, Canceled] {
                assert!(!from.can_become(to), "{from:?} -> {to:?}");
            }
        }
        assert!(
            !Processing.can_become(Queued),
            "a claimed job never goes back to the queue"
        );
        assert!(
            !Processing.can_become(Canceled),
            "a job being paid for cannot be canceled"
        );
    }
}
