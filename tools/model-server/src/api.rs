//! The HTTP surface: the two OpenAI endpoints the client uses, and the `/_stand-in/` control
//! endpoints (counters, reset, faults). The vision answers themselves are `judge.rs`'s.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use atelier_shared::adapters::model::CLIENT_REQUEST_ID_HEADER;
use atelier_shared::adapters::model::catalogue::{self, Serves};
use atelier_shared::adapters::model::cost::vision_image_tokens;
use atelier_shared::adapters::model::vision::{COMPARISON_SCHEMA, READINESS_SCHEMA, REVIEW_SCHEMA};
use atelier_shared::domain::StyleId;
use atelier_shared::domain::imaging::{
    DecodeLimits, encode_png, fit_within, mask_from_png, resize_exact,
};
use atelier_shared::domain::prompts::ImageRole;
use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Multipart, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use crate::judge::{Seen, answer, line_value, target_description, target_of};
use crate::restyle::{MASK_SPILL_PX, REGION_SPILL_PX, restyle};
use crate::scene::Scene;
use crate::state::{Applied, Call, CallCounts, Fault, FaultRule, StandIn};

/// Largest request body: three or four base64 images in one chat request.
const MAX_BODY_BYTES: usize = 128 * 1024 * 1024;
/// Longest side the stand-in answers an edit with when asked for `auto` (real models answer
/// in their own sizes; the consumer resizes back).
const AUTO_MAX_SIDE: u32 = 1536;

/// The router over a server state.
pub fn router(state: StandIn) -> Router {
    Router::new()
        .route(
            "/v1beta/models/{action}",
            post(crate::gemini::generate_content),
        )
        .route("/v1/images/edits", post(edit))
        .route("/v1/chat/completions", post(chat))
        .route("/_stand-in/calls", get(calls))
        .route("/_stand-in/reset", post(reset))
        .route(
            "/_stand-in/faults",
            get(list_faults).post(add_faults).delete(clear_faults),
        )
        .route("/_stand-in/health", get(|| async { "ok" }))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

async fn calls(State(state): State<StandIn>) -> Json<CallCounts> {
    Json(state.calls())
}

/// Clears the counters and the faults: a fresh server.
async fn reset(State(state): State<StandIn>) -> StatusCode {
    state.reset();
    state.clear_faults();
    StatusCode::NO_CONTENT
}

async fn list_faults(State(state): State<StandIn>) -> Json<Vec<FaultRule>> {
    Json(state.faults())
}

/// Adds rules after those already set (so tests scoped to their own job ids can share one
/// server).
async fn add_faults(State(state): State<StandIn>, Json(rules): Json<Vec<FaultRule>>) -> StatusCode {
    state.add_faults(rules);
    StatusCode::NO_CONTENT
}

async fn clear_faults(State(state): State<StandIn>) -> StatusCode {
    state.clear_faults();
    StatusCode::NO_CONTENT
}

pub(crate) fn job_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(CLIENT_REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(crate) fn with_request_id(mut response: Response, sequence: u64) -> Response {
    if let Ok(v) = HeaderValue::from_str(&format!("standin-{sequence}")) {
        response.headers_mut().insert("x-request-id", v);
    }
    response
}

fn openai_error(status: StatusCode, kind: &str, code: Option<&str>, message: &str) -> Response {
    let body =
        json!({ "error": { "message": message, "type": kind, "param": null, "code": code } });
    (status, Json(body)).into_response()
}

/// The provider's answer for a model it does not serve (any more): 404 `model_not_found`, as
/// OpenAI answers an unknown or shut-down model. The stand-in serves the catalogue's models
/// that can make the call and are not past their shutdown today; an absent `model` is the
/// default one (OpenAI requires it; our client always sends it).
fn model_refusal(model: Option<&str>, serves: Serves) -> Option<Response> {
    let id = model?;
    let today = atelier_shared::clock::now().date();
    let usable = catalogue::check_configured(id, serves, today)
        .is_ok_and(|m| m.provider == catalogue::Provider::OpenAi);
    (!usable).then(|| {
        openai_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            Some("model_not_found"),
            &format!("The model `{id}` does not exist or you do not have access to it."),
        )
    })
}

fn bad_request(message: &str) -> Response {
    openai_error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        None,
        message,
    )
}

