//! Which AWS service and operation a request is, from what is on the wire.
//!
//! The service comes from the SigV4 credential scope (`Authorization` header, or
//! `X-Amz-Credential` of a presigned URL), falling back to the `X-Amz-Target` prefix. The
//! operation comes from `X-Amz-Target` (the JSON protocols: DynamoDB, SQS, Secrets Manager),
//! `Action=` (the query protocol), or, for S3 (path-style), the method, whether the path names a
//! key, and the sub-resource in the query.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An AWS service as the proxy tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Service {
    DynamoDb,
    Sqs,
    S3,
    SecretsManager,
    /// Anything else (the emulator's own endpoints, unknown services).
    Other,
}

impl Service {
    pub fn as_str(self) -> &'static str {
        match self {
            Service::DynamoDb => "dynamodb",
            Service::Sqs => "sqs",
            Service::S3 => "s3",
            Service::SecretsManager => "secretsmanager",
            Service::Other => "other",
        }
    }

    pub fn parse(name: &str) -> Service {
        match name.to_ascii_lowercase().as_str() {
            "dynamodb" => Service::DynamoDb,
            "sqs" => Service::Sqs,
            "s3" => Service::S3,
            "secretsmanager" => Service::SecretsManager,
            _ => Service::Other,
        }
    }
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the request was encoded, which decides how an injected error must look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `X-Amz-Target` + JSON body (DynamoDB, SQS's JSON protocol, Secrets Manager).
    Json,
    /// `Action=` in a form body or the query string (SQS's older query protocol).
    Query,
    /// S3's REST-XML.
    RestXml,
    Other,
}

/// One service operation, e.g. `dynamodb TransactWriteItems` or `s3 PutObject`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Operation {
    pub service: Service,
    pub name: String,
}

impl Operation {
    pub fn new(service: Service, name: impl Into<String>) -> Operation {
        Operation {
            service,
            name: name.into(),
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.service, self.name)
    }
}

/// The parts of a request the classifier reads.
pub struct RequestView<'a> {
    pub method: &'a http::Method,
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub headers: &'a http::HeaderMap,
    /// A form-encoded body (only read for query-protocol requests).
    pub form_body: Option<&'a [u8]>,
}

/// Whether the body must be read to classify the request: a form post without `X-Amz-Target`
/// (the query protocol carries `Action=` in the body).
pub fn needs_form_body(headers: &http::HeaderMap) -> bool {
    headers.get("x-amz-target").is_none()
        && header(headers, "content-type")
            .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"))
}

fn header<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The service named by the SigV4 credential scope: `AKID/date/region/SERVICE/aws4_request`.
fn scope_service(view: &RequestView<'_>) -> Option<Service> {
    let from_header = header(view.headers, "authorization").and_then(|auth| {
        let cred = auth.split("Credential=").nth(1)?;
        let cred = cred.split([',', ' ']).next()?;
        cred.split('/').nth(3).map(str::to_owned)
    });
    let from_query = || {
        view.query.and_then(|q| {
            let v = query_param(q, "X-Amz-Credential")?;
            v.split('/').nth(3).map(str::to_owned)
        })
    };
    from_header.or_else(from_query).map(|s| Service::parse(&s))
}

/// A query-string parameter, percent-decoded (`+` is a space in forms).
pub(crate) fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == name).then(|| percent_decode(v))
    })
}

fn has_param(query: Option<&str>, name: &str) -> bool {
    query.is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split_once('=').map_or(pair, |(k, _)| k) == name)
    })
}

pub(crate) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Classifies a request.
pub fn classify(view: &RequestView<'_>) -> (Operation, Protocol) {
    if view.path.starts_with("/_") {
        // The emulator's own endpoints (`/_ministack/health`, ...).
        return (
            Operation::new(Service::Other, view.path.trim_start_matches('/')),
            Protocol::Other,
        );
    }
    let scoped = scope_service(view);
    if let Some(target) = header(view.headers, "x-amz-target") {
        let (prefix, name) = target.rsplit_once('.').unwrap_or(("", target));
        let service = scoped.unwrap_or_else(|| {
            if prefix.starts_with("DynamoDB") {
                Service::DynamoDb
            } else if prefix.starts_with("AmazonSQS") {
                Service::Sqs
            } else if prefix.eq_ignore_ascii_case("secretsmanager") {
                Service::SecretsManager
            } else {
                Service::Other
            }
        });
        return (Operation::new(service, name), Protocol::Json);
    }
    let action = view
        .query
        .and_then(|q| query_param(q, "Action"))
        .or_else(|| {
            view.form_body
                .and_then(|b| query_param(&String::from_utf8_lossy(b), "Action"))
        });
    if let Some(action) = action {
        return (
            Operation::new(scoped.unwrap_or(Service::Sqs), action),
            Protocol::Query,
        );
    }
    match scoped {
        None | Some(Service::S3) => (
            Operation::new(Service::S3, s3_operation(view)),
            Protocol::RestXml,
        ),
        Some(other) => (Operation::new(other, "Unknown"), Protocol::Other),
    }
}

