//! The printed catalogues the infrastructure checks against: sorted JSON and the environment
//! variables.

use std::process::ExitCode;

use atelier_shared::config::env;

use crate::common::print_json;

/// `value` with every object's keys in sorted order, whether or not a crate of the build turned
/// on serde_json's `preserve_order` (which keeps insertion order): the infrastructure's drift
/// guard compares the text.
pub fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.into_iter().map(|(k, v)| (k, sorted(v))).collect()
        }
        serde_json::Value::Array(items) => items.into_iter().map(sorted).collect(),
        other => other,
    }
}

/// `env-names`: every environment variable the code reads.
pub fn env_names() -> anyhow::Result<ExitCode> {
    // A struct, not a JSON map: its field order does not depend on serde_json's
    // `preserve_order` (the infrastructure's drift guard compares the text).
    #[derive(serde::Serialize)]
    struct EnvName {
        description: &'static str,
        name: &'static str,
        required: bool,
    }
    let names: Vec<EnvName> = env::ALL
        .iter()
        .map(|v| EnvName {
            description: v.description,
            name: v.name,
            required: v.required,
        })
        .collect();
    print_json(&names)
}
