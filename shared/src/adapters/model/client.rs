//! The client itself: one HTTPS client per process, one request per call.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

use super::call::{
    CLIENT_REQUEST_ID_HEADER, CallKind, EditCall, EditReply, ImageInput, ModelConfig, VisionReply,
};
use super::catalogue::Provider;
use super::cost;
use super::error::{Malformed, ModelError, http_error, invalid};
use super::vision::{Comparison, Readiness, Review, VisionAnswer};
use super::wire::{ChatResponse, ImagesResponse, chat_usage, image_usage, shorten};
use crate::adapters::tls::Alpn;
use crate::domain::JobId;
use crate::domain::prompts::{ImageRole, VisionPrompt};

/// The client. Cheap to clone; build it once per process.
#[derive(Debug, Clone)]
pub struct ModelClient {
    pub(super) http: reqwest::Client,
    pub(super) config: ModelConfig,
    pub(super) base: String,
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
    pub fn model(&self, kind: CallKind) -> &'static super::catalogue::Model {
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
            model: self.config.image_model,
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
    pub(super) async fn send(
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

fn png_part(kind: CallKind, bytes: Vec<u8>, name: String) -> Result<Part, ModelError> {
    Part::bytes(bytes)
        .file_name(name)
        .mime_str("image/png")
        .map_err(|source| ModelError::Transport { call: kind, source })
}
