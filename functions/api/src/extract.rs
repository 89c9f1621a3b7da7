//! Extractors that turn HTTP into typed values or a problem response: JSON bodies (with the
//! path of a bad field), the `Idempotency-Key` header, pagination parameters, the result's
//! download format, and a read's wait and `If-None-Match`.

use atelier_shared::domain::validation::{FieldCode, FieldErrors};
use atelier_shared::domain::{IdempotencyKey, ResultFormat, TraceId};
use atelier_shared::services::watch::{MAX_WAIT_SECS, Wait};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use http::request::Parts;
use http::{StatusCode, header};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ProblemCode};

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
                    ProblemCode::UnsupportedMediaType,
                    "JSON required",
                )
                .detail("send Content-Type: application/json"));
            }
        }
        let bytes = read_body(req, state, ProblemCode::MalformedJson).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// A route's body limit, as the router set it beside axum's `DefaultBodyLimit`: what a
/// `413` names. Absent, the limit is [`MAX_JSON_BYTES`].
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// The raw bytes of a body a provider signs (webhooks): read whole up to the route's limit,
/// refused as `413 PAYLOAD_TOO_LARGE` problem+json past it, like [`JsonBody`].
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<RawBody, ApiError> {
        read_body(req, state, ProblemCode::MalformedEvent)
            .await
            .map(RawBody)
    }
}

/// The whole body, or a problem: past the route's limit `413 PAYLOAD_TOO_LARGE`; a body
/// that could not be read (the client went away mid-body) `400` with `unreadable`.
async fn read_body<S: Send + Sync>(
    req: Request,
    state: &S,
    unreadable: ProblemCode,
) -> Result<Bytes, ApiError> {
    let limit = req
        .extensions()
        .get::<BodyLimit>()
        .map_or(MAX_JSON_BYTES, |l| l.0);
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ProblemCode::PayloadTooLarge,
                "Body too large",
            )
            .detail(format!(
                "this endpoint takes bodies of at most {limit} bytes"
            ))
        } else {
            ApiError::bad_request(unreadable, "the body could not be read whole")
        }
    })
}

/// Parses JSON bytes into `T` with the error mapping described on [`JsonBody`]. Every body
/// of this API is a JSON object: any other top-level value (an array, which serde would
/// read as the fields in order, a string, a number, `null`) is `422`, whatever `T` accepts.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let parsed = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ApiError::bad_request(
                ProblemCode::MalformedJson,
                format!("the body is not valid JSON: {inner}"),
            )
        } else if !is_object(bytes) {
            not_an_object()
        } else {
            let mut errors = FieldErrors::default();
            let field = if path == "." { "body".to_owned() } else { path };
            errors.push(field, FieldCode::Invalid, inner.to_string());
            ApiError::validation(errors)
        }
    })?;
    if is_object(bytes) {
        Ok(parsed)
    } else {
        Err(not_an_object())
    }
}

/// JSON's begin-object character, named so no brace sits in a byte literal (line-counting
/// tools that match braces miscount a function holding one).
const BEGIN_OBJECT: u8 = 0x7B;

/// Whether valid JSON `bytes` hold an object at the top (JSON's whitespace is these four).
fn is_object(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        == Some(&BEGIN_OBJECT)
}

fn not_an_object() -> ApiError {
    let mut errors = FieldErrors::default();
    errors.push("body", FieldCode::Invalid, "must be a JSON object");
    ApiError::validation(errors)
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
                ProblemCode::IdempotencyKeyRequired,
                "paid requests need an Idempotency-Key header (a fresh random value per new request, reused on retry)",
            ));
        };
        raw.to_str()
            .ok()
            .and_then(IdempotencyKey::parse)
            .map(IdempotencyKeyHeader)
            .ok_or_else(|| {
                ApiError::bad_request(
                    ProblemCode::IdempotencyKeyInvalid,
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
                        FieldCode::OutOfRange,
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
                    None => errors.push("format", FieldCode::Invalid, "must be jpeg or png"),
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

/// How long `GET /v1/edits/{id}` may wait for the job to change: `?wait=N` (1 to 20; anything
/// else is `400 INVALID_WAIT`), else `Prefer: wait=N` (RFC 7240: a wish, so a longer one
/// gets 20 s and a malformed one is ignored and answered at once). `None`: answer at once.
#[derive(Debug, Clone, Copy)]
pub struct WaitPreference(pub Option<Wait>);

impl<S: Send + Sync> FromRequestParts<S> for WaitPreference {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<WaitPreference, ApiError> {
        let query = serde_urlencoded_pairs(parts.uri.query().unwrap_or(""));
        if let Some((_, v)) = query.iter().find(|(k, _)| k == "wait") {
            return v
                .parse::<u64>()
                .ok()
                .and_then(Wait::exact)
                .map(|w| WaitPreference(Some(w)))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        ProblemCode::InvalidWait,
                        format!("wait must be a whole number of seconds from 1 to {MAX_WAIT_SECS}"),
                    )
                });
        }
        let prefer = parts
            .headers
            .get_all("prefer")
            .iter()
            .filter_map(|v| v.to_str().ok());
        Ok(WaitPreference(prefer_wait(prefer).and_then(Wait::at_most)))
    }
}

