//! The recording side of the IAM check (`infra/iam`): SDK clients that sign as one function, so
//! a recording wire proxy names the function of each call by its access key id, and the files
//! the check reads.

use std::collections::BTreeMap;
use std::path::PathBuf;

use atelier_shared::adapters::aws::Clients;
use atelier_shared::config::Resources;
use atelier_shared::store::schema::{TABLES, table_name};
use atelier_wire_proxy::Call;
use aws_sdk_dynamodb::config::Credentials;
use serde_json::json;

/// The project's clients, signing with `function` (`api`, `consumer`, `sweeper`) as the access
/// key id, through `endpoint`.
pub async fn clients_as(function: &str, endpoint: &str) -> Clients {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new(
            function,
            "test",
            None,
            None,
            "atelier-tests",
        ))
        .load()
        .await;
    Clients::new(&sdk)
}

/// The folder the check reads recordings from: `ATELIER_IAM_CALLS`, set by `cargo xtask test`.
pub fn recordings_dir() -> Option<PathBuf> {
    std::env::var_os("ATELIER_IAM_CALLS").map(PathBuf::from)
}

/// Writes `calls` to `<dir>/<source>.jsonl` and what each resource of `resources` is to
/// `<dir>/<source>.names.json` (physical name → the name the check gives it, by service). Does
/// nothing outside `cargo xtask test`.
pub fn write_recording(source: &str, resources: &Resources, calls: &BTreeMap<Call, u64>) {
    let Some(dir) = recordings_dir() else {
        return;
    };
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let tables: serde_json::Map<String, serde_json::Value> = TABLES
        .iter()
        .map(|def| (table_name(def, resources).to_owned(), json!(def.logical)))
        .collect();
    let names = json!({
        "dynamodb": tables,
        "sqs": {
            resources.queue_name(): "jobs",
            // The webhook delivery queue (the chaos run's deliverers send to it).
            resources.webhook_queue_url.rsplit('/').next().unwrap_or_default(): "webhooks",
        },
        "s3": { &resources.bucket: "assets" },
    });
    let path = dir.join(format!("{source}.names.json"));
    std::fs::write(&path, names.to_string()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let path = dir.join(format!("{source}.jsonl"));
    atelier_wire_proxy::write_calls(&path, calls.keys())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
