//! The shared crate's folders are its layers, and imports only go down: `domain` imports only
//! `domain`; `adapters` never reach `store` or `services`; `store` never reaches `services`;
//! the root modules (`config`, `error`, `clock`) never reach `store` or `services`. A file that
//! imports upward fails this test with its path and the offending path.

#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};

/// The layers a file in `layer` may import from (besides itself).
fn allowed(layer: &str) -> &'static [&'static str] {
    match layer {
        "domain" => &["domain"],
        "adapters" => &["domain", "adapters", "config", "error", "clock"],
        "store" => &["domain", "adapters", "store", "config", "error", "clock"],
        "config" | "error" => &["domain", "adapters", "config", "error", "clock"],
        "clock" => &["clock"],
        "lib" | "services" => &[
            "domain", "adapters", "store", "services", "config", "error", "clock",
        ],
        other => panic!("{other} is not a layer: the root holds only lib, config, error, clock"),
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("shared/src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its comments and its `#[cfg(test)]` module (tests may reach
/// anything).
fn code(text: &str) -> String {
    let body = text.split("#[cfg(test)]").next().unwrap_or_default();
    body.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every top-level module named after `crate::` in `code`, including inside `crate::{a, b}`.
fn crate_imports(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or_default();
            found.extend(inner.split(',').filter_map(|p| head(p.trim())));
        } else {
            found.extend(head(rest));
        }
    }
    found
}

fn head(path: &str) -> Option<String> {
    let name: String = path
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty() && name.chars().all(|c| !c.is_ascii_uppercase())).then_some(name)
}

fn layer_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("inside shared/src");
    let first = rel.components().next().expect("a path").as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_owned()
}

#[test]
fn every_import_in_the_shared_crate_goes_down_its_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward = Vec::new();
    for file in &files {
        let layer = layer_of(&src, file);
        let text = std::fs::read_to_string(file).expect("a readable source file");
        for import in crate_imports(&code(&text)) {
            if !allowed(&layer).contains(&import.as_str()) {
                upward.push(format!("{}: crate::{import}", file.display()));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports against the layers:\n{}",
        upward.join("\n")
    );
}

/// Every `crate::a::b::…` and `super::…` path in `code` as absolute segments (a `{…}` group
/// expanded one level); `module` is the file's own module path.
fn crate_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let segments = |p: &str| -> Vec<String> {
        p.split("::")
            .map(|s| {
                let s = s.trim();
                s.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|s| !s.is_empty())
            .collect()
    };
    let mut found = Vec::new();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent(module))] {
        for (at, _) in code.match_indices(prefix) {
            if prefix == "super::" && code[..at].ends_with("super::") {
                continue;
            }
            let mut rest = &code[at + prefix.len()..];
            let mut base = base.clone();
            while let Some(r) = rest.strip_prefix("super::") {
                base = parent(&base);
                rest = r;
            }
            let with_base = |tail: Vec<String>| base.iter().cloned().chain(tail).collect();
            match rest.split_once("::{") {
                Some((stem, group)) if !stem.contains(|c: char| c.is_whitespace() || c == ';') => {
                    let inner = group.split('}').next().unwrap_or_default();
                    for part in inner.split(',') {
                        found.push(with_base(segments(&format!("{stem}::{}", part.trim()))));
                    }
                }
                _ => found.push(with_base(segments(rest))),
            }
        }
    }
    found
}

fn parent(module: &[String]) -> Vec<String> {
    module[..module.len().saturating_sub(1)].to_vec()
}

/// A file's module path: `store/jobs.rs` → `store::jobs`, `store/mod.rs` → `store`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut segments: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if segments.last().is_some_and(|s| s == "mod" || s == "lib") {
        segments.pop();
    }
    segments
}

/// The file a module path lives in: the deepest `a/b.rs` or `a/b/mod.rs` that exists.
fn file_of(src: &Path, segments: &[String]) -> Option<PathBuf> {
    (1..=segments.len()).rev().find_map(|n| {
        let stem: PathBuf = segments[..n].iter().collect();
        [
            src.join(&stem).with_extension("rs"),
            src.join(&stem).join("mod.rs"),
        ]
        .into_iter()
        .find(|f| f.is_file())
    })
}

#[test]
fn no_two_files_of_the_shared_crate_import_each_other_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let edges: std::collections::BTreeMap<PathBuf, std::collections::BTreeSet<PathBuf>> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).expect("a readable source file");
            let targets = crate_paths(&code(&text), &module_of(&src, file))
                .iter()
                .filter_map(|p| file_of(&src, p))
                .filter(|t| t != file)
                .collect();
            (file.clone(), targets)
        })
        .collect();
    // Depth-first search for a back edge, reporting the circle it closes.
    fn visit(
        node: &PathBuf,
        edges: &std::collections::BTreeMap<PathBuf, std::collections::BTreeSet<PathBuf>>,
        path: &mut Vec<PathBuf>,
        done: &mut std::collections::BTreeSet<PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            return Some(path[at..].to_vec());
        }
        if !done.insert(node.clone()) {
            return None;
        }
        path.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, edges, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    let mut done = std::collections::BTreeSet::new();
    for file in edges.keys() {
        let circle = visit(file, &edges, &mut Vec::new(), &mut done);
        let names: Vec<String> = circle
            .iter()
            .flatten()
            .map(|p| p.strip_prefix(&src).unwrap_or(p).display().to_string())
            .collect();
        assert!(circle.is_none(), "an import circle: {}", names.join(" → "));
    }
}

#[test]
fn the_check_sees_grouped_and_plain_imports() {
    let text = "use crate::{store::Store, domain};\nlet x = crate::services::App::new();\n// crate::adapters in a comment\n";
    assert_eq!(crate_imports(&code(text)), ["store", "domain", "services"]);
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
    let services = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/services");
    let mut files = Vec::new();
    rust_files(&services, &mut files);
    let offenders: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).expect("a readable source file");
            let found = sdk_mentions(&text);
            (!found.is_empty()).then(|| format!("{}: {}", file.display(), found.join(", ")))
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
