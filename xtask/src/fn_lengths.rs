//! `cargo xtask fn-lengths`: every function fits on a screen (docs/testing.md "Function lengths").
//!
//! Parses every `.rs` file of the workspace with `syn`, measures each function from its `fn`
//! line to its closing brace, prints the longest, and fails when one is over [`LIMIT`] lines
//! unless `xtask/long-functions.txt` lists it with its current length. The list is a ratchet:
//! an entry may not grow, and one that shrank, was split or is gone must be lowered or removed
//! (`--ratchet` rewrites the list that way; it never adds or raises an entry). Test code is not
//! measured: `#[cfg(test)]` items, `#[test]`-like functions and every crate's `tests/` folder
//! (the harness in the `tests` crate's `src/` is measured).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use syn::visit::Visit;

/// Longer than this needs an entry in the exception list (STYLE.md aims at about 70).
const LIMIT: usize = 80;
/// How many of the longest functions the report prints.
const SHOWN: usize = 10;
/// The exception list, relative to the workspace root.
const EXCEPTIONS: &str = "xtask/long-functions.txt";

/// One measured function.
#[derive(Debug, Clone)]
struct Function {
    /// Relative to the workspace root, `/`-separated.
    path: String,
    line: usize,
    /// `name`, or `Type::name` inside an `impl` or a trait.
    name: String,
    lines: usize,
}

impl Function {
    fn key(&self) -> (String, String) {
        (self.path.clone(), self.name.clone())
    }
}

pub fn fn_lengths(args: &[String]) -> Result<ExitCode> {
    let ratchet = match args.first().map(String::as_str) {
        None => false,
        Some("--ratchet") => true,
        Some(other) => bail!("fn-lengths: unknown argument {other} (only --ratchet)"),
    };
    let root = crate::workspace::root();
    let mut functions = Vec::new();
    for file in rust_files(&root)? {
        functions.extend(measure(&root, &file)?);
    }
    functions.sort_by(|a, b| b.lines.cmp(&a.lines).then(a.path.cmp(&b.path)));
    let list = root.join(EXCEPTIONS);
    let exceptions = parse_exceptions(
        &std::fs::read_to_string(&list).with_context(|| format!("reading {}", list.display()))?,
    )?;
    println!(
        "fn-lengths: {} functions; the {SHOWN} longest:",
        functions.len()
    );
    for f in functions.iter().take(SHOWN) {
        println!("  {:>4}  {}:{} {}", f.lines, f.path, f.line, f.name);
    }
    let problems = check(&functions, &exceptions);
    if ratchet {
        std::fs::write(&list, ratcheted(&functions, &exceptions))?;
        println!("fn-lengths: {EXCEPTIONS} lowered to today's lengths");
        return Ok(ExitCode::SUCCESS);
    }
    if problems.is_empty() {
        println!(
            "fn-lengths: none over {LIMIT} lines outside the {} listed in {EXCEPTIONS}",
            exceptions.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    for problem in &problems {
        eprintln!("fn-lengths: {problem}");
    }
    Ok(ExitCode::FAILURE)
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

fn measure(root: &Path, file: &Path) -> Result<Vec<Function>> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let path = file
        .strip_prefix(root)
        .unwrap_or(file)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    measure_text(path, &text).with_context(|| format!("parsing {}", file.display()))
}

fn measure_text(path: String, text: &str) -> Result<Vec<Function>> {
    let syntax = syn::parse_file(text)?;
    let mut visitor = Measure {
        path,
        owner: Vec::new(),
        found: Vec::new(),
    };
    visitor.visit_file(&syntax);
    Ok(visitor.found)
}

/// Walks one file's syntax tree, skipping test code, recording each function's length.
struct Measure {
    path: String,
    /// The `impl` or trait being walked (innermost last), which names its methods.
    owner: Vec<String>,
    found: Vec<Function>,
}

impl Measure {
    fn record(&mut self, name: &syn::Ident, sig: &syn::Signature, block: &syn::Block) {
        let first = sig.fn_token.span.start().line;
        let last = block.brace_token.span.close().end().line;
        let name = match self.owner.last() {
            Some(owner) => format!("{owner}::{name}"),
            None => name.to_string(),
        };
        self.found.push(Function {
            path: self.path.clone(),
            line: first,
            name,
            lines: last.saturating_sub(first) + 1,
        });
    }
}

impl<'ast> Visit<'ast> for Measure {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if !is_test(&item.attrs) {
            syn::visit::visit_item_mod(self, item);
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !is_test(&item.attrs) {
            self.record(&item.sig.ident, &item.sig, &item.block);
            syn::visit::visit_item_fn(self, item);
        }
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test(&item.attrs) {
            return;
        }
        self.owner.push(type_name(&item.self_ty));
        syn::visit::visit_item_impl(self, item);
        self.owner.pop();
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_test(&item.attrs) {
            self.record(&item.sig.ident, &item.sig, &item.block);
            syn::visit::visit_impl_item_fn(self, item);
        }
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        if is_test(&item.attrs) {
            return;
        }
        self.owner.push(item.ident.to_string());
        syn::visit::visit_item_trait(self, item);
        self.owner.pop();
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let (false, Some(block)) = (is_test(&item.attrs), &item.default) {
            self.record(&item.sig.ident, &item.sig, block);
            syn::visit::visit_trait_item_fn(self, item);
        }
    }
}

/// `#[cfg(test)]`, `#[test]`, `#[tokio::test]` and the like.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path.is_ident("cfg") {
            return attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|arg| arg == "test");
        }
        path.segments.last().is_some_and(|s| s.ident == "test")
    })
}

