//! What both providers' endpoints do around a call alike: the job it is for, the request id on
//! the answer, the call's log line, and a gateway's fault page in front of either.

use atelier_shared::adapters::model::CLIENT_REQUEST_ID_HEADER;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::state::{Applied, Call, Fault};

pub(crate) fn job_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(CLIENT_REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

pub(crate) fn with_request_id(mut response: Response, sequence: u64) -> Response {
    if let Ok(v) = HeaderValue::from_str(&format!("standin-{sequence}")) {
        response.headers_mut().insert("x-request-id", v);
    }
    response
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

pub(crate) fn log_call(call: Call, job: Option<&str>, sequence: u64, applied: &Applied) {
    tracing::info!(
        call = call.as_str(),
        job_id = job.unwrap_or(""),
        sequence,
        faults = %applied.describe(),
        "stand_in_call"
    );
}
