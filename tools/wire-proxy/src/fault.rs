//! Seeded fault decisions and the error responses real AWS sends (and the emulator never does).
//!
//! A decision depends only on the seed, the operation and how many requests of that operation
//! the proxy has seen since the plan was set: the same seed replays the same faults for the
//! same request order, and concurrent traffic on other operations does not shift it.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::classify::{Operation, Protocol, Service};

/// A kind of injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// DynamoDB `TransactionCanceledException`, every reason `TransactionConflict`
    /// (TransactWriteItems only).
    TransactionConflict,
    /// DynamoDB/Secrets Manager `ThrottlingException`, SQS `RequestThrottled`, S3 503 `SlowDown`.
    Throttling,
    /// DynamoDB `ProvisionedThroughputExceededException` (DynamoDB only).
    ProvisionedThroughputExceeded,
    /// HTTP 500 in the service's own error shape.
    InternalError,
    /// The request is forwarded and answered by the emulator (the write happened), then the
    /// client's connection is closed without a response.
    DropAfterForward,
    /// The request is forwarded after a delay (`FaultPlan::latency`).
    Latency,
    /// A DynamoDB `Query` of a global secondary index answers as an index that has not caught
    /// up yet: no items (AWS propagates to a GSI asynchronously, with no bound on the lag; the
    /// emulator's indexes are always current). A `Query` of a table is forwarded unchanged.
    IndexLag,
}

impl FaultKind {
    /// Every kind, in the fixed order decisions walk them.
    /// (New kinds go last: a plan without them draws exactly as before.)
    pub const ALL: [FaultKind; 7] = [
        FaultKind::TransactionConflict,
        FaultKind::Throttling,
        FaultKind::ProvisionedThroughputExceeded,
        FaultKind::InternalError,
        FaultKind::DropAfterForward,
        FaultKind::Latency,
        FaultKind::IndexLag,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::TransactionConflict => "transaction_conflict",
            FaultKind::Throttling => "throttling",
            FaultKind::ProvisionedThroughputExceeded => "provisioned_throughput_exceeded",
            FaultKind::InternalError => "internal_error",
            FaultKind::DropAfterForward => "drop_after_forward",
            FaultKind::Latency => "latency",
            FaultKind::IndexLag => "index_lag",
        }
    }

    pub fn parse(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Whether this kind can happen to `op` in real AWS.
    pub fn applies_to(self, op: &Operation) -> bool {
        match self {
            FaultKind::TransactionConflict => {
                op.service == Service::DynamoDb && op.name == "TransactWriteItems"
            }
            FaultKind::ProvisionedThroughputExceeded => op.service == Service::DynamoDb,
            FaultKind::IndexLag => op.service == Service::DynamoDb && op.name == "Query",
            FaultKind::Throttling
            | FaultKind::InternalError
            | FaultKind::DropAfterForward
            | FaultKind::Latency => op.service != Service::Other,
        }
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which faults to inject, how often, and where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    pub seed: u64,
    /// Probability per eligible request, per kind. The error kinds (all but `Latency`) are
    /// exclusive: their rates are stacked, so they should add up to at most 1.
    #[serde(default)]
    pub rates: BTreeMap<FaultKind, f64>,
    /// Operations the faults apply to, as `TransactWriteItems` or `dynamodb:TransactWriteItems`;
    /// empty: every operation.
    #[serde(default)]
    pub operations: BTreeSet<String>,
    /// The delay a `Latency` fault adds.
    #[serde(default = "default_latency_ms")]
    pub latency_ms: u64,
}

fn default_latency_ms() -> u64 {
    50
}

impl FaultPlan {
    pub fn new(seed: u64) -> FaultPlan {
        FaultPlan {
            seed,
            rates: BTreeMap::new(),
            operations: BTreeSet::new(),
            latency_ms: default_latency_ms(),
        }
    }

    pub fn rate(mut self, kind: FaultKind, rate: f64) -> FaultPlan {
        self.rates.insert(kind, rate.clamp(0.0, 1.0));
        self
    }

    /// Limits the faults to these operations (`Name` or `service:Name`).
    pub fn only<I, S>(mut self, operations: I) -> FaultPlan
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.operations
            .extend(operations.into_iter().map(Into::into));
        self
    }

    pub fn latency(mut self, delay: Duration) -> FaultPlan {
        self.latency_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self
    }

    fn targets(&self, op: &Operation) -> bool {
        self.operations.is_empty()
            || self.operations.contains(&op.name)
            || self.operations.contains(&op.to_string())
    }

    /// The decision for the `n`-th request (from 0) of `op` under this plan.
    pub fn decide(&self, op: &Operation, n: u64) -> Decision {
        if op.service == Service::Other || !self.targets(op) {
            return Decision::default();
        }
        let rate = |k: FaultKind| {
            if k.applies_to(op) {
                self.rates.get(&k).copied().unwrap_or(0.0)
            } else {
                0.0
            }
        };
        let draw = unit(mix(self.seed, op, n, 0));
        let mut edge = 0.0;
        let mut error = None;
        for kind in FaultKind::ALL {
            if kind == FaultKind::Latency {
                continue;
            }
            edge += rate(kind);
            if draw < edge {
                error = Some(kind);
                break;
            }
        }
        let delay = (unit(mix(self.seed, op, n, 1)) < rate(FaultKind::Latency))
            .then(|| Duration::from_millis(self.latency_ms));
        Decision { error, delay }
    }
}

