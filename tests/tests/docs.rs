//! The repository stands alone: every relative link in the README files and `docs/` names a
//! file that exists inside the repository, so a fresh clone has the design and everything
//! else the documents point to. Pure: reads files, needs no server.
// A test that cannot read its own repository has nothing to check; the message says why.
#![allow(clippy::expect_used)]

use std::path::{Component, Path, PathBuf};

/// The repository root, canonical (this crate is `tests/` in it).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the repository root")
        .canonicalize()
        .expect("the repository root can be canonicalized")
}

/// The documents whose links must hold: both READMEs and every markdown file in `docs/`.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![
        root.join("README.md"),
        root.join("infra/README.md"),
        root.join("infra/terraform/README.md"),
    ];
    let mut in_docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("docs/ can be listed").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    in_docs.sort();
    docs.extend(in_docs);
    docs
}

/// Markdown with fenced blocks and code spans blanked out (same length, newlines kept), so
/// an example inside code is never taken for a link.
fn without_code(markdown: &str) -> String {
    let mut prose = String::with_capacity(markdown.len());
    let mut fenced = false;
    for line in markdown.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if fence || fenced {
            prose.extend(line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
        } else {
            prose.push_str(line);
        }
        if fence {
            fenced = !fenced;
        }
    }
    blank_code_spans(&prose)
}

/// Replaces each code span (a run of backticks up to the next run of the same length) by
/// spaces, keeping newlines.
fn blank_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let run_at = |i: usize| chars[i..].iter().take_while(|&&c| c == '`').count();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let open = run_at(i);
        let mut j = i + open;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let run = run_at(j);
                if run == open {
                    close = Some(j);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                for c in &mut out[i..end + open] {
                    if *c != '\n' {
                        *c = ' ';
                    }
                }
                i = end + open;
            }
            // An unmatched run is literal backticks.
            None => i += open,
        }
    }
    out.into_iter().collect()
}

/// Every link target in a markdown document: inline links and images `[text](target)` and
/// reference definitions `[label]: target`.
fn link_targets(markdown: &str) -> Vec<String> {
    let prose = without_code(markdown);
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(target) = inline_target(rest) {
            targets.push(target);
        }
    }
    for line in prose.lines() {
        let line = line.trim_start();
        if let Some(after) = line.strip_prefix('[')
            && let Some((label, def)) = after.split_once("]:")
            && !label.is_empty()
            && let Some(target) = def.split_whitespace().next()
        {
            targets.push(target.trim_matches(['<', '>']).to_owned());
        }
    }
    targets
}

/// The target at the start of `s` (just after `](`): `<…>`, or up to whitespace or the `)`
/// that closes the link (balanced parentheses allowed inside).
fn inline_target(s: &str) -> Option<String> {
    let s = s.trim_start();
    if let Some(angle) = s.strip_prefix('<') {
        return angle.split_once('>').map(|(t, _)| t.to_owned());
    }
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(s[..i].to_owned()),
            ')' => depth -= 1,
            c if c.is_whitespace() => return Some(s[..i].to_owned()),
            _ => {}
        }
    }
    None
}

/// Why a link from `doc` to `target` is not a link into the repository, if it is not.
fn broken(root: &Path, doc: &Path, target: &str) -> Option<String> {
    let lower = target.to_ascii_lowercase();
    if ["http://", "https://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s))
    {
        return None;
    }
    let path = target.split(['#', '?']).next().unwrap_or_default();
    let fragment = target.split_once('#').map(|(_, f)| f).unwrap_or_default();
    if path.is_empty() {
        // A fragment of the document itself.
        return missing_heading(doc, fragment);
    }
    if path.contains(':') || Path::new(path).has_root() {
        return Some("is neither a web link nor a relative path".to_owned());
    }
    let dir = doc.parent().expect("a document is in a folder");
    let joined = dir.join(path);
    let Ok(resolved) = joined.canonicalize() else {
        return Some(format!("{} does not exist", joined.display()));
    };
    if !resolved.starts_with(root) {
        return Some(format!(
            "resolves to {}, outside the repository",
            resolved.display()
        ));
    }
    // Canonical paths carry no `..`; keep the check honest if that ever changes.
    if resolved.components().any(|c| c == Component::ParentDir) {
        return Some("climbs out of the repository".to_owned());
    }
    missing_heading(&resolved, fragment)
}

/// Why `#fragment` names no heading of the markdown file `doc`, if it does not (a moved
/// section leaves links that still open the page but land nowhere).
fn missing_heading(doc: &Path, fragment: &str) -> Option<String> {
    if fragment.is_empty() || doc.extension().is_none_or(|x| x != "md") {
        return None;
    }
    let text = std::fs::read_to_string(doc).ok()?;
    let anchors = heading_anchors(&text);
    (!anchors.iter().any(|a| a == fragment)).then(|| {
        format!(
            "#{fragment} is no heading of {} (headings: {})",
            doc.display(),
            anchors.join(", ")
        )
    })
}

/// The anchors GitHub gives a document's headings: lowercased, spaces to hyphens, every
/// character but letters, digits, `-` and `_` dropped, code spans' backticks included.
fn heading_anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut anchors = Vec::new();
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        if fenced {
            continue;
        }
        let text = heading.trim_start_matches('#').trim();
        anchors.push(
            text.chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .flat_map(char::to_lowercase)
                .collect(),
        );
    }
    anchors
}

