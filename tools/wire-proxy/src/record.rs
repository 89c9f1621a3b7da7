//! What each caller asked AWS to do, as IAM sees it: the principal, the IAM action and the
//! resource ARN of every request, for the permission check of `infra/iam` (which evaluates each
//! recorded call against the roles' policies, independently of the emulator).
//!
//! One request can be several authorisations: a `TransactWriteItems` is one action per item on
//! that item's table (Put → `PutItem`, Update → `UpdateItem`, Delete → `DeleteItem`,
//! ConditionCheck → `ConditionCheckItem`), a `CopyObject` reads its source and writes its
//! destination, a `DeleteObjects` deletes each key. Resource ARNs use the region of the SigV4
//! scope and the local account ([`LOCAL_ACCOUNT`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::classify::{Operation, RequestView, Service, query_param};

/// The account every local resource lives in (ministack's default).
pub const LOCAL_ACCOUNT: &str = "000000000000";

/// One authorisation a request needs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Call {
    /// Who asked: the proxy's label, or the SigV4 access key id.
    pub principal: String,
    /// The IAM service prefix (`dynamodb`, `s3`, `sqs`, `secretsmanager`, `lambda`).
    pub service: String,
    /// The IAM action, e.g. `dynamodb:ConditionCheckItem`.
    pub action: String,
    /// The resource ARN (`*` for an action on no resource).
    pub resource: String,
    /// Condition keys a policy may test, with the request's values (`s3:prefix`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context: BTreeMap<String, String>,
}

/// How a recording proxy names the caller of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attribution {
    /// The SigV4 access key id (a caller per key; a presigned URL is its signer's).
    AccessKey,
    /// Every request is this caller's (a proxy that only one function talks to).
    Fixed(String),
}

/// Whether recording the request needs its (small) body: the JSON protocols name the table,
/// queue or secret there, and `DeleteObjects` lists its keys there.
pub fn needs_body(view: &RequestView<'_>) -> bool {
    view.headers.contains_key("x-amz-target")
        || (view.method == http::Method::POST
            && view
                .query
                .is_some_and(|q| q.split('&').any(|p| p == "delete" || p == "delete=")))
}

/// The caller of a request under `attribution`.
pub fn principal(attribution: &Attribution, view: &RequestView<'_>) -> String {
    match attribution {
        Attribution::Fixed(name) => name.clone(),
        Attribution::AccessKey => credential(view)
            .and_then(|c| c.split('/').next().map(str::to_owned))
            .unwrap_or_else(|| "anonymous".to_owned()),
    }
}

/// `AKID/date/region/service/aws4_request`, from the header or a presigned URL.
fn credential(view: &RequestView<'_>) -> Option<String> {
    let from_header = view
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|auth| {
            let cred = auth.split("Credential=").nth(1)?;
            cred.split([',', ' ']).next().map(str::to_owned)
        });
    from_header.or_else(|| view.query.and_then(|q| query_param(q, "X-Amz-Credential")))
}

/// The calls one request makes, without the principal (filled in by the caller).
pub fn calls(op: &Operation, view: &RequestView<'_>, body: Option<&[u8]>) -> Vec<Call> {
    let scope = credential(view);
    let mut parts = scope.as_deref().unwrap_or_default().split('/').skip(2);
    let region = parts
        .next()
        .filter(|r| !r.is_empty())
        .unwrap_or("us-east-1");
    let service = parts.next().unwrap_or_default();
    let json: Value = body
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or(Value::Null);
    let at = Arns { region };
    let found = match op.service {
        Service::DynamoDb => dynamodb(&op.name, &json, &at),
        Service::Sqs => sqs(&op.name, &json, view, &at),
        Service::SecretsManager => secrets(&op.name, &json, &at),
        Service::S3 => s3(&op.name, view, body),
        Service::Other if service == "lambda" => lambda(view, &at),
        Service::Other => Vec::new(),
    };
    found
        .into_iter()
        .map(|(action, resource, context)| Call {
            principal: String::new(),
            service: action.split(':').next().unwrap_or_default().to_owned(),
            action,
            resource,
            context,
        })
        .collect()
}

type Found = (String, String, BTreeMap<String, String>);

fn plain(action: String, resource: String) -> Found {
    (action, resource, BTreeMap::new())
}

