//! The exception list (`xtask/long-functions.txt`) and its ratchet: what is over a limit
//! without an entry, what grew, and which entries must be lowered or removed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{Context, Result, bail};

use super::measure::{Function, SourceFile};

/// Longer than this needs an entry in the exception list (STYLE.md aims at about 70).
pub(super) const LIMIT: usize = 80;
/// A file with more lines of non-test code than this needs an entry (issue 49 aims at 400).
pub(super) const FILE_LIMIT: usize = 600;
/// The exception list, relative to the workspace root.
pub(super) const EXCEPTIONS: &str = "xtask/long-functions.txt";
/// The name a file's entry has in the list (`path <file> lines`; no function is named so).
pub(super) const FILE_ENTRY: &str = "<file>";

/// `path name lines` per line; `#` starts a comment.
pub(super) fn parse_exceptions(text: &str) -> Result<BTreeMap<(String, String), usize>> {
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
pub(super) fn check(
    functions: &[Function],
    exceptions: &BTreeMap<(String, String), usize>,
) -> Vec<String> {
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
    for (path, name) in exceptions.keys().filter(|(_, name)| name != FILE_ENTRY) {
        if !longest.contains_key(&(path.clone(), name.clone())) {
            problems.push(format!(
                "{EXCEPTIONS} lists {path} {name}, which no longer exists: remove the entry"
            ));
        }
    }
    problems
}

/// The same for files: one over [`FILE_LIMIT`] lines of non-test code and not listed, a listed
/// one that grew, and file entries the list no longer needs.
pub(super) fn check_files(
    files: &[SourceFile],
    exceptions: &BTreeMap<(String, String), usize>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for f in files {
        match exceptions.get(&(f.path.clone(), FILE_ENTRY.to_owned())) {
            None if f.lines > FILE_LIMIT => problems.push(format!(
                "{} has {} lines of non-test code (limit {FILE_LIMIT}): split it by meaning",
                f.path, f.lines
            )),
            Some(&allowed) if f.lines > allowed => problems.push(format!(
                "{} grew to {} lines of non-test code ({EXCEPTIONS} allows {allowed}): split it",
                f.path, f.lines
            )),
            Some(&allowed) if f.lines < allowed => problems.push(format!(
                "{} is now {} lines of non-test code: lower its entry in {EXCEPTIONS} from {allowed} (or `cargo xtask fn-lengths --ratchet`)",
                f.path, f.lines
            )),
            _ => {}
        }
    }
    for (path, _) in exceptions.keys().filter(|(_, name)| name == FILE_ENTRY) {
        if !files.iter().any(|f| &f.path == path) {
            problems.push(format!(
                "{EXCEPTIONS} lists {path} {FILE_ENTRY}, which no longer exists: remove the entry"
            ));
        }
    }
    problems
}

/// The list with each entry lowered to today's length, and entries at or under their limit
/// (or gone) removed, under the standard header.
pub(super) fn ratcheted(
    functions: &[Function],
    files: &[SourceFile],
    exceptions: &BTreeMap<(String, String), usize>,
) -> String {
    let mut longest: BTreeMap<(String, String), usize> = BTreeMap::new();
    for f in functions {
        longest.entry(f.key()).or_insert(f.lines);
    }
    let mut out = String::new();
    for (key, &allowed) in exceptions {
        let now = if key.1 == FILE_ENTRY {
            let file = files.iter().find(|f| f.path == key.0);
            file.map(|f| f.lines).filter(|&n| n > FILE_LIMIT)
        } else {
            longest.get(key).copied().filter(|&n| n > LIMIT)
        };
        if let Some(now) = now {
            let _ = writeln!(out, "{} {} {}", key.0, key.1, now.min(allowed));
        }
    }
    header() + &out
}

fn header() -> String {
    format!(
        "# Functions allowed over {LIMIT} lines (`path name lines`) and files over {FILE_LIMIT} lines of\n\
         # non-test code (`path {FILE_ENTRY} lines`), each with its length today (cargo xtask fn-lengths).\n\
         # An entry may only shrink: split the function or the file and lower or remove its line.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::super::measure::measure_text;
    use super::*;

    fn function(name: &str, lines: usize) -> Function {
        Function {
            path: "x.rs".into(),
            line: 1,
            name: name.into(),
            lines,
        }
    }

    fn file(path: &str, lines: usize) -> SourceFile {
        SourceFile {
            path: path.into(),
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
            ratcheted(&functions, &[], &list)
                .ends_with("x.rs grown 90\nx.rs kept 90\nx.rs shrunk 85\n"),
            "{}",
            ratcheted(&functions, &[], &list)
        );
    }

    #[test]
    fn a_file_of_601_lines_of_non_test_code_fails_and_its_test_module_is_not_counted() {
        let code = "// a line\n".repeat(600);
        let tests = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
        let none = BTreeMap::new();
        let (_, at_limit) = measure_text("a.rs", &format!("{code}{tests}"));
        assert_eq!(at_limit.lines, 600);
        assert!(check_files(&[at_limit], &none).is_empty());
        let (_, over) = measure_text("a.rs", &format!("{code}fn f() {{}}\n{tests}"));
        assert_eq!(over.lines, 601);
        let problems = check_files(&[over], &none);
        assert_eq!(
            problems,
            ["a.rs has 601 lines of non-test code (limit 600): split it by meaning"]
        );
    }

    #[test]
    fn file_entries_may_not_grow_must_shrink_with_the_file_and_are_never_added() {
        let list = parse_exceptions(
            "a.rs <file> 700\nb.rs <file> 650\nc.rs <file> 700\nd.rs <file> 700\n\
             g.rs <file> 650\nx.rs kept 90\n",
        )
        .unwrap_or_default();
        let files = [
            file("a.rs", 700),
            file("b.rs", 651),
            file("c.rs", 620),
            file("e.rs", FILE_LIMIT + 1),
            file("f.rs", FILE_LIMIT),
            file("g.rs", 590),
            file("x.rs", 100),
        ];
        let functions = [function("kept", 90)];
        // File entries are not functions that no longer exist, and the reverse.
        assert!(check(&functions, &list).is_empty());
        let problems = check_files(&files, &list);
        let named = |path: &str| problems.iter().filter(|p| p.contains(path)).count();
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert_eq!(
            [
                "b.rs grew",
                "c.rs is now",
                "d.rs <file>, which",
                "e.rs has",
                "g.rs is now"
            ]
            .map(named),
            [1; 5],
            "{problems:#?}"
        );
        let list = ratcheted(&functions, &files, &list);
        assert!(
            list.ends_with("\na.rs <file> 700\nb.rs <file> 650\nc.rs <file> 620\nx.rs kept 90\n"),
            "{list}"
        );
        assert_eq!(parse_exceptions(&list).map(|l| l.len()).unwrap_or(0), 4);
    }
}