/// S3's operation for a path-style request: `/bucket` or `/bucket/key`.
fn s3_operation(view: &RequestView<'_>) -> String {
    let path = view.path.trim_start_matches('/');
    let (bucket, key) = path.split_once('/').unwrap_or((path, ""));
    let q = view.query;
    let is = |p: &str| has_param(q, p);
    let name = match (view.method.as_str(), bucket.is_empty(), key.is_empty()) {
        ("GET", true, _) => "ListBuckets",
        ("GET", false, false) => "GetObject",
        ("HEAD", false, false) => "HeadObject",
        ("DELETE", false, false) if is("uploadId") => "AbortMultipartUpload",
        ("DELETE", false, false) => "DeleteObject",
        ("PUT", false, false) if is("uploadId") => "UploadPart",
        ("PUT", false, false) if view.headers.contains_key("x-amz-copy-source") => "CopyObject",
        ("PUT", false, false) => "PutObject",
        ("POST", false, false) if is("uploads") => "CreateMultipartUpload",
        ("POST", false, false) if is("uploadId") => "CompleteMultipartUpload",
        ("POST", false, true) if is("delete") => "DeleteObjects",
        ("GET", false, true) if is("list-type") => "ListObjectsV2",
        ("GET", false, true) if is("location") => "GetBucketLocation",
        ("GET", false, true) if is("uploads") => "ListMultipartUploads",
        ("GET", false, true) => "ListObjects",
        ("HEAD", false, true) => "HeadBucket",
        ("PUT", false, true) if q.is_some_and(|q| !q.is_empty()) => "PutBucketConfiguration",
        ("PUT", false, true) => "CreateBucket",
        ("DELETE", false, true) => "DeleteBucket",
        _ => "Unknown",
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(
        method: &'a http::Method,
        path: &'a str,
        query: Option<&'a str>,
        headers: &'a http::HeaderMap,
    ) -> RequestView<'a> {
        RequestView {
            method,
            path,
            query,
            headers,
            form_body: None,
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                *k,
                http::HeaderValue::from_str(v).unwrap_or_else(|e| panic!("{e}")),
            );
        }
        h
    }

    #[test]
    fn json_protocol_targets_name_service_and_operation() {
        let post = http::Method::POST;
        let h = headers(&[
            ("x-amz-target", "DynamoDB_20120810.TransactWriteItems"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=test/20261129/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00",
            ),
        ]);
        let (op, proto) = classify(&view(&post, "/", None, &h));
        assert_eq!(op, Operation::new(Service::DynamoDb, "TransactWriteItems"));
        assert_eq!(proto, Protocol::Json);

        let h = headers(&[("x-amz-target", "AmazonSQS.SendMessage")]);
        let (op, _) = classify(&view(&post, "/", None, &h));
        assert_eq!(op, Operation::new(Service::Sqs, "SendMessage"));

        let h = headers(&[("x-amz-target", "secretsmanager.GetSecretValue")]);
        let (op, _) = classify(&view(&post, "/", None, &h));
        assert_eq!(
            op,
            Operation::new(Service::SecretsManager, "GetSecretValue")
        );
    }

    #[test]
    fn query_protocol_reads_action_from_the_query_or_the_form() {
        let post = http::Method::POST;
        let h = headers(&[("content-type", "application/x-www-form-urlencoded")]);
        assert!(needs_form_body(&h));
        let body = b"Action=SendMessage&QueueUrl=http%3A%2F%2Fx&MessageBody=%7B%7D";
        let v = RequestView {
            form_body: Some(body),
            ..view(&post, "/000000000000/q", None, &h)
        };
        assert_eq!(classify(&v).0, Operation::new(Service::Sqs, "SendMessage"));
        assert_eq!(classify(&v).1, Protocol::Query);
    }

    #[test]
    fn s3_operations_follow_method_key_and_subresource() {
        let none = http::HeaderMap::new();
        let presigned = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=test%2F20261129%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=00";
        let cases: [(http::Method, &str, Option<&str>, &str); 9] = [
            (http::Method::PUT, "/b/users/u/a.png", None, "PutObject"),
            (
                http::Method::PUT,
                "/b/users/u/a.png",
                Some(presigned),
                "PutObject",
            ),
            (
                http::Method::GET,
                "/b/k",
                Some("x-id=GetObject"),
                "GetObject",
            ),
            (http::Method::HEAD, "/b/k", None, "HeadObject"),
            (http::Method::DELETE, "/b/k", None, "DeleteObject"),
            (http::Method::PUT, "/b", None, "CreateBucket"),
            (http::Method::HEAD, "/b", None, "HeadBucket"),
            (
                http::Method::GET,
                "/b",
                Some("list-type=2&prefix=x"),
                "ListObjectsV2",
            ),
            (
                http::Method::POST,
                "/b/k",
                Some("uploads"),
                "CreateMultipartUpload",
            ),
        ];
        for (method, path, query, want) in cases {
            let (op, proto) = classify(&view(&method, path, query, &none));
            assert_eq!(
                op,
                Operation::new(Service::S3, want),
                "{method} {path} {query:?}"
            );
            assert_eq!(proto, Protocol::RestXml);
        }
    }

    #[test]
    fn emulator_endpoints_are_other() {
        let get = http::Method::GET;
        let none = http::HeaderMap::new();
        let (op, _) = classify(&view(&get, "/_ministack/health", None, &none));
        assert_eq!(op.service, Service::Other);
    }

    #[test]
    fn percent_decoding_handles_plus_and_bad_escapes() {
        assert_eq!(percent_decode("a%2Fb+c%zz%4"), "a/b c%zz%4");
    }
}
