//! Extractors that turn HTTP into typed values or a problem response: JSON bodies (with the
//! path of a bad field), the `Idempotency-Key` header, pagination parameters and the result's
//! download format.

use atelier_shared::domain::{IdempotencyKey, ResultFormat};
use atelier_shared::validation::FieldErrors;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use http::request::Parts;
use http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Largest JSON body accepted (no endpoint takes image bytes).
pub const MAX_JSON_BYTES: usize = 16 * 1024;

/// A JSON body; syntax errors are `400 MALFORMED_JSON`, shape errors `422 VALIDATION_FAILED`
/// naming the field.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<JsonBody<T>, ApiError> {
        if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
            let json = ct
                .to_str()
                .map(|v| {
                    let mime = v
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_ascii_lowercase();
                    mime == "application/json" || mime.ends_with("+json")
                })
                .unwrap_or(false);
            if !json {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "UNSUPPORTED_MEDIA_TYPE",
                    "JSON required",
                )
                .detail("send Content-Type: application/json"));
            }
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                "Body too large",
            )
            .detail(format!("bodies are limited to {MAX_JSON_BYTES} bytes"))
        })?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Parses JSON bytes into `T` with the error mapping described on [`JsonBody`].
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ApiError::bad_request(
                "MALFORMED_JSON",
                format!("the body is not valid JSON: {inner}"),
            )
        } else {
            let mut errors = FieldErrors::default();
            let field = if path == "." { "body".to_owned() } else { path };
            errors.push(field, "invalid", inner.to_string());
            ApiError::validation(errors)
        }
    })
}

/// The required `Idempotency-Key` header of paid requests.
pub struct IdempotencyKeyHeader(pub IdempotencyKey);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKeyHeader {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &S,
    ) -> Result<IdempotencyKeyHeader, ApiError> {
        let Some(raw) = parts.headers.get("idempotency-key") else {
            return Err(ApiError::bad_request(
                "IDEMPOTENCY_KEY_REQUIRED",
                "paid requests need an Idempotency-Key header (a fresh random value per new request, reused on retry)",
            ));
        };
        raw.to_str()
            .ok()
            .and_then(IdempotencyKey::parse)
            .map(IdempotencyKeyHeader)
            .ok_or_else(|| {
                ApiError::bad_request(
                    "IDEMPOTENCY_KEY_INVALID",
                    format!(
                        "the Idempotency-Key must be 1 to {} visible ASCII characters",
                        IdempotencyKey::MAX_LEN
                    ),
                )
            })
    }
}

/// `?limit=&cursor=`.
#[derive(Debug, Clone)]
pub struct Pagination {
    pub limit: u16,
    pub cursor: Option<String>,
}

impl Pagination {
    pub const DEFAULT_LIMIT: u16 = 20;
    pub const MAX_LIMIT: u16 = 100;
}

impl<S: Send + Sync> FromRequestParts<S> for Pagination {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Pagination, ApiError> {
        let mut limit = Pagination::DEFAULT_LIMIT;
        let mut cursor = None;
        let mut errors = FieldErrors::default();
        let query = parts.uri.query().unwrap_or("");
        let pairs: Vec<(String, String)> = serde_urlencoded_pairs(query);
        for (k, v) in pairs {
            match k.as_str() {
                "limit" => match v.parse::<u16>() {
                    Ok(n) if (1..=Pagination::MAX_LIMIT).contains(&n) => limit = n,
                    _ => errors.push(
                        "limit",
                        "out_of_range",
                        format!("must be an integer from 1 to {}", Pagination::MAX_LIMIT),
                    ),
                },
                "cursor" if !v.is_empty() => cursor = Some(v),
                _ => {}
            }
        }
        errors
            .finish(Pagination { limit, cursor })
            .map_err(ApiError::validation)
    }
}

/// `?format=jpeg|png`: the file a delivered result is downloaded as (default `jpeg`, what a
/// phone wants; `png` is the lossless master). Anything else is `422 VALIDATION_FAILED`.
#[derive(Debug, Clone, Copy)]
pub struct DownloadFormat(pub ResultFormat);

impl<S: Send + Sync> FromRequestParts<S> for DownloadFormat {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<DownloadFormat, ApiError> {
        let mut format = ResultFormat::default();
        let mut errors = FieldErrors::default();
        for (k, v) in serde_urlencoded_pairs(parts.uri.query().unwrap_or("")) {
            if k == "format" {
                match ResultFormat::parse(&v) {
                    Some(f) => format = f,
                    None => errors.push("format", "invalid", "must be jpeg or png"),
                }
            }
        }
        errors
            .finish(DownloadFormat(format))
            .map_err(ApiError::validation)
    }
}

fn serde_urlencoded_pairs(query: &str) -> Vec<(String, String)> {
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(
        &format!("/?{query}")
            .parse()
            .unwrap_or_else(|_| http::Uri::from_static("/")),
    )
    .map(|q| q.0)
    .unwrap_or_default()
}
