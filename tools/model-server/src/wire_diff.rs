//! Field-by-field differences between two JSON requests, for the tests that compare what our
//! clients send with what a provider's official library sends for the same call
//! (`tests/official_client.rs`, `tests/official_gemini.rs`, and the push proofs in
//! `tests/tests/push_official.rs`).

use std::collections::BTreeSet;

use serde_json::{Value, json};

/// The JSON types of a body: every key kept, every value replaced by its type.
pub fn shape(value: &Value) -> Value {
    match value {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("boolean"),
        Value::Number(n) if n.is_f64() => json!("number"),
        Value::Number(_) => json!("integer"),
        Value::String(_) => json!("string"),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
    }
}

/// Where `ours` and `theirs` differ, one line each: the JSON pointer, and both sides
/// (shortened). Empty when they are equal.
pub fn differences(ours: &Value, theirs: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(ours, theirs, "", &mut out);
    out
}

fn walk(ours: &Value, theirs: &Value, path: &str, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let here = format!("{path}/{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => walk(x, y, &here, out),
                    (Some(_), None) => out.push(format!("{here}: only in ours")),
                    (None, Some(_)) => out.push(format!("{here}: only in the official client's")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                walk(x, y, &format!("{path}/{i}"), out);
            }
        }
        (a, b) if a != b => {
            let short = |v: &Value| v.to_string().chars().take(120).collect::<String>();
            out.push(format!(
                "{path}: ours {} vs official {}",
                short(a),
                short(b)
            ));
        }
        _ => {}
    }
}

/// Panics, listing every difference, unless `ours` and `theirs` are equal field for field.
#[track_caller]
pub fn assert_same(ours: &Value, theirs: &Value, what: &str) {
    let found = differences(ours, theirs);
    assert!(
        found.is_empty(),
        "{what} differs from the official client's:\n{}",
        found.join("\n")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_difference_is_named_by_its_path() {
        let ours = json!({"a": {"b": 1, "c": [1, 2]}, "only": true});
        let theirs = json!({"a": {"b": 2, "c": [1, 3]}, "new": null});
        assert_eq!(
            differences(&ours, &theirs),
            [
                "/a/b: ours 1 vs official 2",
                "/a/c/1: ours 2 vs official 3",
                "/new: only in the official client's",
                "/only: only in ours",
            ]
        );
        assert!(differences(&ours, &ours).is_empty());
    }
}