struct Arns<'a> {
    region: &'a str,
}

impl Arns<'_> {
    fn of(&self, service: &str, resource: &str) -> String {
        if resource.starts_with("arn:") {
            return resource.to_owned();
        }
        format!(
            "arn:aws:{service}:{}:{LOCAL_ACCOUNT}:{resource}",
            self.region
        )
    }

    fn table(&self, name: &str) -> String {
        if name.starts_with("arn:") {
            name.to_owned()
        } else {
            self.of("dynamodb", &format!("table/{name}"))
        }
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn dynamodb(op: &str, body: &Value, at: &Arns<'_>) -> Vec<Found> {
    let action = |name: &str| format!("dynamodb:{name}");
    match op {
        "TransactWriteItems" | "TransactGetItems" => body
            .get("TransactItems")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|item| {
                let (kind, inner) = item.as_object()?.iter().next()?;
                let item_action = match kind.as_str() {
                    "Put" => "PutItem",
                    "Update" => "UpdateItem",
                    "Delete" => "DeleteItem",
                    "ConditionCheck" => "ConditionCheckItem",
                    "Get" => "GetItem",
                    _ => return None,
                };
                Some(plain(
                    action(item_action),
                    at.table(str_at(inner, "TableName")?),
                ))
            })
            .collect(),
        "BatchWriteItem" | "BatchGetItem" => body
            .get("RequestItems")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(table, _)| plain(action(op), at.table(table)))
            .collect(),
        _ => {
            let resource = match (str_at(body, "TableName"), str_at(body, "IndexName")) {
                (Some(t), Some(i)) => format!("{}/index/{i}", at.table(t)),
                (Some(t), None) => at.table(t),
                (None, _) => str_at(body, "StreamArn").unwrap_or("*").to_owned(),
            };
            vec![plain(action(op), resource)]
        }
    }
}