/// A gateway's answer in front of either provider, not the provider's own error body: a
/// CDN's HTML 502 or 524 page, or an empty 500 (None for the other faults).
pub(crate) fn gateway_answer(fault: Fault) -> Option<Response> {
    let html = |status: StatusCode, title: &str| {
        let page = format!(
            "<!DOCTYPE html>\n<html><head><title>{title}</title></head>\
             <body><h1>{title}</h1><p>stand-in CDN fault</p></body></html>\n"
        );
        (
            status,
            [(axum::http::header::CONTENT_TYPE, "text/html; charset=UTF-8")],
            page,
        )
            .into_response()
    };
    match fault {
        Fault::Html502 => Some(html(StatusCode::BAD_GATEWAY, "502 Bad Gateway")),
        Fault::Error524 => StatusCode::from_u16(524)
            .ok()
            .map(|s| html(s, "524: A timeout occurred")),
        Fault::Empty500 => Some(StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        _ => None,
    }
}

/// Sleeps for latency, then answers for a failure fault (None: answer normally).
async fn before_answer(applied: &Applied) -> Option<Response> {
    if let Some(latency) = applied.latency {
        tokio::time::sleep(latency).await;
    }
    let (fault, hold) = applied.failure?;
    if let Some(page) = gateway_answer(fault) {
        return Some(page);
    }
    Some(match fault {
        Fault::Error429 => {
            let mut r = openai_error(
                StatusCode::TOO_MANY_REQUESTS,
                "requests",
                Some("rate_limit_exceeded"),
                "Rate limit reached (stand-in fault).",
            );
            r.headers_mut()
                .insert("retry-after", HeaderValue::from_static("1"));
            r
        }
        Fault::Error503 => openai_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            None,
            "The engine is currently overloaded (stand-in fault).",
        ),
        Fault::Timeout => {
            tokio::time::sleep(hold).await;
            openai_error(
                StatusCode::GATEWAY_TIMEOUT,
                "server_error",
                None,
                "Held past the client's timeout (stand-in fault).",
            )
        }
        _ => openai_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            None,
            "The server had an error while processing your request (stand-in fault).",
        ),
    })
}

pub(crate) fn log_call(call: Call, job: Option<&str>, sequence: u64, applied: &Applied) {
    tracing::info!(
        call = call.as_str(),
        job_id = job.unwrap_or(""),
        sequence,
        faults = %applied.describe(),
        "stand_in_call"
    );
}

// ---------------------------------------------------------------------------------------------
// POST /v1/images/edits

pub(crate) struct EditForm {
    pub model: Option<String>,
    pub prompt: String,
    pub images: Vec<Bytes>,
    pub mask: Option<Bytes>,
    pub size: String,
    pub quality: String,
}

async fn read_form(mut multipart: Multipart) -> Result<EditForm, String> {
    let mut form = EditForm {
        model: None,
        prompt: String::new(),
        images: Vec::new(),
        mask: None,
        size: "auto".to_owned(),
        quality: "auto".to_owned(),
    };
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| format!("unreadable multipart body: {e}"))?
    {
        let name = field.name().unwrap_or("").to_owned();
        let bytes = field
            .bytes()
            .await
            .map_err(|e| format!("unreadable field {name}: {e}"))?;
        let text = || String::from_utf8_lossy(&bytes).into_owned();
        match name.as_str() {
            "prompt" => form.prompt = text(),
            "model" => form.model = Some(text()),
            "size" => form.size = text(),
            "quality" => form.quality = text(),
            "image" | "image[]" => form.images.push(bytes),
            "mask" => form.mask = Some(bytes),
            _ => {}
        }
    }
    if form.prompt.is_empty() {
        return Err("prompt is required".to_owned());
    }
    if form.images.is_empty() {
        return Err("image is required".to_owned());
    }
    Ok(form)
}

pub(crate) struct Edited {
    pub png: Vec<u8>,
    pub text_tokens: u64,
    pub image_tokens: u64,
    pub output_tokens: u64,
}

fn output_size(size: &str, input: (u32, u32)) -> Result<(u32, u32), String> {
    if size == "auto" {
        return Ok(fit_within(input, AUTO_MAX_SIDE));
    }
    let parsed = size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)));
    match parsed {
        Some((w, h)) if (64..=4096).contains(&w) && (64..=4096).contains(&h) => Ok((w, h)),
        _ => Err(format!("unsupported size {size}")),
    }
}

