//! The model client: the OpenAI image-edit and chat-completions API over HTTPS, which many
//! providers offer. The stand-in model server speaks the same wire, so tests exercise this
//! very client with another base URL (not a second implementation, so no trait).
//!
//! Money rules this module keeps:
//! - **No automatic retry.** Every method sends exactly one request. reqwest 0.13 would by
//!   default retry protocol-level refusals; the client is built with `retry::never()`. (The
//!   connection pool may still resend a request that provably never left on a connection the
//!   server had already closed; that cannot reach the model twice.)
//! - **Timeouts on every call**, shorter for the vision calls than for the edit.
//! - **The provider's usage is returned typed** ([`Usage`]), or `None` when the provider sent
//!   none ("unknown cost": the caller keeps its reservation booked). A malformed answer that
//!   came with usage still reports it ([`ModelError::usage`]), since the call was paid.
//! - **Every request carries `X-Client-Request-Id: <job id>`**, which the provider logs and
//!   the stand-in server counts calls by.

pub mod catalogue;
pub mod cost;
pub mod gemini;
pub mod setup;
pub mod vision;

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use reqwest::multipart::{Form, Part};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::adapters::tls::Alpn;
use crate::domain::JobId;
pub use crate::domain::prompts::{EditPrompt, ImageRole, VisionPrompt};
use catalogue::Provider;
use vision::VisionAnswer;
pub use vision::{Candidate, Comparison, Outcome, Readiness, Review, TargetBox, Verdict};

/// Provider error codes that mean "no such model" (OpenAI: `model_not_found`, also sent for a
/// model past its shutdown; `invalid_model` on some endpoints; Gemini's `NOT_FOUND` status on a
/// 404 of `models/{model}:generateContent`, whose only variable part is the model).
pub const MODEL_NOT_FOUND_CODES: [&str; 3] = ["model_not_found", "invalid_model", "NOT_FOUND"];

/// The error answers that prove the provider generated nothing (docs/design.md rule 15, the
/// definite-failure rule): the HTTP status with the code its own parsed error body names
/// (`error.code`, else `error.type`, else Gemini's `error.status`). Anything else after the
/// request was sent — a CDN's HTML page, an empty body, a 500 or 520–524, a 504 — may come
/// from a gateway in front of a model that is still generating: ambiguous.
/// - OpenAI (https://platform.openai.com/docs/guides/error-codes): 429 "Rate limit reached"
///   (`rate_limit_exceeded`) and "You exceeded your current quota" (`insufficient_quota`);
///   503 "The engine is currently overloaded" / "Slow Down" (`server_error`, newer answers
///   `service_unavailable_error` / `server_is_overloaded`, `slow_down`).
/// - Gemini (https://ai.google.dev/gemini-api/docs/troubleshooting): 429
///   `RESOURCE_EXHAUSTED`, 503 `UNAVAILABLE` ("the service may be temporarily overloaded").
/// - "No such model" on either ([`MODEL_NOT_FOUND_CODES`], [`ModelError::is_model_unavailable`]).
pub const DEFINITE_ERRORS: [(u16, &str); 8] = [
    (429, "rate_limit_exceeded"),
    (429, "insufficient_quota"),
    (503, "server_error"),
    (503, "service_unavailable_error"),
    (503, "server_is_overloaded"),
    (503, "slow_down"),
    (429, "RESOURCE_EXHAUSTED"),
    (503, "UNAVAILABLE"),
];

/// The request header that names the job a call belongs to.
pub const CLIENT_REQUEST_ID_HEADER: &str = "X-Client-Request-Id";

/// Which paid call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// The readiness check (vision).
    Check,
    /// The image edit.
    Edit,
    /// The review of a result (vision).
    Review,
    /// The comparison of a repair candidate (vision).
    Compare,
}

impl CallKind {
    pub const ALL: [CallKind; 4] = [
        CallKind::Check,
        CallKind::Edit,
        CallKind::Review,
        CallKind::Compare,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CallKind::Check => "check",
            CallKind::Edit => "edit",
            CallKind::Review => "review",
            CallKind::Compare => "compare",
        }
    }
}

impl std::fmt::Display for CallKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Image quality asked of the image model (`quality` field); the estimate depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quality {
    Low,
    #[default]
    Medium,
    High,
    Auto,
}

