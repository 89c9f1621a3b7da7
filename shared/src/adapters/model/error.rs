//! A failed model call: why, what it may have cost, and the provider's own error read from
//! its body.

use super::call::{CallKind, DEFINITE_ERRORS, MODEL_NOT_FOUND_CODES, Usage};
use super::wire::{ErrorBody, shorten};

/// Why an answer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum Malformed {
    #[error("the response body is not JSON")]
    Json(#[source] serde_json::Error),
    #[error("the response does not have the expected shape")]
    Shape(#[source] serde_json::Error),
    #[error("the response holds no image")]
    NoImage,
    #[error("the image is not valid base64")]
    Base64(#[source] base64::DecodeError),
    #[error("the response holds no answer")]
    NoAnswer,
    #[error("the model refused")]
    Refusal,
    #[error("the answer was cut off (finish reason {0})")]
    Truncated(String),
    #[error("the answer is not valid JSON for its schema")]
    AnswerJson(#[source] serde_json::Error),
    #[error("the answer breaks its schema: {0}")]
    Schema(String),
}

/// A failed model call. Which variants mean "the provider may have charged" is the caller's
/// policy; [`ModelError::usage`] gives what is known.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("building the HTTP client failed")]
    Build {
        #[source]
        source: reqwest::Error,
    },
    /// A programming error caught before sending (e.g. images that do not match the prompt).
    #[error("{call} call not sent: {reason}")]
    InvalidInput { call: CallKind, reason: String },
    #[error("{call} call timed out after {timeout_ms} ms")]
    Timeout {
        call: CallKind,
        timeout_ms: u64,
        #[source]
        source: reqwest::Error,
    },
    /// The provider answered with an error status.
    #[error("{call} call: the provider answered HTTP {status}")]
    Http {
        call: CallKind,
        status: u16,
        /// The provider's error code (`rate_limit_exceeded`, …), if it sent one.
        code: Option<String>,
        /// The provider's error message, shortened.
        message: Option<String>,
    },
    #[error("{call} call failed in transport")]
    Transport {
        call: CallKind,
        #[source]
        source: reqwest::Error,
    },
    /// Every provider of the call has its circuit breaker open (docs/design.md rule 15):
    /// nothing was sent, nothing reserved at them.
    #[error("{call} call not sent: every provider's circuit breaker is open")]
    ProvidersOpen { call: CallKind },
    #[error("{call} call: the answer is malformed")]
    Malformed {
        call: CallKind,
        /// The provider's usage, when the body had one: the call was paid all the same.
        usage: Option<Usage>,
        #[source]
        source: Malformed,
    },
}

/// What a failed call may have cost, from how far it got ([`ModelError::billing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Billing {
    /// It never reached the provider, or the provider refused it before processing: free.
    NotBilled,
    /// It was sent and not refused: the provider may have billed, the cost is unknown.
    MayHaveBilled,
}

impl ModelError {
    /// The call it failed on (`None` for [`ModelError::Build`]).
    pub fn call(&self) -> Option<CallKind> {
        match self {
            ModelError::Build { .. } => None,
            ModelError::InvalidInput { call, .. }
            | ModelError::Timeout { call, .. }
            | ModelError::Http { call, .. }
            | ModelError::Transport { call, .. }
            | ModelError::ProvidersOpen { call }
            | ModelError::Malformed { call, .. } => Some(*call),
        }
    }

    /// Whether the provider may have billed this failed call. A call that never reached it
    /// (not built, not sent, connection refused), that it refused before processing (a 4xx:
    /// bad request, auth, rate limit) or that it answered with its own error proving no output
    /// ([`ModelError::is_definite`]) is free; any other failure after the request was sent (a
    /// 5xx without the provider's definite error, our timeout, a connection dropped mid-way, a
    /// malformed answer) may have been generated and billed.
    pub fn billing(&self) -> Billing {
        match self {
            ModelError::Build { .. }
            | ModelError::InvalidInput { .. }
            | ModelError::ProvidersOpen { .. } => Billing::NotBilled,
            ModelError::Http { status, .. } if (400..500).contains(status) => Billing::NotBilled,
            ModelError::Http { .. } if self.is_definite() => Billing::NotBilled,
            ModelError::Timeout { source, .. } | ModelError::Transport { source, .. }
                if source.is_connect() || source.is_builder() =>
            {
                Billing::NotBilled
            }
            ModelError::Http { .. }
            | ModelError::Timeout { .. }
            | ModelError::Transport { .. }
            | ModelError::Malformed { .. } => Billing::MayHaveBilled,
        }
    }

    /// The provider's usage, known only for a malformed answer that carried it.
    pub fn usage(&self) -> Option<&Usage> {
        match self {
            ModelError::Malformed { usage, .. } => usage.as_ref(),
            _ => None,
        }
    }

    /// Whether the provider answered that the configured model does not exist (any more):
    /// OpenAI's `model_not_found` code on a 404 (its `NotFoundError`) or a 400
    /// (`BadRequestError`). Every call to that model will fail the same way until the
    /// configuration changes, so it is an outage, not a problem of one job.
    pub fn is_model_unavailable(&self) -> bool {
        matches!(
            self,
            ModelError::Http { status: 400 | 404, code: Some(code), .. }
                if MODEL_NOT_FOUND_CODES.contains(&code.as_str())
        )
    }

    /// Whether the failure proves that no generation happened, so the call may move to the
    /// next provider (docs/design.md rule 15, the definite-failure rule): the connection was
    /// refused before any byte was sent, or the provider answered its own parsed error for
    /// "rate limited", "overloaded" or "no such model" ([`DEFINITE_ERRORS`]). Everything else
    /// — an HTML or empty 5xx from a gateway, a 500, 504 or 520–524, a timeout after sending, a
    /// connection dropped mid-answer, a malformed answer — is ambiguous: never failed over,
    /// and it does not count against the provider's circuit breaker.
    pub fn is_definite(&self) -> bool {
        match self {
            ModelError::Http { status, code, .. } => {
                let proves = |c: &str| DEFINITE_ERRORS.contains(&(*status, c));
                code.as_deref().is_some_and(proves) || self.is_model_unavailable()
            }
            ModelError::Transport { source, .. } | ModelError::Timeout { source, .. } => {
                source.is_connect()
            }
            ModelError::Build { .. }
            | ModelError::InvalidInput { .. }
            | ModelError::ProvidersOpen { .. }
            | ModelError::Malformed { .. } => false,
        }
    }

    /// A stable machine code for a job's failure reason or an attempt's outcome.
    pub fn code(&self) -> &'static str {
        if self.is_model_unavailable() {
            return "model_unavailable";
        }
        match self {
            ModelError::Build { .. } => "model_client_build",
            ModelError::InvalidInput { .. } => "model_invalid_input",
            ModelError::Timeout { .. } => "model_timeout",
            ModelError::Http { .. } => "model_provider_error",
            ModelError::Transport { .. } => "model_transport",
            ModelError::Malformed { .. } => "model_malformed",
            ModelError::ProvidersOpen { .. } => "provider_outage",
        }
    }
}

/// An error answer as [`ModelError::Http`], its code read from the provider's own error body
/// (OpenAI's `error.code`, else `error.type`; Gemini's `error.status`, its `error.code` being
/// the HTTP status as a number). A body that is not the provider's error object (a gateway's
/// HTML page, an empty body) has no code: it proves nothing ([`ModelError::is_definite`]).
pub(super) fn http_error(call: CallKind, status: u16, body: &[u8]) -> ModelError {
    let detail = serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|b| b.error);
    ModelError::Http {
        call,
        status,
        code: detail.as_ref().and_then(|d| {
            d.code
                .as_ref()
                .and_then(|c| c.as_str().map(str::to_owned))
                .or_else(|| d.kind.clone())
                .or_else(|| d.status.clone())
        }),
        message: detail.and_then(|d| d.message).map(|m| shorten(&m, 300)),
    }
}

pub(super) fn invalid(call: CallKind, reason: &str) -> ModelError {
    ModelError::InvalidInput {
        call,
        reason: reason.to_owned(),
    }
}