/// The seconds of the first `wait` preference (RFC 7240 §2: later ones are ignored), if it is
/// well-formed: `wait=N` or `wait="N"`, N digits only, parameters after `;` allowed.
fn prefer_wait<'a>(headers: impl Iterator<Item = &'a str>) -> Option<u64> {
    let value = headers
        .flat_map(|h| h.split(','))
        .filter_map(|pref| {
            let token = pref.split(';').next().unwrap_or("").trim();
            let (name, value) = token.split_once('=').unwrap_or((token, ""));
            name.trim()
                .eq_ignore_ascii_case("wait")
                .then_some(value.trim())
        })
        .next()?;
    let digits = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    if digits.is_empty() || digits.len() > 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `If-None-Match` (RFC 9110 §13.1.2): `*` or entity tags, compared weakly.
#[derive(Debug, Clone, Default)]
pub struct IfNoneMatch(Option<Vec<String>>);

/// Longest `If-None-Match` read (a client sends back one tag of ours, about 50 bytes).
const MAX_IF_NONE_MATCH: usize = 1024;

impl IfNoneMatch {
    pub fn is_present(&self) -> bool {
        self.0.is_some()
    }

    /// Whether the client already holds `etag` (weak comparison: `W/` is ignored).
    pub fn matches(&self, etag: &str) -> bool {
        let opaque = |t: &str| t.strip_prefix("W/").unwrap_or(t).to_owned();
        let ours = opaque(etag);
        self.0
            .iter()
            .flatten()
            .any(|t| t == "*" || opaque(t) == ours)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for IfNoneMatch {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<IfNoneMatch, ApiError> {
        let values: Vec<&str> = parts
            .headers
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        if values.is_empty() || values.iter().map(|v| v.len()).sum::<usize>() > MAX_IF_NONE_MATCH {
            // Too long to be one of ours: it matches nothing, as if absent.
            return Ok(IfNoneMatch(None));
        }
        let tags = values
            .iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect();
        Ok(IfNoneMatch(Some(tags)))
    }
}

/// The request's trace id (see [`TraceId`]): the Lambda invocation's X-Ray trace, else an
/// `X-Amzn-Trace-Id` header; never refused (a malformed one is ignored and the job gets its
/// own).
pub struct IncomingTrace(pub Option<TraceId>);

impl<S: Send + Sync> FromRequestParts<S> for IncomingTrace {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &S,
    ) -> Result<IncomingTrace, Self::Rejection> {
        let invocation = parts
            .extensions
            .get::<lambda_http::Context>()
            .and_then(|c| c.xray_trace_id.as_deref())
            .and_then(TraceId::from_header);
        let header = || {
            parts
                .headers
                .get("x-amzn-trace-id")
                .and_then(|v| v.to_str().ok())
                .and_then(TraceId::from_header)
        };
        Ok(IncomingTrace(invocation.or_else(header)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_well_formed_first_wait_preference_counts() {
        let cases: [(&[&str], Option<u64>, &str); 10] = [
            (&["wait=5"], Some(5), "plain"),
            (
                &["WAIT = 7"],
                Some(7),
                "names are case-insensitive, spaces allowed",
            ),
            (&["respond-async, wait=3"], Some(3), "among others"),
            (&["wait=\"4\""], Some(4), "quoted"),
            (&["wait=9; foo=bar"], Some(9), "with a parameter"),
            (&["wait=2", "wait=8"], Some(2), "the first one counts"),
            (&["wait=abc"], None, "not a number"),
            (&["wait=-1"], None, "negative"),
            (&["wait=1.5"], None, "not whole"),
            (&["return=minimal"], None, "no wait"),
        ];
        for (headers, want, why) in cases {
            assert_eq!(prefer_wait(headers.iter().copied()), want, "{why}");
        }
    }

    #[test]
    fn if_none_match_compares_weakly_and_star_matches_anything() {
        let inm = |tags: &[&str]| IfNoneMatch(Some(tags.iter().map(|t| (*t).to_owned()).collect()));
        assert!(inm(&["W/\"a-jpeg\""]).matches("W/\"a-jpeg\""));
        assert!(
            inm(&["\"a-jpeg\""]).matches("W/\"a-jpeg\""),
            "weak comparison"
        );
        assert!(
            inm(&["\"x\"", "W/\"a-jpeg\""]).matches("W/\"a-jpeg\""),
            "one of a list"
        );
        assert!(inm(&["*"]).matches("W/\"a-jpeg\""));
        assert!(!inm(&["W/\"a-png\""]).matches("W/\"a-jpeg\""));
        assert!(!IfNoneMatch(None).matches("W/\"a-jpeg\""), "absent");
    }
}
