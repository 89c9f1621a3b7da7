//! Errors of the shared crate: semantic variants that keep their source, mapped to an HTTP
//! status in the API and to a batch item failure in the consumer.

use crate::domain::Credits;
use crate::domain::validation::FieldErrors;

/// An infrastructure failure talking to AWS, with the operation that failed.
#[derive(Debug, thiserror::Error)]
#[error("{op} failed")]
pub struct AwsError {
    pub op: &'static str,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl AwsError {
    pub fn new(
        op: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> AwsError {
        AwsError {
            op,
            source: Box::new(source),
        }
    }
}

/// The outcomes a use case can end in, other than success.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("validation failed: {0}")]
    Validation(#[from] FieldErrors),
    #[error("{what} not found")]
    NotFound { what: &'static str },
    #[error("asset not found: {field}")]
    AssetNotFound { field: &'static str },
    #[error("idempotency key reused with a different request")]
    IdempotencyConflict,
    #[error("insufficient credits: balance {balance}, price {price}")]
    InsufficientCredits { balance: Credits, price: Credits },
    #[error("too many edits in flight: {in_flight} of {limit}")]
    TooManyInFlight { in_flight: i64, limit: u32 },
    /// The user's share of the day's model budget is spent (rule 12) until the next UTC day.
    #[error("the daily limit is reached; a new day starts in {retry_after_secs} s")]
    DailyLimitReached { retry_after_secs: u32 },
    /// The user's previews for the UTC day are used (nothing was charged or counted).
    #[error("the day's {limit} previews are used; a new day starts in {retry_after_secs} s")]
    PreviewLimitReached { limit: u32, retry_after_secs: u32 },
    /// The caller's upload slots or bytes for the UTC day are used up; nothing was presigned.
    #[error(
        "upload limit reached: {slots_used} of {slot_limit} slots, {bytes_used} of {byte_limit} bytes today"
    )]
    UploadLimitReached {
        slots_used: u32,
        slot_limit: u32,
        bytes_used: u64,
        byte_limit: u64,
        /// Until the next UTC day, when the counters start over.
        retry_after: std::time::Duration,
    },
    #[error("the job cannot be canceled: it is {}", state.as_str())]
    NotCancelable { state: crate::domain::JobState },
    #[error("the edit cannot be repaired: it is {}", state.as_str())]
    NotRepairable { state: crate::domain::JobState },
    #[error("this edit's repairs stopped: a repair did not improve on the version kept")]
    RepairsStopped,
    #[error("this edit has used its repairs")]
    RepairLimitReached,
    #[error("a repair of this edit is in progress")]
    RepairInProgress,
    /// Choosing a repair's candidate that is not a rejected one of the current lineage.
    #[error("this candidate cannot be chosen: {}", why.as_str())]
    CandidateNotAdoptable { why: crate::domain::NotAdoptable },
    #[error("invalid cursor")]
    InvalidCursor,
    #[error("the account is on hold: a refunded or disputed purchase left credits owing")]
    AccountOnHold,
    #[error("the account is closed: it was deleted at its owner's or an operator's request")]
    AccountClosed,
    /// An upload a queued or processing job still reads.
    #[error("the asset is used by {job_id}, which is {}", state.as_str())]
    AssetInUse {
        job_id: crate::domain::JobId,
        state: crate::domain::JobState,
    },
    /// Deleting a job's images while it (or a repair of its lineage) still runs.
    #[error("the edit is {}; its images can be deleted once it has finished", state.as_str())]
    ImagesInUse { state: crate::domain::JobState },
    /// A repair of an edit whose images were deleted.
    #[error("this edit's images were deleted")]
    ImagesDeleted,
    /// A new device beyond the per-user limit; nothing was registered.
    #[error("{limit} devices are registered already")]
    DeviceLimitReached { limit: u32 },
    #[error("buying credits is not configured")]
    PaymentsNotConfigured,
    /// The provider adapter's own error, kept whole as the source (boxed, so this layer names
    /// no adapter: the arrows point down).
    #[error("the payment provider refused or failed")]
    PaymentProvider(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Data that does not fit the schema, or a store answer that cannot happen: a bug or a
    /// corrupted item, never the caller's fault. Built with [`Error::corrupt`] (a check of
    /// ours found it) or [`Error::corrupt_by`] (a (de)serializer refused it; kept as the source).
    #[error("the store returned data that does not fit the schema: {what}")]
    Corrupt {
        /// What was being read or written, and what was wrong when no source says it.
        what: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    #[error("gave up after {attempts} conflicting transactions")]
    Contention { attempts: u32 },
    #[error(transparent)]
    Aws(#[from] AwsError),
}

impl Error {
    /// [`Error::Corrupt`] found by a check of ours: `what` says what was wrong.
    pub fn corrupt(what: impl Into<String>) -> Error {
        Error::Corrupt {
            what: what.into(),
            source: None,
        }
    }

    /// [`Error::Corrupt`] refused by a (de)serializer: `what` says what was being converted,
    /// `source` why it failed.
    pub fn corrupt_by(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Corrupt {
            what: what.into(),
            source: Some(Box::new(source)),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error and its sources, one line: `a failed: b: c`. Logged once at each function's edge.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_item_keeps_what_and_why() {
        let why = serde_json::from_str::<u32>("\"x\"").expect_err("not a number");
        let e = Error::corrupt_by("deserialize JobItem", why);
        assert!(std::error::Error::source(&e).is_some());
        let line = chain(&e);
        assert!(
            line.starts_with(
                "the store returned data that does not fit the schema: deserialize JobItem: "
            ),
            "{line}"
        );
        assert!(line.contains("invalid type"), "{line}");
        let e = Error::corrupt("account vanished");
        assert!(std::error::Error::source(&e).is_none());
        assert_eq!(
            chain(&e),
            "the store returned data that does not fit the schema: account vanished"
        );
    }
}