/// The queue ARN of a queue URL (`…/ACCOUNT/NAME`).
fn queue_arn(url: &str, at: &Arns<'_>) -> String {
    let mut segments = url.trim_end_matches('/').rsplit('/');
    let name = segments.next().unwrap_or_default();
    let account = segments
        .next()
        .filter(|a| a.len() == 12 && a.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or(LOCAL_ACCOUNT);
    format!("arn:aws:sqs:{}:{account}:{name}", at.region)
}

fn sqs(op: &str, body: &Value, view: &RequestView<'_>, at: &Arns<'_>) -> Vec<Found> {
    // Batches are authorised as their single action.
    let action = op.strip_suffix("Batch").unwrap_or(op);
    let form = view.form_body.map(String::from_utf8_lossy);
    let from_form = |k: &str| form.as_deref().and_then(|f| query_param(f, k));
    let resource = if let Some(url) = str_at(body, "QueueUrl")
        .map(str::to_owned)
        .or_else(|| from_form("QueueUrl"))
    {
        queue_arn(&url, at)
    } else if let Some(name) = str_at(body, "QueueName")
        .map(str::to_owned)
        .or_else(|| from_form("QueueName"))
    {
        at.of("sqs", &name)
    } else if view.path.len() > 1 {
        // The query protocol may address the queue by its URL's path.
        queue_arn(view.path, at)
    } else {
        "*".to_owned()
    };
    vec![plain(format!("sqs:{action}"), resource)]
}

fn secrets(op: &str, body: &Value, at: &Arns<'_>) -> Vec<Found> {
    let resource = str_at(body, "SecretId")
        .map(|id| at.of("secretsmanager", &format!("secret:{id}")))
        .unwrap_or_else(|| "*".to_owned());
    vec![plain(format!("secretsmanager:{op}"), resource)]
}

fn lambda(view: &RequestView<'_>, at: &Arns<'_>) -> Vec<Found> {
    // `POST /2015-03-31/functions/{name}/invocations`.
    let mut segments = view.path.trim_matches('/').split('/');
    match (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) {
        (Some(_), Some("functions"), Some(name), Some("invocations")) => {
            let name = percent_decode(name);
            let resource = if name.starts_with("arn:") {
                name
            } else {
                at.of("lambda", &format!("function:{name}"))
            };
            vec![plain("lambda:InvokeFunction".to_owned(), resource)]
        }
        _ => vec![plain("lambda:Unknown".to_owned(), "*".to_owned())],
    }
}

fn s3(op: &str, view: &RequestView<'_>, body: Option<&[u8]>) -> Vec<Found> {
    let path = view.path.trim_start_matches('/');
    let (bucket, key) = path.split_once('/').unwrap_or((path, ""));
    let bucket = percent_decode(bucket);
    let object = |key: &str| format!("arn:aws:s3:::{bucket}/{key}");
    let this_object = object(&percent_decode(key));
    let bucket_arn = format!("arn:aws:s3:::{bucket}");
    let s3 = |a: &str| format!("s3:{a}");
    match op {
        "GetObject" | "HeadObject" => vec![plain(s3("GetObject"), this_object)],
        "PutObject" | "UploadPart" | "CreateMultipartUpload" | "CompleteMultipartUpload" => {
            vec![plain(s3("PutObject"), this_object)]
        }
        "CopyObject" => {
            let source = view
                .headers
                .get("x-amz-copy-source")
                .and_then(|v| v.to_str().ok())
                .map(|s| {
                    let s = s.split('?').next().unwrap_or(s);
                    format!("arn:aws:s3:::{}", percent_decode(s.trim_start_matches('/')))
                })
                .unwrap_or_else(|| "*".to_owned());
            vec![
                plain(s3("GetObject"), source),
                plain(s3("PutObject"), this_object),
            ]
        }
        "DeleteObject" => vec![plain(s3("DeleteObject"), this_object)],
        "DeleteObjects" => xml_values(body.unwrap_or_default(), "Key")
            .iter()
            .map(|k| plain(s3("DeleteObject"), object(k)))
            .collect(),
        "AbortMultipartUpload" => vec![plain(s3("AbortMultipartUpload"), this_object)],
        "ListObjectsV2" | "ListObjects" => {
            let prefix = view
                .query
                .and_then(|q| query_param(q, "prefix"))
                .unwrap_or_default();
            let context = BTreeMap::from([("s3:prefix".to_owned(), prefix)]);
            vec![(s3("ListBucket"), bucket_arn, context)]
        }
        "HeadBucket" => vec![plain(s3("ListBucket"), bucket_arn)],
        "ListMultipartUploads" => vec![plain(s3("ListBucketMultipartUploads"), bucket_arn)],
        "ListBuckets" => vec![plain(s3("ListAllMyBuckets"), "*".to_owned())],
        other => vec![plain(s3(other), bucket_arn)],
    }
}

/// The text of every `<tag>…</tag>` in a small XML body, unescaped.
fn xml_values(body: &[u8], tag: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    text.split(open.as_str())
        .skip(1)
        .filter_map(|rest| rest.split_once(close.as_str()).map(|(v, _)| v))
        .map(|v| {
            v.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&")
        })
        .collect()
}

/// A path segment, percent-decoded (`+` stays: paths are not forms).
fn percent_decode(s: &str) -> String {
    crate::classify::percent_decode(&s.replace('+', "%2B"))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    const AUTH: &str = "AWS4-HMAC-SHA256 Credential=api/20261201/eu-west-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00";

    fn record(
        method: http::Method,
        path: &str,
        query: Option<&str>,
        h: &http::HeaderMap,
        body: &[u8],
    ) -> Vec<(String, String)> {
        let view = RequestView {
            method: &method,
            path,
            query,
            headers: h,
            form_body: None,
        };
        let (op, _) = crate::classify::classify(&view);
        calls(&op, &view, Some(body))
            .into_iter()
            .map(|c| (c.action, c.resource))
            .collect()
    }

    #[test]
    fn a_transaction_is_one_action_per_item_on_its_own_table() {
        let h = headers(&[
            ("x-amz-target", "DynamoDB_20120810.TransactWriteItems"),
            ("authorization", AUTH),
        ]);
        let body = br#"{"TransactItems":[{"Put":{"TableName":"jobs"}},{"Update":{"TableName":"accounts"}},{"ConditionCheck":{"TableName":"budget"}},{"Delete":{"TableName":"jobs"}}]}"#;
        let arn = |t: &str| format!("arn:aws:dynamodb:eu-west-1:000000000000:table/{t}");
        assert_eq!(
            record(http::Method::POST, "/", None, &h, body),
            vec![
                ("dynamodb:PutItem".to_owned(), arn("jobs")),
                ("dynamodb:UpdateItem".to_owned(), arn("accounts")),
                ("dynamodb:ConditionCheckItem".to_owned(), arn("budget")),
                ("dynamodb:DeleteItem".to_owned(), arn("jobs")),
            ]
        );
    }

    #[test]
    fn a_query_on_an_index_is_on_the_index_arn() {
        let h = headers(&[
            ("x-amz-target", "DynamoDB_20120810.Query"),
            ("authorization", AUTH),
        ]);
        let body = br#"{"TableName":"ledger","IndexName":"by_time"}"#;
        assert_eq!(
            record(http::Method::POST, "/", None, &h, body),
            vec![(
                "dynamodb:Query".to_owned(),
                "arn:aws:dynamodb:eu-west-1:000000000000:table/ledger/index/by_time".to_owned()
            )]
        );
    }

    #[test]
    fn queues_secrets_and_functions_are_named_by_arn() {
        let h = headers(&[("x-amz-target", "AmazonSQS.SendMessageBatch")]);
        let body = br#"{"QueueUrl":"http://127.0.0.1:4566/000000000000/q-jobs"}"#;
        assert_eq!(
            record(http::Method::POST, "/", None, &h, body),
            vec![(
                "sqs:SendMessage".to_owned(),
                "arn:aws:sqs:us-east-1:000000000000:q-jobs".to_owned()
            )]
        );
        let h = headers(&[("x-amz-target", "secretsmanager.GetSecretValue")]);
        assert_eq!(
            record(http::Method::POST, "/", None, &h, br#"{"SecretId":"k"}"#),
            vec![(
                "secretsmanager:GetSecretValue".to_owned(),
                "arn:aws:secretsmanager:us-east-1:000000000000:secret:k".to_owned()
            )]
        );
        let h = headers(&[(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=s/20261201/us-east-1/lambda/aws4_request, SignedHeaders=host, Signature=00",
        )]);
        assert_eq!(
            record(
                http::Method::POST,
                "/2015-03-31/functions/sweeper/invocations",
                None,
                &h,
                b""
            ),
            vec![(
                "lambda:InvokeFunction".to_owned(),
                "arn:aws:lambda:us-east-1:000000000000:function:sweeper".to_owned()
            )]
        );
    }

    #[test]
    fn s3_objects_keys_copies_and_listings() {
        let none = http::HeaderMap::new();
        assert_eq!(
            record(
                http::Method::PUT,
                "/b/uploads/u%2Bv/a.png",
                None,
                &none,
                b""
            ),
            vec![(
                "s3:PutObject".to_owned(),
                "arn:aws:s3:::b/uploads/u+v/a.png".to_owned()
            )]
        );
        let copy = headers(&[("x-amz-copy-source", "b/uploads/u/a.png")]);
        assert_eq!(
            record(http::Method::PUT, "/b/results/j/inputs/a", None, &copy, b"").len(),
            2
        );
        let body = b"<Delete><Object><Key>results/a&amp;b</Key></Object><Object><Key>uploads/c</Key></Object></Delete>";
        assert_eq!(
            record(http::Method::POST, "/b", Some("delete"), &none, body),
            vec![
                (
                    "s3:DeleteObject".to_owned(),
                    "arn:aws:s3:::b/results/a&b".to_owned()
                ),
                (
                    "s3:DeleteObject".to_owned(),
                    "arn:aws:s3:::b/uploads/c".to_owned()
                ),
            ]
        );
        assert_eq!(
            record(
                http::Method::GET,
                "/b",
                Some("list-type=2&prefix=uploads%2Fu%2F"),
                &none,
                b""
            ),
            vec![("s3:ListBucket".to_owned(), "arn:aws:s3:::b".to_owned())]
        );
    }

    #[test]
    fn the_caller_is_the_access_key_or_the_label() {
        let h = headers(&[("authorization", AUTH)]);
        let view = RequestView {
            method: &http::Method::POST,
            path: "/",
            query: None,
            headers: &h,
            form_body: None,
        };
        assert_eq!(principal(&Attribution::AccessKey, &view), "api");
        assert_eq!(
            principal(&Attribution::Fixed("consumer".into()), &view),
            "consumer"
        );
    }
}
