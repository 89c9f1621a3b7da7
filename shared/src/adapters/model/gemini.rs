//! Google's Gemini API as the second provider: `POST {base}/v1beta/models/{model}:generateContent`
//! with inline image parts, for the edit and the vision calls alike. The money rules of
//! [`super`] hold unchanged (one request, no retry, a timeout, usage typed or `None`).
//!
//! What differs from OpenAI's wire, and why:
//! - **The mask is an image.** Gemini has no mask field: the mask goes as one more numbered,
//!   role-labelled image (white = may change), and the edit prompt numbers it
//!   ([`crate::domain::prompts::mask_as_image`]). The consumer composites through the mask afterwards
//!   all the same, so a model that spills cannot change a pixel outside it.
//! - **Role labels are text parts.** Each image is preceded by an `Image N: <role>` text part,
//!   as in the OpenAI vision calls.
//! - **Strict JSON** is asked by `responseMimeType: application/json` with a `responseSchema`
//!   (Gemini's OpenAPI subset, converted from the same schema, [`response_schema`]); the
//!   answer is parsed by the same strict parser either way.
//! - **The key** goes in `x-goog-api-key`; usage comes as `usageMetadata` (thinking tokens are
//!   billed as output, so they are added to it).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Deserialize;
use serde_json::{Value, json};

use super::call::{CallKind, EditCall, EditReply, EditSize, ImageInput, Usage, VisionReply};
use super::client::ModelClient;
use super::cost;
use super::error::{Malformed, ModelError, invalid};
use super::vision::VisionAnswer;
use crate::domain::JobId;
use crate::domain::imaging::{self, DecodeLimits};
use crate::domain::prompts::{ImageRole, VisionPrompt};

/// The image size asked of a Gemini image model (the catalogue's output ceiling assumes it).
pub const IMAGE_SIZE: &str = "1K";

/// The path of a model's `generateContent` call.
pub fn path(model: &str) -> String {
    format!("/v1beta/models/{model}:generateContent")
}

/// Gemini's aspect ratio for an edit size (`None`: the model keeps the input's).
pub fn aspect_ratio(size: EditSize) -> Option<&'static str> {
    match size {
        EditSize::Auto => None,
        EditSize::Square => Some("1:1"),
        EditSize::Landscape => Some("3:2"),
        EditSize::Portrait => Some("2:3"),
    }
}

/// The user turn: the prompt, then each image after its `Image N: <role>` label.
fn parts(text: &str, images: &[ImageInput]) -> Vec<Value> {
    let mut parts = vec![json!({ "text": text })];
    for (i, image) in images.iter().enumerate() {
        parts.push(json!({ "text": format!("Image {}: {}", i + 1, image.role.label()) }));
        parts.push(json!({
            "inlineData": { "mimeType": "image/png", "data": BASE64.encode(&image.png) }
        }));
    }
    parts
}

/// An OpenAI-style alpha mask (transparent = editable) as the picture Gemini reads (white =
/// may change, black = keep), at the first image's size.
fn visual_mask(kind: CallKind, first: &[u8], alpha_mask: &[u8]) -> Result<Vec<u8>, ModelError> {
    let bad = |what: &str| invalid(kind, what);
    let original = DecodeLimits::PHOTO
        .decode(first)
        .map_err(|_| bad("the first image is not readable"))?;
    let mask = imaging::mask_from_png(alpha_mask, (original.width(), original.height()))
        .map_err(|_| bad("the mask is not readable at the first image's size"))?;
    imaging::encode_png_for_model(&mask.to_visual())
        .map_err(|_| bad("the mask could not be encoded"))
}

