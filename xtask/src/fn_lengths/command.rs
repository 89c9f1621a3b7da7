//! `cargo xtask fn-lengths [--ratchet]`: measure the workspace, print the longest functions and
//! files, and check them against the list.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use super::measure::{Function, SourceFile, measure, parse};
use super::modules::test_files;
use super::ratchet::{
    EXCEPTIONS, FILE_ENTRY, FILE_LIMIT, LIMIT, check, check_files, parse_exceptions, ratcheted,
};

/// How many of the longest functions and files the report prints.
const SHOWN: usize = 10;

pub fn fn_lengths(args: &[String]) -> Result<ExitCode> {
    let ratchet = match args.first().map(String::as_str) {
        None => false,
        Some("--ratchet") => true,
        Some(other) => bail!("fn-lengths: unknown argument {other} (only --ratchet)"),
    };
    let root = crate::workspace::root();
    let (functions, files) = measure_workspace(&root)?;
    let list = root.join(EXCEPTIONS);
    let exceptions = parse_exceptions(
        &std::fs::read_to_string(&list).with_context(|| format!("reading {}", list.display()))?,
    )?;
    print_longest(&functions, &files);
    if ratchet {
        std::fs::write(&list, ratcheted(&functions, &files, &exceptions))?;
        println!("fn-lengths: {EXCEPTIONS} lowered to today's lengths");
        return Ok(ExitCode::SUCCESS);
    }
    let listed_files = exceptions.keys().filter(|(_, n)| n == FILE_ENTRY).count();
    let function_problems = check(&functions, &exceptions);
    if function_problems.is_empty() {
        println!(
            "fn-lengths: none over {LIMIT} lines outside the {} listed in {EXCEPTIONS}",
            exceptions.len() - listed_files
        );
    }
    let file_problems = check_files(&files, &exceptions);
    if file_problems.is_empty() {
        println!(
            "fn-lengths: no file over {FILE_LIMIT} lines of non-test code outside the {listed_files} listed in {EXCEPTIONS}"
        );
    }
    if function_problems.is_empty() && file_problems.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for problem in function_problems.iter().chain(&file_problems) {
        eprintln!("fn-lengths: {problem}");
    }
    Ok(ExitCode::FAILURE)
}

/// Every function and every file of the workspace outside test code, longest first.
fn measure_workspace(root: &Path) -> Result<(Vec<Function>, Vec<SourceFile>)> {
    let parsed = rust_files(root)?
        .into_iter()
        .map(|file| parse(root, file))
        .collect::<Result<Vec<_>>>()?;
    let tests = test_files(&parsed);
    let (mut functions, mut files) = (Vec::new(), Vec::new());
    for p in parsed.iter().filter(|p| !tests.contains(&p.file)) {
        let (found, file) = measure(p);
        functions.extend(found);
        files.push(file);
    }
    functions.sort_by(|a, b| b.lines.cmp(&a.lines).then(a.path.cmp(&b.path)));
    files.sort_by(|a, b| b.lines.cmp(&a.lines).then(a.path.cmp(&b.path)));
    Ok((functions, files))
}

fn print_longest(functions: &[Function], files: &[SourceFile]) {
    println!(
        "fn-lengths: {} functions; the {SHOWN} longest:",
        functions.len()
    );
    for f in functions.iter().take(SHOWN) {
        println!("  {:>4}  {}:{} {}", f.lines, f.path, f.line, f.name);
    }
    println!(
        "fn-lengths: {} files; the {SHOWN} longest, in lines of non-test code:",
        files.len()
    );
    for f in files.iter().take(SHOWN) {
        println!("  {:>4}  {}", f.lines, f.path);
    }
}

/// Every `.rs` file under `root` that is not build output, a dependency, or test code.
fn rust_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))?
        {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                // A crate's `tests/` folder is test code; the `tests` member crate's own
                // `src/` (the harness the tests share) is measured.
                let tests = name == "tests" && !path.join("Cargo.toml").exists();
                let skipped = tests
                    || name.starts_with('.')
                    || matches!(name, "target" | "node_modules" | "benches");
                if !skipped {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}
