//! The HTTP surface: the two OpenAI endpoints the client uses, and the `/_stand-in/` control
//! endpoints (counters, reset, faults). The vision answers themselves are `judge.rs`'s.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use atelier_shared::adapters::model::catalogue::{self, Serves};
use atelier_shared::adapters::model::vision::{COMPARISON_SCHEMA, READINESS_SCHEMA, REVIEW_SCHEMA};
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

use crate::exchange::{gateway_answer, job_of, log_call, with_request_id};
use crate::judge::{Seen, answer};
use crate::render::{EditForm, render_edit};
use crate::seen::seen_from;
use crate::state::{Applied, Call, CallCounts, Fault, FaultRule, StandIn};

/// Largest request body: three or four base64 images in one chat request.
const MAX_BODY_BYTES: usize = 128 * 1024 * 1024;

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
        .route(
            "/_stand-in/content-credentials-anchor",
            get(|| async { crate::credentials::anchor_pem().unwrap_or_default() }),
        )
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

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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

// ---------------------------------------------------------------------------------------------
// POST /v1/images/edits

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
    let png = match applied.content_credentials {
        true => match crate::credentials::signed(&edited.png) {
            Ok(png) => png,
            Err(e) => return with_request_id(bad_request(&e.to_string()), sequence),
        },
        false => edited.png,
    };
    let b64 = if applied.malformed {
        "%%% not base64 %%%".to_owned()
    } else {
        BASE64.encode(&png)
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
