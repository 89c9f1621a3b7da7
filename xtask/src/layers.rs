//! `cargo xtask layers`: no two files of any crate of the workspace import each other in a
//! circle, of any length (`tools/layers` reads the graph; the shared crate's own layer rules
//! are `shared/tests/layers.rs`). A crate that cannot be read fails the run, never skips.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::workspace::root;

/// Every crate's `src/`, relative to the workspace root (the members of `Cargo.toml`).
fn crate_sources() -> Result<Vec<String>> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).context("Cargo.toml")?;
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .context("Cargo.toml has no members list")?;
    Ok(members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .map(|m| format!("{m}/src"))
        .collect())
}

pub fn layers() -> Result<ExitCode> {
    let mut found = Vec::new();
    let sources = crate_sources()?;
    for src in &sources {
        let graph = atelier_layers::graph(&root().join(src))
            .map_err(|e| anyhow::anyhow!("layers: {src}: {e}"))?;
        for circle in atelier_layers::circles(&graph) {
            found.push(format!("{src}: {}", circle.join(" → ")));
        }
    }
    if found.is_empty() {
        println!("layers: {} crates, no import circle", sources.len());
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("layers: import circles:\n{}", found.join("\n"));
    Ok(ExitCode::FAILURE)
}