pub(crate) fn render_edit(form: &EditForm) -> Result<Edited, String> {
    let style = line_value(&form.prompt, "Medium")
        .and_then(StyleId::parse)
        .ok_or("the stand-in needs a `Medium: <style id>` line in the prompt")?;
    let target = target_of(&form.prompt)
        .ok_or("the stand-in needs a `Target: <target>` line in the prompt")?;
    let mut images = Vec::new();
    for bytes in &form.images {
        let img = DecodeLimits::PHOTO
            .decode(bytes)
            .map_err(|e| format!("image could not be read: {e}"))?;
        images.push(img.into_rgba8());
    }
    let Some(original) = images.first() else {
        return Err("image is required".to_owned());
    };
    let dims = original.dimensions();
    let region = match &form.mask {
        Some(bytes) => mask_from_png(bytes, dims)
            .map_err(|e| format!("invalid mask: {e}"))?
            .dilated(MASK_SPILL_PX),
        None => Scene::analyse(original)
            .region(target, target_description(&form.prompt).as_deref())
            .dilated(REGION_SPILL_PX),
    };
    let mut out = original.clone();
    restyle(&mut out, &region, style);
    let (w, h) = output_size(&form.size, dims)?;
    let out = resize_exact(&out, w, h);
    let png = encode_png(&out).map_err(|e| format!("encoding failed: {e}"))?;
    // Output tokens as gpt-image-1 bills them for a 1024×1024 image, scaled by area.
    let per_megapixel = match form.quality.as_str() {
        "low" => 272,
        "high" => 4160,
        _ => 1056,
    };
    let output_tokens = (per_megapixel * u64::from(w) * u64::from(h)).div_ceil(1024 * 1024);
    Ok(Edited {
        png,
        text_tokens: (form.prompt.chars().count() as u64).div_ceil(4),
        image_tokens: images
            .iter()
            .map(|i| vision_image_tokens(i.width(), i.height()))
            .sum(),
        output_tokens,
    })
}

async fn edit(State(state): State<StandIn>, headers: HeaderMap, multipart: Multipart) -> Response {
    let job = job_of(&headers);
    let (sequence, applied) = state.arrive(Call::Edit, job.as_deref());
    log_call(Call::Edit, job.as_deref(), sequence, &applied);
    if let Some(response) = before_answer(&applied).await {
        return with_request_id(response, sequence);
    }
    let form = match read_form(multipart).await {
        Ok(form) => form,
        Err(message) => return with_request_id(bad_request(&message), sequence),
    };
    if let Some(refused) = model_refusal(form.model.as_deref(), Serves::Edit) {
        return with_request_id(refused, sequence);
    }
    let rendered = tokio::task::spawn_blocking(move || render_edit(&form)).await;
    let edited = match rendered {
        Ok(Ok(edited)) => edited,
        Ok(Err(message)) => return with_request_id(bad_request(&message), sequence),
        Err(_) => {
            return with_request_id(
                openai_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    None,
                    "rendering failed",
                ),
                sequence,
            );
        }
    };
    let b64 = if applied.malformed {
        "%%% not base64 %%%".to_owned()
    } else {
        BASE64.encode(&edited.png)
    };
    let data = if applied.schema_violation {
        json!([])
    } else {
        json!([{ "b64_json": b64 }])
    };
    let mut body = json!({ "created": now_secs(), "data": data });
    if !applied.missing_usage {
        let input = edited.text_tokens + edited.image_tokens;
        body["usage"] = json!({
            "input_tokens": input,
            "output_tokens": edited.output_tokens,
            "total_tokens": input + edited.output_tokens,
            "input_tokens_details": {
                "text_tokens": edited.text_tokens,
                "image_tokens": edited.image_tokens,
            },
        });
    }
    with_request_id(Json(body).into_response(), sequence)
}

// ---------------------------------------------------------------------------------------------
// POST /v1/chat/completions