/// What happens to one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Decision {
    /// An error answered instead of (or, for `DropAfterForward`, after) forwarding.
    pub error: Option<FaultKind>,
    /// Added latency before forwarding.
    pub delay: Option<Duration>,
}

/// FNV-1a over the operation, then splitmix64 with the seed, the sequence number and a salt:
/// stable across processes and platforms (no `RandomState`).
fn mix(seed: u64, op: &Operation, n: u64, salt: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in op
        .service
        .as_str()
        .bytes()
        .chain([b':'])
        .chain(op.name.bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut x = seed ^ h ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt.rotate_left(32);
    for _ in 0..2 {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x = z ^ (z >> 31);
    }
    x
}

/// A uniform draw in [0, 1) from the top 53 bits.
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// An error response as the service sends it.
pub struct ErrorResponse {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
}

const DDB: &str = "com.amazonaws.dynamodb.v20120810";

/// How a service words one fault: its status, error code, message, and (JSON services) the
/// field the message goes in — Secrets Manager capitalises it on its server error.
struct Answer {
    status: u16,
    code: &'static str,
    message: &'static str,
    field: &'static str,
}

const INTERNAL: &str = "We encountered an internal error. Please try again.";

/// The answer real AWS gives, per service and fault; `None` is every other answer kind (the
/// server error). DynamoDB's transaction conflict has reasons of its own (`cancelled`).
const ANSWERS: [(Service, Option<FaultKind>, Answer); 9] = {
    use FaultKind::{ProvisionedThroughputExceeded, Throttling};
    use Service::{DynamoDb, S3, SecretsManager, Sqs};
    const fn a(status: u16, code: &'static str, message: &'static str) -> Answer {
        Answer {
            status,
            code,
            message,
            field: "message",
        }
    }
    [
        (
            DynamoDb,
            Some(Throttling),
            a(
                400,
                "ThrottlingException",
                "Rate of requests exceeds the allowed throughput.",
            ),
        ),
        (
            DynamoDb,
            Some(ProvisionedThroughputExceeded),
            a(
                400,
                "ProvisionedThroughputExceededException",
                "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
            ),
        ),
        (
            DynamoDb,
            None,
            a(500, "InternalServerError", "Internal server error"),
        ),
        (
            Sqs,
            Some(Throttling),
            a(400, "RequestThrottled", "Rate exceeded"),
        ),
        (Sqs, None, a(500, "InternalError", INTERNAL)),
        (
            SecretsManager,
            Some(Throttling),
            a(400, "ThrottlingException", "Rate exceeded"),
        ),
        (
            SecretsManager,
            None,
            Answer {
                field: "Message",
                ..a(
                    500,
                    "InternalServiceError",
                    "An error occurred on the server side.",
                )
            },
        ),
        (
            S3,
            Some(Throttling),
            a(503, "SlowDown", "Please reduce your request rate."),
        ),
        (S3, None, a(500, "InternalError", INTERNAL)),
    ]
};

/// The row of [`ANSWERS`] for `kind` on `service`.
fn answer(service: Service, kind: FaultKind) -> Option<&'static Answer> {
    let row = |k: Option<FaultKind>| {
        ANSWERS
            .iter()
            .find(|(s, rk, _)| *s == service && *rk == k)
            .map(|(_, _, a)| a)
    };
    row(Some(kind)).or_else(|| row(None))
}