impl Quality {
    pub fn as_str(self) -> &'static str {
        match self {
            Quality::Low => "low",
            Quality::Medium => "medium",
            Quality::High => "high",
            Quality::Auto => "auto",
        }
    }

    pub fn parse(raw: &str) -> Option<Quality> {
        [Quality::Low, Quality::Medium, Quality::High, Quality::Auto]
            .into_iter()
            .find(|q| q.as_str() == raw)
    }
}

/// Output size asked of the image model (`size` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum EditSize {
    #[default]
    Auto,
    Square,
    Landscape,
    Portrait,
}

impl EditSize {
    pub fn as_str(self) -> &'static str {
        match self {
            EditSize::Auto => "auto",
            EditSize::Square => "1024x1024",
            EditSize::Landscape => "1536x1024",
            EditSize::Portrait => "1024x1536",
        }
    }

    /// The supported size closest in aspect to a `width`×`height` photo, so the result
    /// resizes back to the original without distortion worth noticing.
    pub fn for_dimensions(width: u32, height: u32) -> EditSize {
        let (w, h) = (u64::from(width.max(1)), u64::from(height.max(1)));
        // 1.25 splits square (1.0) from 3:2 (1.5) in either direction.
        if w * 4 > h * 5 {
            EditSize::Landscape
        } else if h * 4 > w * 5 {
            EditSize::Portrait
        } else {
            EditSize::Square
        }
    }
}

/// What the provider says a call used. Every field is optional because providers differ;
/// `None` for the whole value means the provider sent no usage at all (unknown cost).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Image calls: the text part of the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_text_tokens: Option<u64>,
    /// Image calls: the image part of the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_image_tokens: Option<u64>,
}

/// Configuration of the client. The API key never appears in `Debug` output.
#[derive(Clone)]
pub struct ModelConfig {
    /// Base URL without `/v1`, e.g. `https://api.openai.com` or `http://127.0.0.1:8788`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` when set (the stand-in server needs none).
    pub api_key: Option<String>,
    /// Model for the readiness check, review and comparison (its catalogue row).
    pub vision_model: &'static catalogue::Model,
    /// Model for the edit (its catalogue row).
    pub image_model: &'static catalogue::Model,
    /// Whole-request timeout of a vision call.
    pub vision_timeout: Duration,
    /// Whole-request timeout of an edit call (image models take tens of seconds).
    pub edit_timeout: Duration,
    pub connect_timeout: Duration,
    pub quality: Quality,
}

impl ModelConfig {
    /// Defaults for a base URL: the catalogue's default models ([`catalogue::DEFAULT_VISION_MODEL`],
    /// [`catalogue::DEFAULT_IMAGE_MODEL`]), 45 s for a
    /// vision call, 180 s for an edit, medium quality, no key. A job's check, edit and review
    /// at these timeouts, plus the time to store and deliver, fit the consumer's 300 s.
    pub fn new(base_url: impl Into<String>) -> ModelConfig {
        ModelConfig {
            base_url: base_url.into(),
            api_key: None,
            vision_model: &catalogue::CATALOGUE[catalogue::DEFAULT_VISION_ROW],
            image_model: &catalogue::CATALOGUE[catalogue::DEFAULT_IMAGE_ROW],
            vision_timeout: Duration::from_secs(45),
            edit_timeout: Duration::from_secs(180),
            connect_timeout: Duration::from_secs(10),
            quality: Quality::Medium,
        }
    }
}

impl std::fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("vision_model", &self.vision_model.id)
            .field("image_model", &self.image_model.id)
            .field("vision_timeout", &self.vision_timeout)
            .field("edit_timeout", &self.edit_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("quality", &self.quality)
            .finish()
    }
}

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

/// One image sent with a call, as PNG bytes (re-encoded by the caller after decoding, which
/// also drops metadata such as GPS position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInput {
    pub role: ImageRole,
    pub png: Vec<u8>,
}

impl ImageInput {
    pub fn png(role: ImageRole, png: Vec<u8>) -> ImageInput {
        ImageInput { role, png }
    }
}

/// An edit call's inputs.
#[derive(Debug, Clone)]
pub struct EditCall {
    pub prompt: EditPrompt,
    /// In the prompt's order ([`EditPrompt::images`]).
    pub images: Vec<ImageInput>,
    /// Required when the prompt is masked: a PNG with alpha, transparent = editable, the
    /// first image's size (see `imaging::Mask::to_alpha_png`).
    pub mask_png: Option<Vec<u8>>,
    pub size: EditSize,
}

