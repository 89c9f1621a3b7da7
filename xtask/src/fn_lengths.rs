//! `cargo xtask fn-lengths`: every function fits on a screen, every file reads in one sitting
//! (docs/testing.md "Function lengths").
//!
//! Parses every `.rs` file of the workspace with `syn`, measures each function from its `fn`
//! line to its closing brace and each file's lines of non-test code, prints the longest of
//! both, and fails when a function is over [`LIMIT`](ratchet::LIMIT) lines or a file over
//! [`FILE_LIMIT`](ratchet::FILE_LIMIT) lines
//! of non-test code, unless `xtask/long-functions.txt` lists it with its current length
//! (`path name lines` for a function, `path <file> lines` for a file). The list is a ratchet:
//! an entry may not grow, and one that shrank, was split or is gone must be lowered or removed
//! (`--ratchet` rewrites the list that way; it never adds or raises an entry).
//!
//! Test code is not measured: items marked `#[cfg(test)]`, `#[test]`, `#[tokio::test]` and the
//! like (at any depth: modules, functions, `impl` and trait members), a file that is such a
//! module as a whole (`#[cfg(test)] mod tests;` in its parent, with the files below it, or a file
//! that starts `#![cfg(test)]`), and every crate's `tests/` folder (the harness in the `tests`
//! crate's `src/` is measured). A file's lines of non-test code are all its lines (blank lines
//! and comments included) minus the lines its test items span, from their first attribute or
//! doc comment to their last token.

mod command;
mod measure;
mod modules;
mod ratchet;

pub use command::fn_lengths;
