//! Where the built binaries and zips are, and whether they are older than their sources.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub const FUNCTIONS: [&str; 3] = ["atelier-api", "atelier-consumer", "atelier-sweeper"];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
}

/// Cargo's target directory (`CARGO_TARGET_DIR` when set): where built binaries are. The
/// zips stay under the project's `target/lambda-dist` whatever it is (xtask/src/package.rs).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

fn newest_source(dir: &Path) -> Option<SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(m) = e.metadata().and_then(|m| m.modified()) {
                newest = Some(newest.map_or(m, |n: SystemTime| n.max(m)));
            }
        }
    }
    newest
}

/// Whether a built artefact is older than the sources it came from.
pub fn stale(artefact: &Path, function: &str) -> bool {
    let Ok(built) = std::fs::metadata(artefact).and_then(|m| m.modified()) else {
        return false;
    };
    let dir = function.trim_start_matches("atelier-");
    [
        root().join("functions").join(dir).join("src"),
        root().join("shared").join("src"),
    ]
    .iter()
    .filter_map(|d| newest_source(d))
    .any(|src| src > built)
}