/// The response real AWS gives for `kind` on `op`. `None` for the kinds that are not an
/// answer (`DropAfterForward`, `Latency`). `transact_items` is the number of items of a
/// TransactWriteItems (one cancellation reason each).
pub fn error_response(
    kind: FaultKind,
    op: &Operation,
    protocol: Protocol,
    head: bool,
    transact_items: usize,
    request_id: &str,
) -> Option<ErrorResponse> {
    if matches!(
        kind,
        FaultKind::DropAfterForward | FaultKind::Latency | FaultKind::IndexLag
    ) {
        return None;
    }
    let json = |status: u16, content_type: &str, body: serde_json::Value| ErrorResponse {
        status,
        headers: vec![
            ("content-type", content_type.to_owned()),
            ("x-amzn-requestid", request_id.to_owned()),
        ],
        body: Bytes::from(body.to_string()),
    };
    if (op.service, kind) == (Service::DynamoDb, FaultKind::TransactionConflict) {
        return Some(json(
            400,
            "application/x-amz-json-1.0",
            cancelled(transact_items),
        ));
    }
    let a = answer(op.service, kind)?;
    let typed = |type_: String| {
        let mut body = serde_json::Map::new();
        body.insert("__type".into(), type_.into());
        body.insert(a.field.into(), a.message.into());
        serde_json::Value::Object(body)
    };
    let response = match op.service {
        Service::DynamoDb => json(
            a.status,
            "application/x-amz-json-1.0",
            typed(format!("{DDB}#{}", a.code)),
        ),
        Service::Sqs if protocol == Protocol::Query => sqs_query(a, request_id),
        Service::Sqs => {
            // SQS's JSON protocol keeps the query protocol's codes in `x-amzn-query-error`.
            let mut r = json(
                a.status,
                "application/x-amz-json-1.0",
                typed(format!("com.amazonaws.sqs#{}", a.code)),
            );
            r.headers
                .push(("x-amzn-query-error", format!("{};{}", a.code, fault_of(a))));
            r
        }
        Service::SecretsManager => json(
            a.status,
            "application/x-amz-json-1.1",
            typed(a.code.to_owned()),
        ),
        Service::S3 => s3(a, head, request_id),
        Service::Other => return None,
    };
    Some(response)
}

/// Who is at fault in SQS's words: the sender for a 4xx, the receiver for a 5xx.
fn fault_of(a: &Answer) -> &'static str {
    if a.status < 500 { "Sender" } else { "Receiver" }
}

/// DynamoDB's `TransactionCanceledException`, one `TransactionConflict` reason per item.
fn cancelled(transact_items: usize) -> serde_json::Value {
    let n = transact_items.max(1);
    let reasons: Vec<serde_json::Value> = (0..n)
        .map(|_| {
            serde_json::json!({
                "Code": "TransactionConflict",
                "Message": "Transaction is ongoing for the item"
            })
        })
        .collect();
    let codes = vec!["TransactionConflict"; n].join(", ");
    serde_json::json!({
        "__type": format!("{DDB}#TransactionCanceledException"),
        "CancellationReasons": reasons,
        "Message": format!("Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]"),
    })
}

