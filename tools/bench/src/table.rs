//! The table's row and the cell formats every measurement writes its figures in (calls per
//! service, milliseconds, percentiles).

use std::time::Duration;

use atelier_wire_proxy::{Counts, Service};

/// One table row.
pub struct Row {
    pub what: String,
    pub figure: String,
    pub how: String,
}

pub fn row(what: impl Into<String>, figure: impl Into<String>, how: impl Into<String>) -> Row {
    Row {
        what: what.into(),
        figure: figure.into(),
        how: how.into(),
    }
}

/// Average counts over `n` samples, written `DynamoDB 1 (TransactWriteItems 1) · SQS 1 (…)`.
pub fn describe(total: &Counts, n: usize) -> String {
    let n = n.max(1) as f64;
    let fmt = |x: f64| {
        if (x - x.round()).abs() < 0.005 {
            format!("{}", x.round() as i64)
        } else {
            format!("{x:.2}")
        }
    };
    let mut parts = Vec::new();
    for (service, label) in [
        (Service::DynamoDb, "DynamoDB"),
        (Service::Sqs, "SQS"),
        (Service::S3, "S3"),
        (Service::SecretsManager, "Secrets Manager"),
    ] {
        let all = total.service(service) as f64 / n;
        if all == 0.0 {
            if service != Service::SecretsManager {
                parts.push(format!("{label} 0"));
            }
            continue;
        }
        let ops: Vec<String> = total
            .iter()
            .filter(|(op, _)| op.service == service)
            .map(|(op, c)| format!("{} {}", op.name, fmt(c as f64 / n)))
            .collect();
        parts.push(format!("{label} {} ({})", fmt(all), ops.join(", ")));
    }
    parts.join(" · ")
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}
