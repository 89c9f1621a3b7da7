//! The shared crate's folders are its layers, and imports only go down: `domain` imports only
//! `domain`; `config` only `domain` and `clock` (plain values read from the environment, below
//! the adapters that use them); `error` only `domain` and `config`; `adapters` never reach
//! `store` or `services`; `store` never reaches `services`. No files import each other in a
//! circle of any length. What counts as an import is `atelier-layers`' reading: `use` and
//! `pub use`, full paths inside code and macros, `super::` chains. `docs/design.md` holds the
//! map of the folders, checked here against the same table.

#![allow(clippy::expect_used)]

use std::path::Path;

/// Each layer: what lives there and the layers it may import from (besides itself).
const LAYERS: &[(&str, &str, &[&str])] = &[
    (
        "domain",
        "values and pure rules: ids, money, prices, the model catalogue, images, prompts",
        &[],
    ),
    ("clock", "the time, one reader", &[]),
    (
        "config",
        "settings read from the environment into plain typed values",
        &["domain", "clock"],
    ),
    (
        "error",
        "the crate's error kinds, each keeping its source",
        &["domain", "config"],
    ),
    (
        "adapters",
        "one per outside service: the model, payments, S3, SQS, metrics, push, webhooks",
        &["domain", "clock", "config", "error"],
    ),
    (
        "store",
        "DynamoDB: tables, items and the conditional writes that are the transitions",
        &["domain", "clock", "config", "error", "adapters"],
    ),
    (
        "services",
        "the use cases: submit, process, pay, refund, sweep",
        &["domain", "clock", "config", "error", "adapters", "store"],
    ),
    (
        "lib",
        "the crate root: declares the layers",
        &[
            "domain", "clock", "config", "error", "adapters", "store", "services",
        ],
    ),
];

fn allowed(layer: &str) -> &'static [&'static str] {
    LAYERS
        .iter()
        .find(|(name, _, _)| *name == layer)
        .map(|(_, _, may)| *may)
        .unwrap_or_else(|| panic!("{layer} is not a layer: add it to LAYERS"))
}

fn graph() -> atelier_layers::Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    atelier_layers::graph(&src).unwrap_or_else(|e| panic!("the shared crate cannot be read: {e}"))
}

/// The layer of a file (`store/jobs.rs` → `store`, `lib.rs` → `lib`) or of a named path's
/// first segment.
fn layer_of(first: &str) -> &str {
    first.trim_end_matches(".rs")
}

#[test]
fn every_import_in_the_shared_crate_goes_down_its_layers() {
    let mut upward = Vec::new();
    for (file, named) in &graph().named {
        let layer = layer_of(file.split('/').next().unwrap_or_default());
        for path in named {
            let Some(first) = path.first() else { continue };
            let target = layer_of(first);
            let is_layer = LAYERS.iter().any(|(name, _, _)| *name == target);
            if is_layer && target != layer && !allowed(layer).contains(&target) {
                upward.push(format!("{file}: crate::{}", path.join("::")));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports against the layers:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_files_of_the_shared_crate_import_each_other_in_a_circle() {
    let circles = atelier_layers::circles(&graph());
    let shown: Vec<String> = circles.iter().map(|c| c.join(" → ")).collect();
    assert!(circles.is_empty(), "import circles:\n{}", shown.join("\n"));
}

/// The map in `docs/design.md`, as this table gives it.
fn map() -> String {
    let mut out = String::from("| folder | what lives there | may import |\n|---|---|---|\n");
    for (name, what, may) in LAYERS {
        let may = if may.is_empty() {
            "nothing else".to_owned()
        } else {
            may.join(", ")
        };
        out.push_str(&format!("| `{name}` | {what} | {may} |\n"));
    }
    out
}

#[test]
fn the_design_documents_map_is_this_table() {
    let design = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/design.md");
    let text = std::fs::read_to_string(&design).expect("docs/design.md is readable");
    assert!(
        text.contains(&map()),
        "docs/design.md's map of shared/src differs from shared/tests/layers.rs LAYERS; it should read:\n{}",
        map()
    );
}

#[test]
fn every_folder_of_the_shared_crate_is_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in std::fs::read_dir(&src).expect("shared/src is readable") {
        let name = entry.expect("a directory entry").file_name();
        let name = name.to_string_lossy();
        allowed(layer_of(&name));
    }
}

/// What a use case names of the DynamoDB SDK: its transaction items and types stay inside
/// `store`, whose methods are named for what they do (`Joined` carries writes between them).
fn sdk_mentions(text: &str) -> Vec<&'static str> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    ["aws_sdk_dynamodb", "TransactWriteItem"]
        .into_iter()
        .filter(|name| code.contains(name))
        .collect()
}

#[test]
fn no_use_case_names_the_dynamodb_sdk() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let offenders: Vec<String> = graph()
        .named
        .keys()
        .filter(|file| file.starts_with("services/"))
        .filter_map(|file| {
            let text = std::fs::read_to_string(src.join(file)).expect("a readable source file");
            let found = sdk_mentions(&text);
            (!found.is_empty()).then(|| format!("{file}: {}", found.join(", ")))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "services that name the DynamoDB SDK (move the write into a store method):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_sdk_check_sees_a_path_and_a_type_but_not_a_comment() {
    let text = "use aws_sdk_dynamodb::types::Put;\nfn f() -> Vec<TransactWriteItem> {}\n// aws_sdk_dynamodb in a comment\n";
    assert_eq!(
        sdk_mentions(text),
        ["aws_sdk_dynamodb", "TransactWriteItem"]
    );
    assert!(sdk_mentions("// TransactWriteItem only here\n").is_empty());
}