fn read_chat(request: &Value) -> Result<Seen, String> {
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("messages is required")?;
    let mut texts = Vec::new();
    let mut urls = Vec::new();
    for message in messages {
        if message.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        match message.get("content") {
            Some(Value::String(s)) => texts.push(s.clone()),
            Some(Value::Array(parts)) => {
                for part in parts {
                    match part.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = part.get("text").and_then(Value::as_str) {
                                texts.push(t.to_owned());
                            }
                        }
                        Some("image_url") => {
                            let url = part
                                .pointer("/image_url/url")
                                .and_then(Value::as_str)
                                .ok_or("image_url.url is required")?;
                            urls.push(url.to_owned());
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    seen_from(texts.join("\n"), &urls)
}

/// The images of a request by the role its text gives each number (`Image N: <role>`), from
/// `data:` URLs in order.
pub(crate) fn seen_from(text: String, urls: &[String]) -> Result<Seen, String> {
    let mut numbered: HashMap<usize, ImageRole> = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("Image ") else {
            continue;
        };
        let Some((n, label)) = rest.split_once(": ") else {
            continue;
        };
        if let (Ok(n), Some(role)) = (n.parse::<usize>(), ImageRole::from_label(label)) {
            numbered.entry(n).or_insert(role);
        }
    }
    let mut by_role = HashMap::new();
    let (mut roles, mut sent) = (Vec::new(), Vec::new());
    let mut image_tokens = 0;
    for (i, url) in urls.iter().enumerate() {
        let b64 = url
            .strip_prefix("data:")
            .and_then(|rest| rest.split_once(";base64,"))
            .map(|(_, b64)| b64)
            .ok_or("the stand-in reads data: URLs only")?;
        let bytes = BASE64
            .decode(b64.as_bytes())
            .map_err(|e| format!("image {} is not base64: {e}", i + 1))?;
        let img = DecodeLimits::PHOTO
            .decode(&bytes)
            .map_err(|e| format!("image {} could not be read: {e}", i + 1))?
            .into_rgba8();
        image_tokens += vision_image_tokens(img.width(), img.height());
        let role = numbered
            .get(&(i + 1))
            .copied()
            .ok_or_else(|| format!("image {} has no role in the prompt", i + 1))?;
        by_role.insert(role, img);
        roles.push(role);
        sent.push(bytes);
    }
    Ok(Seen {
        text,
        by_role,
        image_tokens,
        roles,
        bytes: sent,
    })
}

async fn chat(State(state): State<StandIn>, headers: HeaderMap, body: Bytes) -> Response {
    let job = job_of(&headers);
    let request: Option<Value> = serde_json::from_slice(&body).ok();
    let schema = request
        .as_ref()
        .and_then(|r| r.pointer("/response_format/json_schema/name"))
        .and_then(Value::as_str);
    let call = match schema {
        Some(READINESS_SCHEMA) => Call::Check,
        Some(REVIEW_SCHEMA) => Call::Review,
        Some(COMPARISON_SCHEMA) => Call::Compare,
        _ => Call::Other,
    };
    let (sequence, applied) = state.arrive(call, job.as_deref());
    log_call(call, job.as_deref(), sequence, &applied);
    let Some(request) = request else {
        return with_request_id(bad_request("the body is not JSON"), sequence);
    };
    if call == Call::Other {
        return with_request_id(
            bad_request(
                "the stand-in answers the readiness_check, edit_review and repair_comparison schemas only",
            ),
            sequence,
        );
    }
    if let Some(response) = before_answer(&applied).await {
        return with_request_id(response, sequence);
    }
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("stand-in")
        .to_owned();
    let asked = request.get("model").and_then(Value::as_str);
    if let Some(refused) = model_refusal(asked, Serves::Vision) {
        return with_request_id(refused, sequence);
    }
    let worked = tokio::task::spawn_blocking(move || {
        let seen = read_chat(&request)?;
        let value = answer(call, &seen, &applied)?;
        let prompt_tokens = (seen.text.chars().count() as u64).div_ceil(4) + seen.image_tokens;
        Ok::<_, String>((value, prompt_tokens))
    })
    .await;
    let (mut value, prompt_tokens) = match worked {
        Ok(Ok(v)) => v,
        Ok(Err(message)) => return with_request_id(bad_request(&message), sequence),
        Err(_) => {
            return with_request_id(
                openai_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    None,
                    "answering failed",
                ),
                sequence,
            );
        }
    };
    let body = completion(&mut value, &applied, &model, sequence, prompt_tokens);
    with_request_id(Json(body).into_response(), sequence)
}

/// The chat completion around `value`, with the scripted damage `applied` asks for.
fn completion(
    value: &mut Value,
    applied: &Applied,
    model: &str,
    sequence: u64,
    prompt_tokens: u64,
) -> Value {
    if applied.schema_violation {
        value["confidence"] = json!(0.99);
    }
    let mut content = value.to_string();
    if applied.malformed {
        // Cut mid-answer: what a model that lost its way looks like.
        content = content.chars().take(content.chars().count() / 2).collect();
    }
    let completion_tokens = (content.chars().count() as u64).div_ceil(4);
    let mut body = json!({
        "id": format!("chatcmpl-standin-{sequence}"),
        "object": "chat.completion",
        "created": now_secs(),
        "model": model,
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": content, "refusal": null },
            "finish_reason": "stop",
        }],
    });
    if !applied.missing_usage {
        body["usage"] = json!({
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        });
    }
    body
}

/// How long `timeout` faults hold by default.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(30);
