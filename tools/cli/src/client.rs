//! HTTP to the Atelier API: bearer auth, bounded retries, and problem+json errors.
//!
//! Retrying is safe because of what is retried: reads, upload slots (a spare slot expires
//! unused), the S3 PUT (same bytes to the same key), cancel (repeating is harmless) and paid
//! submits, which always carry the same `Idempotency-Key` so the server answers a repeat with
//! the job it already charged for.

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Attempts per request (the first and up to four retries).
const MAX_ATTEMPTS: u32 = 5;
/// Longest single wait between attempts, whatever `Retry-After` asks for.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// Why a request did not give the expected answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server (or S3) answered with an error.
    #[error("{0}")]
    Problem(Box<Problem>),
    /// No answer, after every retry.
    #[error("{what}: no answer from the server after {attempts} attempts")]
    Network {
        what: String,
        attempts: u32,
        #[source]
        source: reqwest::Error,
    },
    /// A success answer that is not the JSON we expect.
    #[error("{what}: unexpected answer ({status})")]
    Decode {
        what: String,
        status: StatusCode,
        #[source]
        source: serde_json::Error,
    },
    #[error("building the request for {what}")]
    Build {
        what: String,
        #[source]
        source: reqwest::Error,
    },
}

/// One problem with one field (for `VALIDATION_FAILED`, `ASSET_NOT_FOUND`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct FieldError {
    pub field: String,
    pub code: String,
    pub message: String,
}

/// An error answer: RFC 9457 problem details when the API sent them, otherwise what could be
/// read from the body (S3's XML `<Code>`, or the start of the text).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct Problem {
    #[serde(skip)]
    pub status: u16,
    pub code: String,
    pub title: Option<String>,
    pub detail: Option<String>,
    pub errors: Vec<FieldError>,
    pub balance: Option<i64>,
    pub price: Option<u32>,
    pub state: Option<String>,
}

impl Problem {
    /// Reads an error answer. Never fails: an unreadable body still yields the status.
    pub fn parse(status: u16, body: &[u8]) -> Problem {
        if let Ok(mut p) = serde_json::from_slice::<Problem>(body)
            && !p.code.is_empty()
        {
            p.status = status;
            return p;
        }
        let text = String::from_utf8_lossy(body);
        let xml = |tag: &str| {
            let open = format!("<{tag}>");
            let start = text.find(&open)? + open.len();
            let len = text[start..].find(&format!("</{tag}>"))?;
            Some(text[start..start + len].trim().to_owned())
        };
        if let Some(code) = xml("Code") {
            // S3 refused the upload or download (expired link, wrong size or type).
            return Problem {
                status,
                code: format!("S3_{code}"),
                detail: xml("Message"),
                ..Problem::default()
            };
        }
        let snippet: String = text.trim().chars().take(200).collect();
        Problem {
            status,
            code: format!("HTTP_{status}"),
            detail: (!snippet.is_empty()).then_some(snippet),
            ..Problem::default()
        }
    }

    /// The sentence to show: `detail`, else `title`.
    pub fn message(&self) -> &str {
        self.detail
            .as_deref()
            .or(self.title.as_deref())
            .unwrap_or("")
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.code, self.status)?;
        // With field errors, the detail only repeats them: the title, then one line each.
        let message = match (&self.title, self.errors.is_empty()) {
            (Some(title), false) => title.as_str(),
            _ => self.message(),
        };
        if !message.is_empty() {
            write!(f, ": {message}")?;
        }
        for e in &self.errors {
            write!(f, "\n  {}: {} ({})", e.field, e.message, e.code)?;
        }
        if self.status == 401 {
            write!(
                f,
                "\n  log in with `atelier login` (`--user NAME` on a local run, `--with-token` to read one from stdin), or set ATELIER_TOKEN"
            )?;
        }
        Ok(())
    }
}