/// Gemini's `responseSchema` (an OpenAPI 3.0 subset) from a strict JSON schema: upper-case
/// types, `nullable` for a `null` alternative, no `additionalProperties` (the strict parser
/// refuses extra fields instead), and the properties in their `required` order.
pub fn response_schema(schema: &Value) -> Value {
    let Some(object) = schema.as_object() else {
        return schema.clone();
    };
    if let Some(any_of) = object.get("anyOf").and_then(Value::as_array) {
        let not_null: Vec<&Value> = any_of
            .iter()
            .filter(|s| s.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if let [only] = not_null.as_slice() {
            let mut converted = response_schema(only);
            if not_null.len() < any_of.len() {
                converted["nullable"] = json!(true);
            }
            return converted;
        }
    }
    let mut out = serde_json::Map::new();
    for (key, value) in object {
        match key.as_str() {
            "additionalProperties" => {}
            "type" => {
                let upper = value.as_str().unwrap_or("string").to_uppercase();
                out.insert(key.clone(), json!(upper));
            }
            "properties" => {
                let props = value
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(k, v)| (k.clone(), response_schema(v)))
                            .collect::<serde_json::Map<_, _>>()
                    })
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" => {
                out.insert(key.clone(), response_schema(value));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if let Some(required) = object.get("required") {
        out.insert("propertyOrdering".to_owned(), required.clone());
    }
    Value::Object(out)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    inline_data: Option<InlineData>,
    #[serde(default)]
    thought: Option<bool>,
}

#[derive(Deserialize)]
struct InlineData {
    data: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageWire {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    total_token_count: Option<u64>,
}

/// `usageMetadata` as [`Usage`]: thinking tokens are billed as output, so they count in it.
pub(super) fn usage(body: &Value) -> Option<Usage> {
    let wire: UsageWire = serde_json::from_value(body.get("usageMetadata")?.clone()).ok()?;
    let output = match (wire.candidates_token_count, wire.thoughts_token_count) {
        (None, None) => None,
        (c, t) => Some(c.unwrap_or(0).saturating_add(t.unwrap_or(0))),
    };
    Some(Usage {
        input_tokens: wire.prompt_token_count,
        output_tokens: output,
        total_tokens: wire.total_token_count,
        input_text_tokens: None,
        input_image_tokens: None,
    })
}

/// The first candidate's answer parts, or why there is none.
fn answer_parts(body: Value) -> Result<Vec<Part>, Malformed> {
    let parsed: Response = serde_json::from_value(body).map_err(Malformed::Shape)?;
    if parsed
        .prompt_feedback
        .and_then(|f| f.block_reason)
        .is_some()
    {
        return Err(Malformed::Refusal);
    }
    let candidate = parsed
        .candidates
        .into_iter()
        .next()
        .ok_or(Malformed::NoAnswer)?;
    match candidate.finish_reason.as_deref() {
        None | Some("STOP") => {}
        Some("SAFETY" | "PROHIBITED_CONTENT" | "IMAGE_SAFETY" | "BLOCKLIST" | "SPII") => {
            return Err(Malformed::Refusal);
        }
        Some(other) => return Err(Malformed::Truncated(other.to_owned())),
    }
    Ok(candidate
        .content
        .map(|c| c.parts)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.thought != Some(true))
        .collect())
}

impl ModelClient {
    /// The edit on Gemini: the prompt with the mask numbered as an image, one request.
    pub(super) async fn gemini_edit(
        &self,
        job: &JobId,
        call: EditCall,
    ) -> Result<EditReply, ModelError> {
        let kind = CallKind::Edit;
        let mut images = call.images;
        let mut prompt = call.prompt;
        if let Some(mask) = call.mask_png {
            let first = images.first().map(|i| i.png.as_slice()).unwrap_or_default();
            let png = visual_mask(kind, first, &mask)?;
            prompt = crate::domain::prompts::mask_as_image(&prompt);
            images.push(ImageInput::png(ImageRole::Mask, png));
        }
        let mut image_config = json!({ "imageSize": IMAGE_SIZE });
        if let Some(ratio) = aspect_ratio(call.size) {
            image_config["aspectRatio"] = json!(ratio);
        }
        let body = json!({
            "contents": [{ "role": "user", "parts": parts(&prompt.text, &images) }],
            "generationConfig": {
                "responseModalities": ["IMAGE"],
                "candidateCount": 1,
                "imageConfig": image_config,
            },
        });
        let request = self
            .http
            .post(format!("{}{}", self.base, path(self.config.image_model.id)))
            .json(&body);
        let (body, request_id) = self
            .send(job, kind, request, self.config.edit_timeout)
            .await?;
        let usage = usage(&body);
        let malformed = |source| ModelError::Malformed {
            call: kind,
            usage,
            source,
        };
        let b64 = answer_parts(body)
            .map_err(malformed)?
            .into_iter()
            .find_map(|p| p.inline_data)
            .ok_or_else(|| malformed(Malformed::NoImage))?;
        let image = BASE64
            .decode(b64.data.as_bytes())
            .map_err(|e| malformed(Malformed::Base64(e)))?;
        Ok(EditReply {
            image,
            model: self.config.image_model,
            usage,
            provider_request_id: request_id,
        })
    }

    /// A vision call on Gemini: the system text as `systemInstruction`, strict JSON by schema.
    pub(super) async fn gemini_vision<T: VisionAnswer>(
        &self,
        job: &JobId,
        kind: CallKind,
        prompt: &VisionPrompt,
        images: &[ImageInput],
    ) -> Result<VisionReply<T>, ModelError> {
        let body = json!({
            "systemInstruction": { "parts": [{ "text": prompt.system }] },
            "contents": [{ "role": "user", "parts": parts(&prompt.text, images) }],
            "generationConfig": {
                "responseMimeType": "application/json",
                "responseSchema": response_schema(&T::schema()),
                "candidateCount": 1,
                "maxOutputTokens": cost::VISION_MAX_OUTPUT_TOKENS,
            },
        });
        let request = self
            .http
            .post(format!(
                "{}{}",
                self.base,
                path(self.config.vision_model.id)
            ))
            .json(&body);
        let (body, request_id) = self
            .send(job, kind, request, self.config.vision_timeout)
            .await?;
        let usage = usage(&body);
        let malformed = |source| ModelError::Malformed {
            call: kind,
            usage,
            source,
        };
        let text: String = answer_parts(body)
            .map_err(malformed)?
            .into_iter()
            .filter_map(|p| p.text)
            .collect();
        if text.is_empty() {
            return Err(malformed(Malformed::NoAnswer));
        }
        let answer = T::parse(&text).map_err(malformed)?;
        Ok(VisionReply {
            answer,
            usage,
            provider_request_id: request_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::model::{Readiness, Review};

    #[test]
    fn the_schema_becomes_geminis_subset_with_the_same_fields() {
        let converted = response_schema(&Readiness::schema());
        assert_eq!(converted["type"], "OBJECT");
        assert!(converted.get("additionalProperties").is_none());
        assert_eq!(
            converted["propertyOrdering"],
            json!([
                "ready",
                "observation",
                "questions",
                "target_box",
                "candidates"
            ])
        );
        let candidate = &converted["properties"]["candidates"]["items"];
        assert_eq!(
            candidate["propertyOrdering"],
            json!(["label", "target_box"])
        );
        assert_eq!(candidate["properties"]["target_box"]["type"], "OBJECT");
        let target_box = &converted["properties"]["target_box"];
        assert_eq!(target_box["type"], "OBJECT");
        assert_eq!(target_box["nullable"], true);
        assert_eq!(
            converted["properties"]["questions"]["items"]["type"],
            "STRING"
        );
        let review = response_schema(&Review::schema());
        assert_eq!(review["properties"]["verdict"]["type"], "STRING");
    }

    #[test]
    fn thinking_tokens_count_as_output() {
        let body = json!({"usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1120,
            "thoughtsTokenCount": 200, "totalTokenCount": 1330}});
        let u = usage(&body).expect("usage");
        assert_eq!((u.input_tokens, u.output_tokens), (Some(10), Some(1_320)));
        assert_eq!(usage(&json!({"candidates": []})), None);
    }

    #[test]
    fn a_blocked_or_cut_answer_is_never_an_answer() {
        let cases = [
            (
                json!({"promptFeedback": {"blockReason": "SAFETY"}}),
                "refused",
            ),
            (
                json!({"candidates": [{"finishReason": "MAX_TOKENS", "content": {"parts": []}}]}),
                "cut off",
            ),
            (
                json!({"candidates": [{"finishReason": "IMAGE_SAFETY"}]}),
                "refused",
            ),
            (json!({"candidates": []}), "no answer"),
        ];
        for (body, want) in cases {
            let err = answer_parts(body).err().map(|e| e.to_string());
            assert!(err.as_deref().is_some_and(|e| e.contains(want)), "{err:?}");
        }
    }
}
