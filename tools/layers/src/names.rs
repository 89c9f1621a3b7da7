//! The module paths one file names in its non-test code, made absolute (crate-relative
//! segments): `use` trees (`pub use` included), paths in types and expressions, paths inside
//! macro calls (`tracing::info!(x = %crate::a::f())`) and attributes' arguments, with `crate::`, `self::` and `super::`
//! chains resolved and a path that starts with a child module's name read as relative.
//! `#[cfg(test)]` items are skipped: tests may reach anything.

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Every path `file` names, absolute; `module` is the file's own module path and
/// `is_child(module, name)` says whether `module::name` is a module of its own file.
pub fn named_paths(
    file: &syn::File,
    module: &[String],
    is_child: &dyn Fn(&[String], &str) -> bool,
) -> Vec<Vec<String>> {
    let mut v = Names {
        module: module.to_vec(),
        is_child,
        found: Vec::new(),
    };
    v.visit_file(file);
    v.found
}

struct Names<'a> {
    /// The module the visitor is in (inline `mod x { … }` pushed).
    module: Vec<String>,
    is_child: &'a dyn Fn(&[String], &str) -> bool,
    found: Vec<Vec<String>>,
}

impl Names<'_> {
    /// `segments` as written, made absolute; `None` for an external crate, a local name or a
    /// prelude item.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some(self.module.iter().chain(rest).cloned().collect()),
            "super" => {
                let mut base = self.module.clone();
                base.pop();
                let mut rest = rest;
                while let Some(("super", r)) = rest.split_first().map(|(h, r)| (h.as_str(), r)) {
                    base.pop();
                    rest = r;
                }
                Some(base.into_iter().chain(rest.iter().cloned()).collect())
            }
            name if (self.is_child)(&self.module, name) => {
                Some(self.module.iter().chain(segments).cloned().collect())
            }
            _ => None,
        }
    }

    fn record(&mut self, segments: &[String]) {
        if let Some(path) = self.absolute(segments) {
            self.found.push(path);
        }
    }

    /// Every leaf of a `use` tree, with `prefix` before it (a glob names its module).
    fn use_tree(&mut self, tree: &syn::UseTree, prefix: &mut Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.leaf(prefix, &n.ident),
            syn::UseTree::Rename(r) => self.leaf(prefix, &r.ident),
            syn::UseTree::Glob(_) => self.record(&prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(t, prefix)),
        }
    }

    fn leaf(&mut self, prefix: &[String], ident: &syn::Ident) {
        let mut path = prefix.to_vec();
        // `use super::{self, x}`: `self` names the prefix itself.
        if ident != "self" {
            path.push(ident.to_string());
        }
        self.record(&path);
    }

    /// `a::b::c` sequences inside a macro's tokens (not parsed by syn as paths).
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) => {
                    let (path, next) = path_at(&trees, i, id);
                    if path.len() > 1 {
                        self.record(&path);
                    }
                    i = next;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

/// The `a::b::c` path starting at `trees[i]` and the index after it.
fn path_at(trees: &[TokenTree], mut i: usize, first: &syn::Ident) -> (Vec<String>, usize) {
    let mut path = vec![first.to_string()];
    i += 1;
    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(n))) =
        (trees.get(i), trees.get(i + 1), trees.get(i + 2))
    {
        if a.as_char() != ':' || b.as_char() != ':' {
            break;
        }
        path.push(n.to_string());
        i += 3;
    }
    (path, i)
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|id| id == "test")
    })
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Trait(t) => &t.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if let Some((_, items)) = &m.content {
            self.module.push(m.ident.to_string());
            items.iter().for_each(|i| self.visit_item(i));
            self.module.pop();
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&u.tree, &mut Vec::new());
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        // A single name is a local, a type in scope or a prelude item, never a module.
        if segments.len() > 1 {
            self.record(&segments);
        }
        syn::visit::visit_path(self, path);
    }

    /// An attribute's arguments name paths too (`#[openapi(paths(handlers::x))]`,
    /// `#[schema(value_type = crate::domain::X)]`).
    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if let syn::Meta::List(list) = &attr.meta {
            self.tokens(list.tokens.clone());
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }
}
