//! Measuring one parsed file: each function's length, and the file's lines of non-test code.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// One parsed `.rs` file.
pub(super) struct Parsed {
    pub(super) file: PathBuf,
    /// Relative to the workspace root, `/`-separated.
    pub(super) path: String,
    /// All its lines.
    pub(super) lines: usize,
    pub(super) syntax: syn::File,
}

pub(super) fn parse(root: &Path, file: PathBuf) -> Result<Parsed> {
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let path = file
        .strip_prefix(root)
        .unwrap_or(&file)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let syntax = syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))?;
    Ok(Parsed {
        file,
        path,
        lines: text.lines().count(),
        syntax,
    })
}

/// One measured function.
#[derive(Debug, Clone)]
pub(super) struct Function {
    /// Relative to the workspace root, `/`-separated.
    pub(super) path: String,
    pub(super) line: usize,
    /// `name`, or `Type::name` inside an `impl` or a trait.
    pub(super) name: String,
    pub(super) lines: usize,
}

impl Function {
    pub(super) fn key(&self) -> (String, String) {
        (self.path.clone(), self.name.clone())
    }
}

/// One measured file.
#[derive(Debug, Clone)]
pub(super) struct SourceFile {
    /// Relative to the workspace root, `/`-separated.
    pub(super) path: String,
    /// Its lines minus the lines its test items span.
    pub(super) lines: usize,
}

/// The functions of one file and its lines of non-test code.
pub(super) fn measure(parsed: &Parsed) -> (Vec<Function>, SourceFile) {
    let mut functions = Measure {
        path: parsed.path.clone(),
        owner: Vec::new(),
        found: Vec::new(),
    };
    functions.visit_file(&parsed.syntax);
    let mut tests = TestLines::default();
    tests.visit_file(&parsed.syntax);
    let test_lines = tests.lines.range(1..=parsed.lines).count();
    let file = SourceFile {
        path: parsed.path.clone(),
        lines: parsed.lines - test_lines,
    };
    (functions.found, file)
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

/// Walks one file's syntax tree and collects the lines its test items span (items, `impl` and
/// trait members, at any depth), from their first attribute or doc comment to their last token.
#[derive(Default)]
struct TestLines {
    lines: BTreeSet<usize>,
}

impl TestLines {
    /// Whether a node with these attributes is test code; if so its lines are recorded.
    fn test(&mut self, attrs: &[syn::Attribute], node: &impl Spanned) -> bool {
        let test = is_test(attrs);
        if test {
            self.lines.extend(lines_of(node));
        }
        test
    }
}

impl<'ast> Visit<'ast> for TestLines {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !self.test(item_attrs(item), item) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs: &[syn::Attribute] = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if !self.test(attrs, item) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        let attrs: &[syn::Attribute] = match item {
            syn::TraitItem::Const(i) => &i.attrs,
            syn::TraitItem::Fn(i) => &i.attrs,
            syn::TraitItem::Type(i) => &i.attrs,
            syn::TraitItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if !self.test(attrs, item) {
            syn::visit::visit_trait_item(self, item);
        }
    }
}

/// The lines a node spans, its outer attributes and doc comments included.
fn lines_of(node: &impl Spanned) -> RangeInclusive<usize> {
    let span = node.span();
    span.start().line..=span.end().line
}

/// An item's outer attributes (doc comments included).
fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// `#[cfg(test)]`, `#[test]`, `#[tokio::test]` and the like (and `#![cfg(test)]`).
pub(super) fn is_test(attrs: &[syn::Attribute]) -> bool {
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

/// [`measure`] of a source text, as the file `path` (for the tests).
#[cfg(test)]
pub(super) fn measure_text(path: &str, text: &str) -> (Vec<Function>, SourceFile) {
    let parsed = Parsed {
        file: PathBuf::from(path),
        path: path.to_owned(),
        lines: text.lines().count(),
        syntax: syn::parse_file(text).unwrap_or_else(|e| panic!("{path}: {e}")),
    };
    measure(&parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(text: &str) -> Vec<(String, usize)> {
        measure_text("x.rs", text)
            .0
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

    #[test]
    fn a_files_test_items_with_their_attributes_and_doc_comments_are_not_counted() {
        let text = "//! A file.\n\
                    use std::fmt;\n\
                    \n\
                    /// Doc of a test helper.\n\
                    #[cfg(test)]\n\
                    use std::io;\n\
                    impl S {\n\
                    \x20   fn kept(&self) {}\n\
                    \x20   /// Only for the tests.\n\
                    \x20   #[cfg(test)]\n\
                    \x20   fn helper(&self) {\n\
                    \x20   }\n\
                    }\n\
                    #[test]\n\
                    fn a_test() {}\n\
                    \n\
                    #[cfg(test)]\n\
                    mod tests {\n\
                    \x20   #[test]\n\
                    \x20   fn t() {}\n\
                    }\n";
        let (_, file) = measure_text("x.rs", text);
        // 21 lines; the test items span 3 + 4 + 2 + 5 of them.
        assert_eq!(text.lines().count(), 21);
        assert_eq!(file.lines, 21 - 3 - 4 - 2 - 5);
    }
}