/// A successful edit.
#[derive(Debug, Clone)]
pub struct EditReply {
    /// The image as the provider encoded it (PNG unless asked otherwise).
    pub image: Vec<u8>,
    pub usage: Option<Usage>,
    /// The provider's `x-request-id`, for support.
    pub provider_request_id: Option<String>,
}

/// A successful, validated vision answer.
#[derive(Debug, Clone)]
pub struct VisionReply<T> {
    pub answer: T,
    pub usage: Option<Usage>,
    pub provider_request_id: Option<String>,
}

// Wire shapes of the provider's answers (lenient about fields we do not read).

#[derive(Deserialize)]
struct ImagesResponse {
    #[serde(default)]
    data: Vec<ImageDatum>,
}

#[derive(Deserialize)]
struct ImageDatum {
    #[serde(default)]
    b64_json: Option<String>,
}

#[derive(Deserialize)]
struct ImageUsageWire {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    total_tokens: Option<u64>,
    input_tokens_details: Option<InputDetailsWire>,
}

#[derive(Deserialize)]
struct InputDetailsWire {
    text_tokens: Option<u64>,
    image_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    choices: Vec<ChatChoice>,
}

#[derive(Deserialize)]
struct ChatChoice {
    message: ChatMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChatMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct ChatUsageWire {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    /// Gemini's canonical status (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`, `NOT_FOUND`, …).
    #[serde(default)]
    status: Option<String>,
}

fn image_usage(body: &Value) -> Option<Usage> {
    let wire: ImageUsageWire = serde_json::from_value(body.get("usage")?.clone()).ok()?;
    let details = wire.input_tokens_details;
    Some(Usage {
        input_tokens: wire.input_tokens,
        output_tokens: wire.output_tokens,
        total_tokens: wire.total_tokens,
        input_text_tokens: details.as_ref().and_then(|d| d.text_tokens),
        input_image_tokens: details.as_ref().and_then(|d| d.image_tokens),
    })
}

fn chat_usage(body: &Value) -> Option<Usage> {
    let wire: ChatUsageWire = serde_json::from_value(body.get("usage")?.clone()).ok()?;
    Some(Usage {
        input_tokens: wire.prompt_tokens,
        output_tokens: wire.completion_tokens,
        total_tokens: wire.total_tokens,
        input_text_tokens: None,
        input_image_tokens: None,
    })
}

fn shorten(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The client. Cheap to clone; build it once per process.
#[derive(Debug, Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    config: ModelConfig,
    base: String,
}

impl ModelClient {
    pub fn new(config: ModelConfig) -> Result<ModelClient, ModelError> {
        let http = crate::adapters::tls::shared(reqwest::Client::builder(), Alpn::Any)
            .connect_timeout(config.connect_timeout)
            .retry(reqwest::retry::never())
            .build()
            .map_err(|source| ModelError::Build { source })?;
        let base = config.base_url.trim_end_matches('/').to_owned();
        Ok(ModelClient { http, config, base })
    }

    /// The same client with the provider key set (read while the client was built).
    pub fn with_api_key(mut self, api_key: Option<String>) -> ModelClient {
        self.config.api_key = api_key;
        self
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The catalogue row of the model that serves calls of this kind (what they cost).
    pub fn model(&self, kind: CallKind) -> &'static catalogue::Model {
        match kind {
            CallKind::Edit => self.config.image_model,
            CallKind::Check | CallKind::Review | CallKind::Compare => self.config.vision_model,
        }
    }

    /// The whole-request timeout of a call of this kind.
    pub fn timeout(&self, kind: CallKind) -> Duration {
        match kind {
            CallKind::Edit => self.config.edit_timeout,
            CallKind::Check | CallKind::Review | CallKind::Compare => self.config.vision_timeout,
        }
    }

    /// The same client with every call's timeout at most `limit`: a call made through it
    /// returns (or times out) within `limit`, so it cannot outlive the invocation.
    pub fn within(&self, limit: Duration) -> ModelClient {
        let mut bounded = self.clone();
        bounded.config.vision_timeout = bounded.config.vision_timeout.min(limit);
        bounded.config.edit_timeout = bounded.config.edit_timeout.min(limit);
        bounded
    }

