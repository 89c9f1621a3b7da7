//! The Terraform module reads no file outside its own folder (a module used from a registry
//! has only that folder).

use std::path::Path;

use anyhow::{Result, bail};

use super::outcome::Outcome;

pub(super) fn module_reads_only_its_folder(infra: &Path) -> Result<Outcome> {
    let found = paths_outside_module(&infra.join("terraform"))?;
    if found.is_empty() {
        Ok(Outcome::Passed)
    } else {
        bail!(
            "{} — a module used from a registry has only its own folder: make the \
             file a variable or copy it into infra/terraform",
            found.join("; ")
        )
    }
}

/// Every place a `.tf` file under `module` names a path outside `module` (`file:line: "…"`):
/// a string whose `..` segments climb above the module's folder (from the file's own folder;
/// `${path.module}` is that folder), or any use of `path.root` / `path.cwd` (the caller's
/// folders). Comments are not read. Paths built from variables are the caller's to give.
fn paths_outside_module(module: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut stack = vec![module.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            if entry.file_type()?.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "tf") {
                continue;
            }
            let rel = path.strip_prefix(module).unwrap_or(&path);
            let depth = rel.components().count() - 1;
            let text = std::fs::read_to_string(&path)?;
            for (n, line) in text.lines().enumerate() {
                for reference in outside_references(line, depth) {
                    found.push(format!(
                        "terraform/{}:{}: {reference}",
                        rel.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    found.sort();
    Ok(found)
}

/// The references of one line of HCL, in a file `depth` folders below the module's, that
/// leave the module (see `paths_outside_module`).
fn outside_references(line: &str, depth: usize) -> Vec<String> {
    let (code, strings) = split_line(line);
    let mut out = Vec::new();
    for caller_dir in ["path.root", "path.cwd"] {
        if code.contains(caller_dir) || strings.iter().any(|s| s.contains(caller_dir)) {
            out.push(format!("{caller_dir} (the caller's folder)"));
        }
    }
    for s in strings {
        if climbs_out(&s, depth) {
            out.push(format!("{s:?}"));
        }
    }
    out
}

/// The module's own folder and the start of any interpolation, spelled with escapes so that
/// no brace in a string literal unbalances a reader that counts braces (the review's did).
const MODULE_DIR: &str = "$\x7bpath.module\x7d";
const INTERPOLATION: &str = "$\x7b";

/// Whether a path, read from a folder `depth` levels inside the module, climbs above it.
fn climbs_out(path: &str, depth: usize) -> bool {
    let mut level = depth as isize;
    for segment in path.split('/') {
        match segment {
            ".." => {
                level -= 1;
                if level < 0 {
                    return true;
                }
            }
            "" | "." | MODULE_DIR => {}
            // Anything computed (`$var.dist_dir` interpolated) is the caller's: not ours to judge.
            s if s.contains(INTERPOLATION) => return false,
            _ => level += 1,
        }
    }
    false
}

/// One line split into its code outside strings (comments dropped) and its string literals.
fn split_line(line: &str) -> (String, Vec<String>) {
    let mut code = String::new();
    let mut strings = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '#' => break,
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                s.push(escaped);
                            }
                        }
                        '"' => break,
                        _ => s.push(c),
                    }
                }
                strings.push(s);
            }
            _ => code.push(c),
        }
    }
    (code, strings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_above_the_module_is_found() {
        let line = r#"  schema_file = coalesce(var.schema_file, "${path.module}/../schema.json")"#;
        assert_eq!(
            outside_references(line, 0),
            vec![r#""${path.module}/../schema.json""#]
        );
        assert!(outside_references(r#"  x = file("${path.module}/schema.json")"#, 0).is_empty());
    }

    #[test]
    fn an_example_may_reach_the_module_but_not_above_it() {
        assert!(outside_references(r#"  source = "../..""#, 2).is_empty());
        assert_eq!(outside_references(r#"  source = "../../..""#, 2).len(), 1);
        assert!(outside_references(r#"  source = "../modules/x""#, 0).len() == 1);
    }

    #[test]
    fn comments_prose_and_caller_paths_are_not_reads() {
        assert!(outside_references("  # see ../README.md", 0).is_empty());
        assert!(outside_references(r#"  a = 1 // "../x""#, 0).is_empty());
        assert!(outside_references(r#"  m = "in 1..100""#, 0).is_empty());
        assert!(outside_references(r#"  f = "${var.dist_dir}/../x/bootstrap.zip""#, 0).is_empty());
    }

    #[test]
    fn the_callers_folders_are_found() {
        assert_eq!(
            outside_references(r#"  f = "${path.cwd}/schema.json""#, 0),
            vec!["path.cwd (the caller's folder)"]
        );
        assert_eq!(outside_references("  f = path.root", 0).len(), 1);
    }
}