/// The README is the front door: what it is, the two commands, a first run, the layout and
/// links. Everything else lives in `docs/`, by reader.
const README_MAX_LINES: usize = 250;

#[test]
fn the_readme_stays_short() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move the detail to docs/"
    );
    let commands = readme
        .find("cargo xtask dev")
        .zip(readme.find("cargo xtask test"));
    let first_section = readme.find("\n## ").unwrap_or(readme.len());
    let second_section = readme[first_section + 1..]
        .find("\n## ")
        .map_or(readme.len(), |i| i + first_section + 1);
    assert!(
        commands.is_some_and(|(dev, test)| dev.max(test) < second_section),
        "the two commands come in the README's first section"
    );
}

#[test]
fn anchors_follow_github_and_a_missing_heading_is_refused() {
    let md = "# Atelier\n## Local cloud: the deployed artifacts, end to end\n```\n# not a heading\n```\n### Waiting for a job: long-poll and `ETag`\n";
    assert_eq!(
        heading_anchors(md),
        vec![
            "atelier",
            "local-cloud-the-deployed-artifacts-end-to-end",
            "waiting-for-a-job-long-poll-and-etag",
        ]
    );
    let root = repo_root();
    let readme = root.join("README.md");
    assert!(broken(&root, &readme, "docs/design.md#no-such-heading").is_some());
    assert!(broken(&root, &readme, "#no-such-heading").is_some());
    assert_eq!(broken(&root, &readme, "docs/design.md#money-rules"), None);
}

#[test]
fn every_link_in_the_readmes_and_docs_resolves_inside_the_repository() {
    let root = repo_root();
    let docs = documents(&root);
    assert!(
        docs.iter().any(|d| d.ends_with("docs/design.md")),
        "docs/design.md is missing: the design must live in the repository"
    );
    let mut checked = 0;
    let mut problems = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(doc).expect("every listed document is readable");
        for target in link_targets(&text) {
            checked += 1;
            if let Some(why) = broken(&root, doc, &target) {
                let name = doc.strip_prefix(&root).unwrap_or(doc).display();
                problems.push(format!("{name}: ({target}) {why}"));
            }
        }
    }
    assert!(checked > 0, "no links found: the link reader is broken");
    assert!(
        problems.is_empty(),
        "links that leave the repository or name nothing:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_link_reader_finds_inline_image_and_reference_links_but_not_code() {
    let markdown = "\
See [`the design`](docs/design.md#money-rules) and ![logo](img/logo.png \"title\").
A wrapped [link
text](LICENSE) and <https://example.org> plain.
Code is not a link: `[x](../outside.md)` nor ``[y](`z`)``.

```sh
echo [z](../fenced.md)
```

[ref]: <infra/README.md>
| [in a table](a_(b).md) |
";
    assert_eq!(
        link_targets(markdown),
        vec![
            "docs/design.md#money-rules",
            "img/logo.png",
            "LICENSE",
            "a_(b).md",
            "infra/README.md",
        ]
    );
}

#[test]
fn a_link_out_of_the_repository_is_refused_even_when_the_file_exists() {
    let root = repo_root();
    let readme = root.join("README.md");
    // The parent folder of the repository exists on every machine that has a clone.
    let why = broken(&root, &readme, "..").expect("a link to the folder above is refused");
    assert!(why.contains("outside the repository"), "{why}");
    // (why it must be refused, target)
    let refused = [
        ("missing file", "docs/no-such-page.md"),
        ("absolute path", "/etc/hostname"),
        ("other scheme", "file:///etc/hostname"),
    ];
    for (why, target) in refused {
        assert!(
            broken(&root, &readme, target).is_some(),
            "{why}: {target} was accepted"
        );
    }
    for ok in [
        "docs/design.md",
        "docs/design.md#money-rules",
        "#two-commands",
        "https://example.org/x",
    ] {
        assert_eq!(broken(&root, &readme, ok), None, "{ok} was refused");
    }
}

#[test]
fn the_design_numbers_the_money_rules_one_to_fifteen() {
    // Code comments cite rules by number ("rule 5", "rules 5–9"); the list must keep them.
    let root = repo_root();
    let design =
        std::fs::read_to_string(root.join("docs/design.md")).expect("docs/design.md is readable");
    let section = design
        .split("\n## Money rules\n")
        .nth(1)
        .expect("docs/design.md has a `## Money rules` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let numbers: Vec<u32> = section
        .lines()
        .filter_map(|l| l.split_once(". **"))
        .filter_map(|(n, _)| n.parse().ok())
        .collect();
    assert_eq!(
        numbers,
        (1..=15).collect::<Vec<u32>>(),
        "money rule numbers"
    );
}
