//! Files that are test code as a whole: a module declared `#[cfg(test)] mod name;` (and every
//! file below it), or a file that starts `#![cfg(test)]`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use super::measure::{Parsed, is_test};

/// The files of `parsed` that are test code as a whole (with, harmlessly, the other place each
/// such module's file could have been: `name.rs` or `name/mod.rs`).
pub(super) fn test_files(parsed: &[Parsed]) -> BTreeSet<PathBuf> {
    let mut test = BTreeSet::new();
    let mut children: BTreeMap<&Path, Vec<PathBuf>> = BTreeMap::new();
    for p in parsed {
        if is_test(&p.syntax.attrs) {
            test.insert(p.file.clone());
        }
        let mut declared = Declared {
            dir: module_dir(&p.file),
            inline: Vec::new(),
            in_test: false,
            found: Vec::new(),
        };
        declared.visit_file(&p.syntax);
        for (files, is_test) in declared.found {
            if is_test {
                test.extend(files.iter().cloned());
            }
            children.entry(&p.file).or_default().extend(files);
        }
    }
    let mut work: Vec<PathBuf> = test.iter().cloned().collect();
    while let Some(file) = work.pop() {
        for child in children.get(file.as_path()).into_iter().flatten() {
            if test.insert(child.clone()) {
                work.push(child.clone());
            }
        }
    }
    test
}

/// Where the files of a file's `mod name;` items are: beside a crate root or a `mod.rs`
/// (`lib.rs`, `main.rs`, `build.rs`, `src/bin/x.rs`), else in the folder named like the file.
fn module_dir(file: &Path) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new("")).to_path_buf();
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let root = matches!(name, "lib.rs" | "main.rs" | "mod.rs" | "build.rs")
        || parent.file_name().is_some_and(|d| d == "bin");
    match file.file_stem() {
        Some(stem) if !root => parent.join(stem),
        _ => parent,
    }
}

/// Walks one file for its out-of-line `mod name;` items: each one's two possible files, and
/// whether it is test code (marked so, or inside an inline module that is).
struct Declared {
    dir: PathBuf,
    /// The inline modules being walked (outermost first), which are folders for their `mod`s.
    inline: Vec<String>,
    in_test: bool,
    found: Vec<([PathBuf; 2], bool)>,
}

impl<'ast> Visit<'ast> for Declared {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let test = self.in_test || is_test(&item.attrs);
        let name = item.ident.to_string();
        if item.content.is_none() {
            let dir = self.inline.iter().fold(self.dir.clone(), |d, m| d.join(m));
            let files = [
                dir.join(format!("{name}.rs")),
                dir.join(&name).join("mod.rs"),
            ];
            self.found.push((files, test));
            return;
        }
        let outer = std::mem::replace(&mut self.in_test, test);
        self.inline.push(name);
        syn::visit::visit_item_mod(self, item);
        self.inline.pop();
        self.in_test = outer;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(file: &str, text: &str) -> Parsed {
        Parsed {
            file: PathBuf::from(file),
            path: file.to_owned(),
            lines: text.lines().count(),
            syntax: syn::parse_file(text).unwrap_or_else(|e| panic!("{file}: {e}")),
        }
    }

    #[test]
    fn a_module_declared_for_tests_is_test_code_with_every_file_below_it() {
        let files = [
            parsed("c/src/lib.rs", "mod a;\n#[cfg(test)]\nmod tests;\n"),
            parsed(
                "c/src/a.rs",
                "mod b;\n#[cfg(test)]\nmod inline {\n    mod c;\n}\n",
            ),
            parsed("c/src/tests.rs", "mod helpers;\n"),
            parsed("c/src/tests/helpers.rs", "fn h() {}\n"),
            parsed("c/src/bin/tool.rs", "#[cfg(test)]\nmod t;\n"),
            parsed("c/src/only_tests.rs", "#![cfg(test)]\nfn x() {}\n"),
        ];
        let test = test_files(&files);
        let is = |f: &str| test.contains(Path::new(f));
        assert!(is("c/src/tests.rs") && is("c/src/tests/helpers.rs"));
        assert!(is("c/src/a/inline/c.rs") && is("c/src/bin/t.rs") && is("c/src/only_tests.rs"));
        assert!(!is("c/src/a.rs") && !is("c/src/a/b.rs") && !is("c/src/lib.rs"));
    }
}