/// SQS's query protocol: an XML `ErrorResponse`.
fn sqs_query(a: &Answer, request_id: &str) -> ErrorResponse {
    let (kind_of, code, message) = (fault_of(a), a.code, a.message);
    ErrorResponse {
        status: a.status,
        headers: vec![
            ("content-type", "text/xml".to_owned()),
            ("x-amzn-requestid", request_id.to_owned()),
        ],
        body: Bytes::from(format!(
            r#"<?xml version="1.0"?><ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>{kind_of}</Type><Code>{code}</Code><Message>{message}</Message><Detail/></Error><RequestId>{request_id}</RequestId></ErrorResponse>"#
        )),
    }
}

/// S3's REST-XML `Error`.
fn s3(a: &Answer, head: bool, request_id: &str) -> ErrorResponse {
    let (code, message) = (a.code, a.message);
    // A HEAD response has no body: the SDK reads the status alone.
    let body = if head {
        Bytes::new()
    } else {
        Bytes::from(format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>{code}</Code><Message>{message}</Message><RequestId>{request_id}</RequestId><HostId>atelier-wire-proxy</HostId></Error>"#
        ))
    };
    ErrorResponse {
        status: a.status,
        headers: vec![
            ("content-type", "application/xml".to_owned()),
            ("x-amz-request-id", request_id.to_owned()),
        ],
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx() -> Operation {
        Operation::new(Service::DynamoDb, "TransactWriteItems")
    }

    #[test]
    fn the_same_seed_gives_the_same_decisions_and_another_seed_others() {
        let plan = |seed| {
            FaultPlan::new(seed)
                .rate(FaultKind::TransactionConflict, 0.2)
                .rate(FaultKind::Throttling, 0.1)
                .rate(FaultKind::Latency, 0.3)
        };
        let run = |p: &FaultPlan| (0..500).map(|n| p.decide(&tx(), n)).collect::<Vec<_>>();
        assert_eq!(run(&plan(7)), run(&plan(7)));
        assert_ne!(run(&plan(7)), run(&plan(8)));
    }

    #[test]
    fn rates_are_respected_roughly_and_kinds_stay_where_they_apply() {
        let plan = FaultPlan::new(42)
            .rate(FaultKind::TransactionConflict, 0.25)
            .rate(FaultKind::InternalError, 0.25);
        let get = Operation::new(Service::DynamoDb, "GetItem");
        let n = 20_000;
        let conflicts = (0..n)
            .filter(|&i| plan.decide(&tx(), i).error == Some(FaultKind::TransactionConflict))
            .count();
        assert!((4_500..5_500).contains(&conflicts), "{conflicts}");
        assert!(
            (0..n).all(|i| plan.decide(&get, i).error != Some(FaultKind::TransactionConflict)),
            "a conflict only on TransactWriteItems"
        );
        let errors = (0..n)
            .filter(|&i| plan.decide(&get, i).error.is_some())
            .count();
        assert!((4_500..5_500).contains(&errors), "{errors}");
    }

    #[test]
    fn an_operation_filter_limits_the_faults() {
        let plan = FaultPlan::new(1)
            .rate(FaultKind::InternalError, 1.0)
            .only(["sqs:SendMessage"]);
        let send = Operation::new(Service::Sqs, "SendMessage");
        let put = Operation::new(Service::S3, "PutObject");
        assert_eq!(plan.decide(&send, 0).error, Some(FaultKind::InternalError));
        assert_eq!(plan.decide(&put, 0).error, None);
    }

    #[test]
    fn a_conflict_names_one_reason_per_item() {
        let r = error_response(
            FaultKind::TransactionConflict,
            &tx(),
            Protocol::Json,
            false,
            3,
            "r1",
        )
        .unwrap_or_else(|| panic!("a response"));
        let v: serde_json::Value =
            serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status, 400);
        assert_eq!(v["CancellationReasons"].as_array().map(Vec::len), Some(3));
        assert_eq!(
            v["__type"],
            "com.amazonaws.dynamodb.v20120810#TransactionCanceledException"
        );
    }
}