    /// The image edit: `POST {base}/v1/images/edits`, one request, no retry.
    pub async fn edit(&self, job: &JobId, call: EditCall) -> Result<EditReply, ModelError> {
        let kind = CallKind::Edit;
        let roles: Vec<ImageRole> = call.images.iter().map(|i| i.role).collect();
        if roles != call.prompt.images {
            return Err(invalid(
                kind,
                "the images do not match the prompt's numbering",
            ));
        }
        if call.prompt.masked != call.mask_png.is_some() {
            return Err(invalid(kind, "a masked prompt needs a mask, and only it"));
        }
        if self.config.image_model.provider == Provider::Gemini {
            return self.gemini_edit(job, call).await;
        }
        let mut form = Form::new()
            .text("model", self.config.image_model.id)
            .text("prompt", call.prompt.text)
            .text("size", call.size.as_str())
            .text("quality", self.config.quality.as_str())
            .text("n", "1");
        for (i, image) in call.images.into_iter().enumerate() {
            form = form.part(
                "image[]",
                png_part(kind, image.png, format!("image-{}.png", i + 1))?,
            );
        }
        if let Some(mask) = call.mask_png {
            form = form.part("mask", png_part(kind, mask, "mask.png".to_owned())?);
        }
        let request = self
            .http
            .post(format!("{}/v1/images/edits", self.base))
            .multipart(form);
        let (body, request_id) = self
            .send(job, kind, request, self.config.edit_timeout)
            .await?;
        let usage = image_usage(&body);
        let malformed = |source| ModelError::Malformed {
            call: kind,
            usage,
            source,
        };
        let parsed: ImagesResponse =
            serde_json::from_value(body).map_err(|e| malformed(Malformed::Shape(e)))?;
        let b64 = parsed
            .data
            .into_iter()
            .next()
            .and_then(|d| d.b64_json)
            .ok_or_else(|| malformed(Malformed::NoImage))?;
        let image = BASE64
            .decode(b64.as_bytes())
            .map_err(|e| malformed(Malformed::Base64(e)))?;
        Ok(EditReply {
            image,
            usage,
            provider_request_id: request_id,
        })
    }

    /// The readiness check (`readiness_check` schema).
    pub async fn check_readiness(
        &self,
        job: &JobId,
        prompt: &VisionPrompt,
        images: &[ImageInput],
    ) -> Result<VisionReply<Readiness>, ModelError> {
        self.vision(job, CallKind::Check, prompt, images).await
    }

    /// The review of an edit (`edit_review` schema).
    pub async fn review(
        &self,
        job: &JobId,
        prompt: &VisionPrompt,
        images: &[ImageInput],
    ) -> Result<VisionReply<Review>, ModelError> {
        self.vision(job, CallKind::Review, prompt, images).await
    }

    /// The comparison of a repair candidate (`repair_comparison` schema).
    pub async fn compare(
        &self,
        job: &JobId,
        prompt: &VisionPrompt,
        images: &[ImageInput],
    ) -> Result<VisionReply<Comparison>, ModelError> {
        self.vision(job, CallKind::Compare, prompt, images).await
    }

    async fn vision<T: VisionAnswer>(
        &self,
        job: &JobId,
        kind: CallKind,
        prompt: &VisionPrompt,
        images: &[ImageInput],
    ) -> Result<VisionReply<T>, ModelError> {
        let roles: Vec<ImageRole> = images.iter().map(|i| i.role).collect();
        if roles != prompt.images {
            return Err(invalid(
                kind,
                "the images do not match the prompt's numbering",
            ));
        }
        if self.config.vision_model.provider == Provider::Gemini {
            return self.gemini_vision(job, kind, prompt, images).await;
        }
        let body = self.chat_vision_body::<T>(prompt, images);
        let request = self
            .http
            .post(format!("{}/v1/chat/completions", self.base))
            .json(&body);
        let (body, request_id) = self
            .send(job, kind, request, self.config.vision_timeout)
            .await?;
        let usage = chat_usage(&body);
        let malformed = |source| ModelError::Malformed {
            call: kind,
            usage,
            source,
        };
        let parsed: ChatResponse =
            serde_json::from_value(body).map_err(|e| malformed(Malformed::Shape(e)))?;
        let choice = parsed
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| malformed(Malformed::NoAnswer))?;
        if choice.message.refusal.is_some() {
            return Err(malformed(Malformed::Refusal));
        }
        if let Some(reason) = choice.finish_reason.filter(|r| r != "stop") {
            return Err(malformed(Malformed::Truncated(reason)));
        }
        let content = choice
            .message
            .content
            .ok_or_else(|| malformed(Malformed::NoAnswer))?;
        let answer = T::parse(&content).map_err(malformed)?;
        Ok(VisionReply {
            answer,
            usage,
            provider_request_id: request_id,
        })
    }

