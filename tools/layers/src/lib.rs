//! A crate's import graph between its files, and its circles.
//!
//! An edge runs from file A to file B when A's non-test code names an item of B's module: in a
//! `use` (a `pub use` re-export too), in a type or an expression, inside a macro call, through
//! `crate::`, `self::` or `super::` chains, or by a child module's name. A path belongs to the
//! file of the longest module prefix that has a file (`crate::config::env::X`, an inline
//! module of `config.rs`, is `config.rs`). A circle is a set of files that reach each other.

mod names;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One crate's files and what each names.
#[derive(Debug, Default)]
pub struct Graph {
    /// Every file, relative to `src`, `/`-separated, with the absolute module paths it names.
    pub named: BTreeMap<String, Vec<Vec<String>>>,
    /// File → the other files it names.
    pub edges: BTreeMap<String, BTreeSet<String>>,
}

/// Why a crate could not be read.
#[derive(Debug)]
pub enum ReadError {
    Io(PathBuf, std::io::Error),
    Parse(PathBuf, syn::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            ReadError::Parse(p, e) => write!(f, "{}: not Rust: {e}", p.display()),
        }
    }
}

impl std::error::Error for ReadError {}

/// The graph of the crate whose sources are under `src` (every `.rs` file below it).
pub fn graph(src: &Path) -> Result<Graph, ReadError> {
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    let mut graph = Graph::default();
    for file in &files {
        let rel = relative(src, file);
        let text = std::fs::read_to_string(file).map_err(|e| ReadError::Io(file.clone(), e))?;
        let parsed = syn::parse_file(&text).map_err(|e| ReadError::Parse(file.clone(), e))?;
        let is_child = |module: &[String], name: &str| {
            let mut path = module.to_vec();
            path.push(name.to_owned());
            exact_file(src, &path).is_some()
        };
        let named = names::named_paths(&parsed, &module_of(&rel), &is_child);
        let targets = named
            .iter()
            .filter_map(|p| file_of(src, p))
            .filter(|t| *t != rel)
            .collect();
        graph.edges.insert(rel.clone(), targets);
        graph.named.insert(rel, named);
    }
    Ok(graph)
}

/// Each circle as a path of files that returns to its start (`a → b → a`), one per set of
/// files that reach each other.
pub fn circles(graph: &Graph) -> Vec<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut found = Vec::new();
    for start in graph.edges.keys() {
        if seen.contains(start) {
            continue;
        }
        if let Some(circle) = shortest_cycle(graph, start) {
            let members = reach_both_ways(graph, start);
            seen.extend(members);
            found.push(circle);
        }
    }
    found
}

/// The shortest path from `start` back to itself, if any (breadth first).
fn shortest_cycle(graph: &Graph, start: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for next in graph.edges.get(at).into_iter().flatten() {
            if next == start {
                let mut path = vec![start.to_owned()];
                let mut step = at;
                while step != start {
                    path.push(step.to_owned());
                    step = came_from[step];
                }
                path.push(start.to_owned());
                path.reverse();
                return Some(path);
            }
            if !came_from.contains_key(next.as_str()) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

/// The files `start` reaches and that reach it back.
fn reach_both_ways(graph: &Graph, start: &str) -> BTreeSet<String> {
    let forward = reachable(graph, start, false);
    let backward = reachable(graph, start, true);
    forward.intersection(&backward).cloned().collect()
}

fn reachable(graph: &Graph, start: &str, reverse: bool) -> BTreeSet<String> {
    let mut seen = BTreeSet::from([start.to_owned()]);
    let mut stack = vec![start.to_owned()];
    while let Some(at) = stack.pop() {
        let next: Vec<&String> = if reverse {
            let incoming = graph.edges.iter().filter(|(_, to)| to.contains(&at));
            incoming.map(|(from, _)| from).collect()
        } else {
            graph.edges.get(&at).into_iter().flatten().collect()
        };
        for n in next {
            if seen.insert(n.clone()) {
                stack.push(n.clone());
            }
        }
    }
    seen
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ReadError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ReadError::Io(dir.to_owned(), e))?;
    for entry in entries {
        let path = entry.map_err(|e| ReadError::Io(dir.to_owned(), e))?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    Ok(())
}

fn relative(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// A file's module path: `store/jobs.rs` → `store::jobs`; `store/mod.rs`, `lib.rs` and
/// `main.rs` are their folder's module.
pub fn module_of(rel: &str) -> Vec<String> {
    let mut segments: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    let root = segments.len() == 1 && matches!(segments[0].as_str(), "lib" | "main");
    if root || segments.last().is_some_and(|s| s == "mod") {
        segments.pop();
    }
    segments
}

/// The file of exactly this module (`a/b.rs` or `a/b/mod.rs`), relative to `src`.
fn exact_file(src: &Path, segments: &[String]) -> Option<String> {
    if segments.is_empty() {
        return ["lib.rs", "main.rs"]
            .into_iter()
            .find(|f| src.join(f).is_file())
            .map(str::to_owned);
    }
    let stem = segments.join("/");
    [format!("{stem}.rs"), format!("{stem}/mod.rs")]
        .into_iter()
        .find(|f| src.join(f).is_file())
}

/// The file a path's item lives in: its longest module prefix that has a file.
fn file_of(src: &Path, segments: &[String]) -> Option<String> {
    (0..=segments.len())
        .rev()
        .find_map(|n| exact_file(src, &segments[..n]))
}

#[cfg(test)]
mod tests;
