//! Wire shapes of the provider's answers (lenient about fields we do not read), and the usage
//! read from them.

use serde::Deserialize;
use serde_json::Value;

use super::call::Usage;

#[derive(Deserialize)]
pub(super) struct ImagesResponse {
    #[serde(default)]
    pub(super) data: Vec<ImageDatum>,
}

#[derive(Deserialize)]
pub(super) struct ImageDatum {
    #[serde(default)]
    pub(super) b64_json: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ImageUsageWire {
    pub(super) input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    pub(super) total_tokens: Option<u64>,
    pub(super) input_tokens_details: Option<InputDetailsWire>,
}

#[derive(Deserialize)]
pub(super) struct InputDetailsWire {
    pub(super) text_tokens: Option<u64>,
    pub(super) image_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct ChatResponse {
    #[serde(default)]
    pub(super) choices: Vec<ChatChoice>,
}

#[derive(Deserialize)]
pub(super) struct ChatChoice {
    pub(super) message: ChatMessage,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ChatMessage {
    #[serde(default)]
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) refusal: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ChatUsageWire {
    pub(super) prompt_tokens: Option<u64>,
    pub(super) completion_tokens: Option<u64>,
    pub(super) total_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct ErrorBody {
    pub(super) error: ErrorDetail,
}

#[derive(Deserialize)]
pub(super) struct ErrorDetail {
    #[serde(default)]
    pub(super) message: Option<String>,
    #[serde(default)]
    pub(super) code: Option<Value>,
    #[serde(default, rename = "type")]
    pub(super) kind: Option<String>,
    /// Gemini's canonical status (`RESOURCE_EXHAUSTED`, `UNAVAILABLE`, `NOT_FOUND`, …).
    #[serde(default)]
    pub(super) status: Option<String>,
}

pub(super) fn image_usage(body: &Value) -> Option<Usage> {
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

pub(super) fn chat_usage(body: &Value) -> Option<Usage> {
    let wire: ChatUsageWire = serde_json::from_value(body.get("usage")?.clone()).ok()?;
    Some(Usage {
        input_tokens: wire.prompt_tokens,
        output_tokens: wire.completion_tokens,
        total_tokens: wire.total_tokens,
        input_text_tokens: None,
        input_image_tokens: None,
    })
}

pub(super) fn shorten(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}