    /// The Chat Completions body of a vision call: the prompt, each image after its numbered
    /// role, and the answer's strict JSON schema.
    fn chat_vision_body<T: VisionAnswer>(
        &self,
        prompt: &VisionPrompt,
        images: &[ImageInput],
    ) -> serde_json::Value {
        let mut content = vec![json!({ "type": "text", "text": prompt.text })];
        for (i, image) in images.iter().enumerate() {
            content.push(json!({
                "type": "text",
                "text": format!("Image {}: {}", i + 1, image.role.label()),
            }));
            content.push(json!({
                "type": "image_url",
                "image_url": {
                    "url": format!("data:image/png;base64,{}", BASE64.encode(&image.png)),
                    "detail": "high",
                },
            }));
        }
        let mut body = json!({
            "model": self.config.vision_model.id,
            "messages": [
                { "role": "system", "content": prompt.system },
                { "role": "user", "content": content },
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": { "name": T::SCHEMA_NAME, "strict": true, "schema": T::schema() },
            },
            "max_completion_tokens": cost::VISION_MAX_OUTPUT_TOKENS,
        });
        if let Some(effort) = self.config.vision_model.reasoning_effort {
            body["reasoning_effort"] = json!(effort);
        }
        body
    }

    /// Sends one request and reads its JSON body; maps every failure to a [`ModelError`].
    async fn send(
        &self,
        job: &JobId,
        kind: CallKind,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<(Value, Option<String>), ModelError> {
        let mut request = request
            .timeout(timeout)
            .header(CLIENT_REQUEST_ID_HEADER, job.as_str());
        if let Some(key) = &self.config.api_key {
            request = match self.model(kind).provider {
                Provider::OpenAi => request.bearer_auth(key),
                Provider::Gemini => request.header("x-goog-api-key", key),
            };
        }
        let started = Instant::now();
        let result = self.exchange(kind, request, timeout).await;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        match &result {
            Ok((_, request_id)) => tracing::info!(
                job_id = %job,
                call = kind.as_str(),
                elapsed_ms,
                provider_request_id = request_id.as_deref().unwrap_or(""),
                "model_call_answered"
            ),
            Err(e) => tracing::warn!(
                job_id = %job,
                call = kind.as_str(),
                elapsed_ms,
                code = e.code(),
                error = %e,
                "model_call_failed"
            ),
        }
        result
    }

    async fn exchange(
        &self,
        kind: CallKind,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<(Value, Option<String>), ModelError> {
        let transport = |source: reqwest::Error| {
            if source.is_timeout() {
                ModelError::Timeout {
                    call: kind,
                    timeout_ms: timeout.as_millis() as u64,
                    source,
                }
            } else {
                ModelError::Transport { call: kind, source }
            }
        };
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        let request_id = response
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(|v| shorten(v, 128));
        let bytes = response.bytes().await.map_err(transport)?;
        if !status.is_success() {
            return Err(http_error(kind, status.as_u16(), &bytes));
        }
        let body: Value = serde_json::from_slice(&bytes).map_err(|e| ModelError::Malformed {
            call: kind,
            usage: None,
            source: Malformed::Json(e),
        })?;
        Ok((body, request_id))
    }
}

/// An error answer as [`ModelError::Http`], its code read from the provider's own error body
/// (OpenAI's `error.code`, else `error.type`; Gemini's `error.status`, its `error.code` being
/// the HTTP status as a number). A body that is not the provider's error object (a gateway's
/// HTML page, an empty body) has no code: it proves nothing ([`ModelError::is_definite`]).
fn http_error(call: CallKind, status: u16, body: &[u8]) -> ModelError {
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

fn invalid(call: CallKind, reason: &str) -> ModelError {
    ModelError::InvalidInput {
        call,
        reason: reason.to_owned(),
    }
}

fn png_part(kind: CallKind, bytes: Vec<u8>, name: String) -> Result<Part, ModelError> {
    Part::bytes(bytes)
        .file_name(name)
        .mime_str("image/png")
        .map_err(|source| ModelError::Transport { call: kind, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_aspect() {
        assert_eq!(EditSize::for_dimensions(4032, 3024), EditSize::Landscape);
        assert_eq!(EditSize::for_dimensions(3024, 4032), EditSize::Portrait);
        assert_eq!(EditSize::for_dimensions(1000, 1100), EditSize::Square);
    }

    #[test]
    fn only_a_no_such_model_answer_is_an_outage_of_the_model() {
        let http = |status, code: Option<&str>| ModelError::Http {
            call: CallKind::Edit,
            status,
            code: code.map(str::to_owned),
            message: None,
        };
        let cases = [
            (
                "404 model_not_found",
                http(404, Some("model_not_found")),
                true,
            ),
            (
                "400 model_not_found",
                http(400, Some("model_not_found")),
                true,
            ),
            ("400 invalid_model", http(400, Some("invalid_model")), true),
            ("404 without a code", http(404, None), false),
            (
                "429 rate limit",
                http(429, Some("rate_limit_exceeded")),
                false,
            ),
            (
                "500 with the code",
                http(500, Some("model_not_found")),
                false,
            ),
        ];
        for (why, error, outage) in cases {
            assert_eq!(error.is_model_unavailable(), outage, "{why}");
            assert_eq!(error.code() == "model_unavailable", outage, "{why}");
        }
        // Refused before processing: free, as any 4xx.
        assert_eq!(
            http(404, Some("model_not_found")).billing(),
            Billing::NotBilled
        );
    }

    #[test]
    fn only_the_providers_own_error_for_overload_rate_limit_or_no_model_is_definite() {
        let html_502 =
            "<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>";
        let cases: [(&str, u16, &str, bool); 14] = [
            (
                "OpenAI 503 overloaded",
                503,
                r#"{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}"#,
                true,
            ),
            (
                "OpenAI 429 rate limit",
                429,
                r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
                true,
            ),
            (
                "OpenAI 429 quota",
                429,
                r#"{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}"#,
                true,
            ),
            (
                "OpenAI 404 no such model",
                404,
                r#"{"error":{"type":"invalid_request_error","code":"model_not_found"}}"#,
                true,
            ),
            (
                "Gemini 503",
                503,
                r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#,
                true,
            ),
            (
                "Gemini 429",
                429,
                r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}"#,
                true,
            ),
            (
                "Gemini 404",
                404,
                r#"{"error":{"code":404,"status":"NOT_FOUND"}}"#,
                true,
            ),
            (
                "OpenAI 500 server error",
                500,
                r#"{"error":{"message":"The server had an error","type":"server_error","code":null}}"#,
                false,
            ),
            (
                "Gemini 500",
                500,
                r#"{"error":{"code":500,"status":"INTERNAL"}}"#,
                false,
            ),
            ("a CDN's HTML 502", 502, html_502, false),
            ("a CDN's 524", 524, "<html>A timeout occurred</html>", false),
            ("an empty 500", 500, "", false),
            (
                "a 503 without the provider's body",
                503,
                "Service Unavailable",
                false,
            ),
            (
                "Gemini's status on the wrong HTTP status",
                502,
                r#"{"error":{"code":502,"status":"UNAVAILABLE"}}"#,
                false,
            ),
        ];
        for (why, status, body, definite) in cases {
            let error = http_error(CallKind::Edit, status, body.as_bytes());
            assert_eq!(error.is_definite(), definite, "{why}: {error:?}");
            let billing = if definite || status < 500 {
                Billing::NotBilled
            } else {
                Billing::MayHaveBilled
            };
            assert_eq!(error.billing(), billing, "{why}");
        }
    }

    #[test]
    fn the_key_is_never_in_debug_output() {
        let mut config = ModelConfig::new("http://127.0.0.1:1");
        config.api_key = Some("sk-secret".to_owned());
        assert!(!format!("{config:?}").contains("sk-secret"));
    }

    #[test]
    fn usage_is_read_from_both_shapes() {
        let image = json!({"usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30,
            "input_tokens_details": {"text_tokens": 4, "image_tokens": 6}}});
        assert_eq!(
            image_usage(&image),
            Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(20),
                total_tokens: Some(30),
                input_text_tokens: Some(4),
                input_image_tokens: Some(6),
            })
        );
        let chat =
            json!({"usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}});
        assert_eq!(chat_usage(&chat).and_then(|u| u.output_tokens), Some(3));
        assert_eq!(chat_usage(&json!({"choices": []})), None);
    }
}
