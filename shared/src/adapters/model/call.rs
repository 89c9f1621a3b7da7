//! What a call is made of: the error codes that prove an outage, quality and size, the usage
//! a provider reports, the client's settings, and each call's inputs and replies.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::catalogue;
pub use crate::domain::catalogue::CallKind;
use crate::domain::prompts::{EditPrompt, ImageRole};

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
    /// The model that drew it (the one a failover reached): the result's credentials name it.
    pub model: &'static crate::domain::catalogue::Model,
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
