//! The Gemini side of the stand-in: `POST /v1beta/models/{model}:generateContent` in Gemini's
//! wire format (inline image parts, `responseSchema`, `usageMetadata`, errors as
//! `{"error": {"code", "message", "status"}}`), answering with the same image work and the same
//! measured vision answers as the OpenAI side, counted and faulted by the same state.
//!
//! The call kind is read from the request as Gemini receives it: an edit asks for the `IMAGE`
//! modality; a vision call's `responseSchema` has the readiness, review or comparison fields.

use atelier_shared::adapters::model::catalogue::{self, Provider, Serves};
use atelier_shared::adapters::model::gemini::IMAGE_SIZE;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use crate::exchange::{job_of, log_call, with_request_id};
use crate::judge::answer;
use crate::render::{EditForm, render_edit};
use crate::seen::seen_from;
use crate::state::{Applied, Call, Fault, StandIn};

/// Tokens the stand-in bills per input image. ASSUMPTION: Gemini 3 models bill an image at
/// their default media resolution as 1,120 tokens; the stand-in uses that for every image.
const IMAGE_TOKENS: u64 = 1_120;
/// Output tokens of a 1K image (Google's published figure).
const IMAGE_OUTPUT_TOKENS: u64 = 1_120;

fn gemini_error(status: StatusCode, canonical: &str, message: &str) -> Response {
    let body =
        json!({ "error": { "code": status.as_u16(), "message": message, "status": canonical } });
    (status, Json(body)).into_response()
}

fn bad_request(message: &str) -> Response {
    gemini_error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", message)
}

/// Gemini's 404 for a model it does not serve: not a catalogued Gemini model that can make
/// the call and is not past its shutdown today.
fn model_refusal(model: &str, serves: Serves) -> Option<Response> {
    let today = atelier_shared::clock::now().date();
    let usable = catalogue::check_configured(model, serves, today)
        .is_ok_and(|m| m.provider == Provider::Gemini);
    (!usable).then(|| {
        gemini_error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            &format!(
                "models/{model} is not found for API version v1beta, or is not supported for generateContent."
            ),
        )
    })
}

/// Sleeps for latency, then answers for a failure fault in Gemini's shape.
async fn before_answer(applied: &Applied) -> Option<Response> {
    if let Some(latency) = applied.latency {
        tokio::time::sleep(latency).await;
    }
    let (fault, hold) = applied.failure?;
    if let Some(page) = crate::exchange::gateway_answer(fault) {
        return Some(page);
    }
    Some(match fault {
        Fault::Error429 => gemini_error(
            StatusCode::TOO_MANY_REQUESTS,
            "RESOURCE_EXHAUSTED",
            "Resource has been exhausted (stand-in fault).",
        ),
        Fault::Error503 => gemini_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later (stand-in fault).",
        ),
        Fault::Timeout => {
            tokio::time::sleep(hold).await;
            gemini_error(
                StatusCode::GATEWAY_TIMEOUT,
                "DEADLINE_EXCEEDED",
                "Held past the client's timeout (stand-in fault).",
            )
        }
        _ => gemini_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "An internal error has occurred (stand-in fault).",
        ),
    })
}

/// A field by its JSON name or its proto name: Google's JSON mapping accepts both
/// (`inlineData` and `inline_data`), and its clients send either.
fn field<'a>(value: &'a Value, camel: &str) -> Option<&'a Value> {
    value.get(camel).or_else(|| {
        let mut snake = String::new();
        for c in camel.chars() {
            if c.is_ascii_uppercase() {
                snake.push('_');
                snake.push(c.to_ascii_lowercase());
            } else {
                snake.push(c);
            }
        }
        value.get(snake)
    })
}

/// A nested field by its path of JSON names, each matched in either spelling.
fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, name| field(v, name))
}

/// Which call a request is, from what it asks for.
fn call_of(request: &Value) -> Call {
    let config = field(request, "generationConfig");
    let wants_image = config
        .and_then(|c| field(c, "responseModalities"))
        .and_then(Value::as_array)
        .is_some_and(|m| m.iter().any(|v| v.as_str() == Some("IMAGE")));
    if wants_image {
        return Call::Edit;
    }
    let has = |field: &str| {
        config
            .and_then(|c| at(c, &["responseSchema", "properties", field]))
            .is_some()
    };
    if has("ready") {
        Call::Check
    } else if has("verdict") {
        Call::Review
    } else if has("outcome") {
        Call::Compare
    } else {
        Call::Other
    }
}

/// The user turn's text parts, joined, and its images as `data:` URLs, in order.
fn read_parts(request: &Value) -> Result<(String, Vec<String>), String> {
    let contents = request
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("contents is required")?;
    let (mut texts, mut urls) = (Vec::new(), Vec::new());
    for content in contents {
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .ok_or("contents[].parts is required")?;
        for part in parts {
            if let Some(t) = part.get("text").and_then(Value::as_str) {
                texts.push(t.to_owned());
            } else if let Some(inline) = field(part, "inlineData") {
                let mime = field(inline, "mimeType").and_then(Value::as_str);
                let data = inline.get("data").and_then(Value::as_str);
                match (mime, data) {
                    (Some(m), Some(d)) => urls.push(format!("data:{m};base64,{}", standard(d))),
                    _ => return Err("inlineData needs mimeType and data".to_owned()),
                }
            }
        }
    }
    Ok((texts.join("\n"), urls))
}