/// A complete answer.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as `T` when the status is a success, the problem otherwise.
    pub fn json<T: DeserializeOwned>(self, what: &str) -> Result<T, ClientError> {
        if !self.status.is_success() {
            return Err(self.into_problem());
        }
        serde_json::from_slice(&self.body).map_err(|source| ClientError::Decode {
            what: what.to_owned(),
            status: self.status,
            source,
        })
    }

    pub fn into_problem(self) -> ClientError {
        ClientError::Problem(Box::new(Problem::parse(self.status.as_u16(), &self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// When to stop between the request's bytes and its answer (the kill test's hook).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    None,
    /// Exit with status 3 as soon as the answer's status line arrives: the server has acted
    /// (charged) and the client dies without reading what it did.
    ExitAfterSent,
}

/// The API client.
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    /// Print retry notices (to stderr).
    pub verbose: bool,
}

impl Api {
    pub fn new(base: &str, token: Option<String>) -> Result<Api, ClientError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // Uploads are at most 20 MiB; slow links need more than the usual minute.
            .timeout(Duration::from_secs(300))
            .user_agent(concat!("atelier-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|source| ClientError::Build {
                what: "the HTTP client".into(),
                source,
            })?;
        Ok(Api {
            http,
            base: base.trim_end_matches('/').to_owned(),
            token,
            verbose: true,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// A request to an API path, with the bearer token when there is one.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let req = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    /// A request to a full URL without the bearer token (presigned S3 links, the dev issuer).
    pub fn external(&self, method: Method, url: &str) -> RequestBuilder {
        self.http.request(method, url)
    }

    /// `GET path` decoded as `T`.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send(path, || self.request(Method::GET, path), Hook::None)
            .await?
            .json(path)
    }

    /// Sends a request built by `build` (called again for each attempt), retrying network
    /// errors, 429 and 5xx with backoff (honouring `Retry-After`). Any other answer is returned
    /// as it is, error or not.
    pub async fn send(
        &self,
        what: &str,
        build: impl Fn() -> RequestBuilder,
        hook: Hook,
    ) -> Result<Reply, ClientError> {
        let mut attempt = 1;
        loop {
            let result = match build().send().await {
                Ok(res) => {
                    if hook == Hook::ExitAfterSent {
                        eprintln!("atelier: exiting after the submit was sent (test hook)");
                        std::process::exit(3);
                    }
                    let (status, headers) = (res.status(), res.headers().clone());
                    res.bytes().await.map(|b| Reply {
                        status,
                        headers,
                        body: b.to_vec(),
                    })
                }
                Err(e) => Err(e),
            };
            let wait = match &result {
                Ok(reply) if !retryable(reply.status) => None,
                Ok(reply) => Some((
                    retry_after(&reply.headers).unwrap_or_else(|| backoff(attempt)),
                    format!("the server answered {}", reply.status),
                )),
                Err(e) if e.is_builder() || e.is_redirect() => None,
                Err(e) => Some((backoff(attempt), format!("network error: {e}"))),
            };
            match (result, wait) {
                (Ok(reply), None) => return Ok(reply),
                (Err(source), None) => {
                    return Err(ClientError::Build {
                        what: what.to_owned(),
                        source,
                    });
                }
                (Ok(reply), Some(_)) if attempt >= MAX_ATTEMPTS => return Ok(reply),
                (Err(source), Some(_)) if attempt >= MAX_ATTEMPTS => {
                    return Err(ClientError::Network {
                        what: what.to_owned(),
                        attempts: attempt,
                        source,
                    });
                }
                (_, Some((wait, why))) => {
                    if self.verbose {
                        eprintln!(
                            "atelier: {what}: {why}; retrying in {:.1}s (attempt {} of {MAX_ATTEMPTS})",
                            wait.as_secs_f32(),
                            attempt + 1
                        );
                    }
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
            }
        }
    }
}

/// Answers worth another attempt: throttled, or the server side failed.
pub fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// `Retry-After` in seconds (the API sends seconds), capped.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let secs: u64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs).min(MAX_WAIT))
}

/// Exponential backoff from 0.5 s, capped, with up to 25% jitter so many clients spread out.
pub fn backoff(attempt: u32) -> Duration {
    let base = Duration::from_millis(500)
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(6))
        .min(MAX_WAIT);
    let jitter = u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * base.as_millis() as u64 / 1024;
    base + Duration::from_millis(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn a_problem_json_keeps_code_detail_and_field_errors() {
        let body = br#"{"type":"https://atelier.dev/problems/validation-failed","title":"The request is not valid",
            "status":422,"code":"VALIDATION_FAILED","detail":"style: is not a style",
            "errors":[{"field":"style","code":"unknown_style","message":"is not a style from GET /v1/styles"}]}"#;
        let p = Problem::parse(422, body);
        assert_eq!(p.code, "VALIDATION_FAILED");
        assert_eq!(p.message(), "style: is not a style");
        assert_eq!(p.errors.len(), 1);
        let shown = p.to_string();
        assert!(
            shown.starts_with("VALIDATION_FAILED (422): The request is not valid\n"),
            "{shown}"
        );
        assert!(
            shown.contains("style: is not a style from GET /v1/styles (unknown_style)"),
            "{shown}"
        );
    }

    #[test]
    fn insufficient_credits_carries_balance_and_price() {
        let body = br#"{"type":"x","title":"Not enough credits","status":402,"code":"INSUFFICIENT_CREDITS",
            "detail":"this edit costs 4 credits and the balance is 1","balance":1,"price":4}"#;
        let p = Problem::parse(402, body);
        assert_eq!(
            (p.code.as_str(), p.balance, p.price),
            ("INSUFFICIENT_CREDITS", Some(1), Some(4))
        );
    }

    #[test]
    fn a_problem_without_detail_shows_its_title() {
        let p = Problem::parse(
            409,
            br#"{"title":"Cannot cancel","code":"NOT_CANCELABLE","state":"succeeded"}"#,
        );
        assert_eq!(p.message(), "Cannot cancel");
        assert_eq!(p.state.as_deref(), Some("succeeded"));
    }

    #[test]
    fn an_s3_error_is_read_from_its_xml() {
        let body = b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>";
        let p = Problem::parse(403, body);
        assert_eq!(p.code, "S3_AccessDenied");
        assert_eq!(p.message(), "Request has expired");
    }

    #[test]
    fn any_other_body_still_gives_the_status_and_some_text() {
        let p = Problem::parse(502, b"Bad Gateway");
        assert_eq!((p.code.as_str(), p.message()), ("HTTP_502", "Bad Gateway"));
        let empty = Problem::parse(503, b"");
        assert_eq!((empty.code.as_str(), empty.detail), ("HTTP_503", None));
        let json_without_code = Problem::parse(500, br#"{"message":"Internal Server Error"}"#);
        assert_eq!(json_without_code.code, "HTTP_500");
    }

    #[test]
    fn a_401_says_how_to_log_in() {
        let p = Problem::parse(
            401,
            br#"{"code":"UNAUTHENTICATED","detail":"send a valid bearer token"}"#,
        );
        assert!(p.to_string().contains("atelier login"), "{p}");
    }

    #[test]
    fn throttling_and_server_errors_are_retried_other_answers_are_not() {
        for (status, expected) in [
            (429, true),
            (500, true),
            (503, true),
            (400, false),
            (402, false),
            (404, false),
            (409, false),
            (422, false),
            (200, false),
        ] {
            let status = StatusCode::from_u16(status).unwrap_or_default();
            assert_eq!(retryable(status), expected, "{status}");
        }
    }

    #[test]
    fn retry_after_is_honoured_up_to_a_cap() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert(RETRY_AFTER, HeaderValue::from_static("3600"));
        assert_eq!(retry_after(&h), Some(MAX_WAIT));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn backoff_grows_and_is_bounded() {
        let first = backoff(1);
        assert!(first >= Duration::from_millis(500) && first < Duration::from_millis(650));
        let third = backoff(3);
        assert!(third >= Duration::from_secs(2) && third < Duration::from_millis(2500));
        assert!(backoff(40) <= MAX_WAIT + MAX_WAIT / 4);
    }
}