/// The last segment of an `impl`'s type (`Store` for `impl<T> crate::Store<T>`).
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => "_".into(),
    }
}

/// `path name lines` per line; `#` starts a comment.
fn parse_exceptions(text: &str) -> Result<BTreeMap<(String, String), usize>> {
    let mut exceptions = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [path, name, lines] = fields[..] else {
            bail!("{EXCEPTIONS}:{}: expected `path name lines`", n + 1);
        };
        let lines = lines
            .parse()
            .with_context(|| format!("{EXCEPTIONS}:{}: {lines} is not a count", n + 1))?;
        exceptions.insert((path.to_owned(), name.to_owned()), lines);
    }
    Ok(exceptions)
}

/// Everything wrong: a function over the limit and not listed, a listed one that grew, and
/// entries the list no longer needs (shrunk, split, renamed or gone) — so it only tightens.
fn check(functions: &[Function], exceptions: &BTreeMap<(String, String), usize>) -> Vec<String> {
    let mut problems = Vec::new();
    // Two functions may share a path and name (methods of two impls of one type): the longest counts.
    let mut longest: BTreeMap<(String, String), &Function> = BTreeMap::new();
    for f in functions {
        longest.entry(f.key()).or_insert(f);
    }
    for (key, f) in &longest {
        match exceptions.get(key) {
            None if f.lines > LIMIT => problems.push(format!(
                "{}:{} {} is {} lines (limit {LIMIT}): split it into named steps",
                f.path, f.line, f.name, f.lines
            )),
            Some(&allowed) if f.lines > allowed => problems.push(format!(
                "{}:{} {} grew to {} lines ({EXCEPTIONS} allows {allowed}): split it",
                f.path, f.line, f.name, f.lines
            )),
            Some(&allowed) if f.lines < allowed => problems.push(format!(
                "{}:{} {} is now {} lines: lower its entry in {EXCEPTIONS} from {allowed} (or `cargo xtask fn-lengths --ratchet`)",
                f.path, f.line, f.name, f.lines
            )),
            _ => {}
        }
    }
    for (path, name) in exceptions.keys() {
        if !longest.contains_key(&(path.clone(), name.clone())) {
            problems.push(format!(
                "{EXCEPTIONS} lists {path} {name}, which no longer exists: remove the entry"
            ));
        }
    }
    problems
}

/// The list with each entry lowered to today's length, and entries at or under the limit
/// (or gone) removed, under the standard header.
fn ratcheted(functions: &[Function], exceptions: &BTreeMap<(String, String), usize>) -> String {
    let mut longest: BTreeMap<(String, String), usize> = BTreeMap::new();
    for f in functions {
        longest.entry(f.key()).or_insert(f.lines);
    }
    let mut out = String::new();
    for (key, &allowed) in exceptions {
        match longest.get(key) {
            Some(&now) if now > LIMIT => {
                let _ = writeln!(out, "{} {} {}", key.0, key.1, now.min(allowed));
            }
            _ => {}
        }
    }
    header() + &out
}

fn header() -> String {
    format!(
        "# Functions allowed over {LIMIT} lines, each with its length today (cargo xtask fn-lengths).\n\
         # An entry may only shrink: split a function and lower or remove its line.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(text: &str) -> Vec<(String, usize)> {
        measure_text("x.rs".into(), text)
            .unwrap_or_default()
            .into_iter()
            .map(|f| (f.name, f.lines))
            .collect()
    }

    #[test]
    fn a_function_counts_from_its_fn_line_to_its_closing_brace_and_test_code_is_skipped() {
        let text = "/// doc\n#[inline]\npub fn two() {\n}\n\
                    impl S {\n    fn three(&self) {\n        1;\n    }\n}\n\
                    #[test]\nfn a_test() {}\n\
                    #[cfg(test)]\nmod tests {\n    fn helper() {}\n}\n";
        assert_eq!(lengths(text), [("two".into(), 2), ("S::three".into(), 3)]);
    }

    fn function(name: &str, lines: usize) -> Function {
        Function {
            path: "x.rs".into(),
            line: 1,
            name: name.into(),
            lines,
        }
    }

    #[test]
    fn the_list_allows_what_it_names_and_fails_on_growth_shrinkage_and_stale_entries() {
        let list =
            parse_exceptions("# c\nx.rs kept 90\nx.rs grown 90\nx.rs shrunk 95\nx.rs gone 99\n")
                .unwrap_or_default();
        let functions = [
            function("kept", 90),
            function("grown", 91),
            function("shrunk", 85),
            function("new", LIMIT + 1),
            function("short", LIMIT),
        ];
        let problems = check(&functions, &list);
        let named = |word: &str| problems.iter().filter(|p| p.contains(word)).count();
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert_eq!(
            [
                named("grown"),
                named("shrunk"),
                named("gone"),
                named(" new ")
            ],
            [1, 1, 1, 1]
        );
        assert!(
            ratcheted(&functions, &list).ends_with("x.rs grown 90\nx.rs kept 90\nx.rs shrunk 85\n"),
            "{}",
            ratcheted(&functions, &list)
        );
    }
}