/// Proto `bytes` in JSON may be standard or URL-safe base64, padded or not (Google's parser
/// takes all four; the Python client sends URL-safe): as padded standard base64.
fn standard(data: &str) -> String {
    let mut out: String = data
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

fn usage_metadata(prompt: u64, output: u64) -> Value {
    json!({
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output,
    })
}

fn candidate(parts: Value, sequence: u64, model: &str) -> Value {
    json!({
        "candidates": [{
            "content": { "role": "model", "parts": parts },
            "finishReason": "STOP",
            "index": 0,
        }],
        "modelVersion": model,
        "responseId": format!("standin-{sequence}"),
    })
}

/// `WxH` of the 1K image Gemini answers for an aspect ratio (its documented 1K sizes), or
/// the input's shape within 1024 when none is asked.
fn output_size(request: &Value) -> String {
    let ratio =
        at(request, &["generationConfig", "imageConfig", "aspectRatio"]).and_then(Value::as_str);
    match ratio {
        Some("3:2") => "1248x832",
        Some("2:3") => "832x1248",
        Some("1:1") => "1024x1024",
        _ => "auto",
    }
    .to_owned()
}

/// The edit: images by their numbered roles; the mask (white = may change) is one of them.
fn edit(request: &Value, model: &str, applied: &Applied, sequence: u64) -> Result<Value, String> {
    let size = at(request, &["generationConfig", "imageConfig", "imageSize"])
        .and_then(Value::as_str)
        .unwrap_or(IMAGE_SIZE);
    if size != IMAGE_SIZE {
        return Err(format!("the stand-in renders {IMAGE_SIZE} images only"));
    }
    let (text, urls) = read_parts(request)?;
    let seen = seen_from(text.clone(), &urls)?;
    let roles = seen.roles.clone();
    let mut form = EditForm {
        model: Some(model.to_owned()),
        prompt: text,
        images: Vec::new(),
        mask: None,
        size: output_size(request),
        quality: "medium".to_owned(),
    };
    for (role, bytes) in roles.into_iter().zip(seen.bytes) {
        match role {
            atelier_shared::domain::prompts::ImageRole::Mask => {
                form.mask = Some(Bytes::from(bytes))
            }
            _ => form.images.push(Bytes::from(bytes)),
        }
    }
    let edited = render_edit(&form)?;
    let data = if applied.malformed {
        "%%% not base64 %%%".to_owned()
    } else {
        BASE64.encode(&edited.png)
    };
    let parts = if applied.schema_violation {
        json!([{ "text": "No image this time." }])
    } else {
        json!([{ "inlineData": { "mimeType": "image/png", "data": data } }])
    };
    let mut body = candidate(parts, sequence, model);
    if !applied.missing_usage {
        let prompt = edited.text_tokens + IMAGE_TOKENS * urls.len() as u64;
        body["usageMetadata"] = usage_metadata(prompt, IMAGE_OUTPUT_TOKENS);
    }
    Ok(body)
}

/// A vision call: the same measured answer as on the OpenAI side, as JSON text.
fn vision(
    call: Call,
    request: &Value,
    model: &str,
    applied: &Applied,
    sequence: u64,
) -> Result<Value, String> {
    let mime = at(request, &["generationConfig", "responseMimeType"]);
    if mime != Some(&json!("application/json")) {
        return Err("the stand-in answers responseMimeType application/json only".to_owned());
    }
    let (text, urls) = read_parts(request)?;
    let seen = seen_from(text, &urls)?;
    let mut value = answer(call, &seen, applied)?;
    if applied.schema_violation {
        value["confidence"] = json!(0.99);
    }
    let mut content = value.to_string();
    if applied.malformed {
        content = content.chars().take(content.chars().count() / 2).collect();
    }
    let output = (content.chars().count() as u64).div_ceil(4);
    let prompt = (seen.text.chars().count() as u64).div_ceil(4) + IMAGE_TOKENS * urls.len() as u64;
    let mut body = candidate(json!([{ "text": content }]), sequence, model);
    if !applied.missing_usage {
        body["usageMetadata"] = usage_metadata(prompt, output);
    }
    Ok(body)
}

/// `POST /v1beta/models/{model}:generateContent`.
pub async fn generate_content(
    State(state): State<StandIn>,
    Path(action): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let job = job_of(&headers);
    let request: Option<Value> = serde_json::from_slice(&body).ok();
    let call = request.as_ref().map_or(Call::Other, call_of);
    let (sequence, applied) = state.arrive(call, job.as_deref());
    log_call(call, job.as_deref(), sequence, &applied);
    let Some((model, "generateContent")) = action.split_once(':') else {
        return with_request_id(
            gemini_error(StatusCode::NOT_FOUND, "NOT_FOUND", "unknown method"),
            sequence,
        );
    };
    let model = model.to_owned();
    let Some(request) = request else {
        return with_request_id(bad_request("the body is not JSON"), sequence);
    };
    if call == Call::Other {
        return with_request_id(
            bad_request("the stand-in answers image edits and the three vision schemas only"),
            sequence,
        );
    }
    if let Some(response) = before_answer(&applied).await {
        return with_request_id(response, sequence);
    }
    let serves = if call == Call::Edit {
        Serves::Edit
    } else {
        Serves::Vision
    };
    if let Some(refused) = model_refusal(&model, serves) {
        return with_request_id(refused, sequence);
    }
    let worked = tokio::task::spawn_blocking(move || match call {
        Call::Edit => edit(&request, &model, &applied, sequence),
        _ => vision(call, &request, &model, &applied, sequence),
    })
    .await;
    match worked {
        Ok(Ok(body)) => with_request_id(Json(body).into_response(), sequence),
        Ok(Err(message)) => with_request_id(bad_request(&message), sequence),
        Err(_) => with_request_id(
            gemini_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "answering failed",
            ),
            sequence,
        ),
    }
}
