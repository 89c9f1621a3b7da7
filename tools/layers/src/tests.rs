use super::*;

/// A crate in a fresh folder: each `(path, text)` a file under its `src/`.
fn crate_of(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atelier-layers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap_or(&dir)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&file, text).unwrap_or_else(|e| panic!("{e}"));
    }
    dir
}

fn edges_of(src: &Path) -> Vec<(String, String)> {
    let graph = graph(src).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    for (from, to) in graph.edges {
        out.extend(to.into_iter().map(|t| (from.clone(), t)));
    }
    out
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_owned(), b.to_owned())
}

#[test]
fn a_full_path_inside_an_expression_is_an_edge() {
    let src = crate_of(
        "full",
        &[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "pub fn f() -> u32 { crate::b::g() + 1 }"),
            ("b.rs", "pub fn g() -> u32 { 1 }"),
        ],
    );
    assert_eq!(edges_of(&src), [pair("a.rs", "b.rs")]);
}

#[test]
fn super_chains_pub_use_and_macro_paths_are_edges() {
    let src = crate_of(
        "chains",
        &[
            ("lib.rs", "pub mod x;"),
            ("x/mod.rs", "mod deep; pub mod y; pub use deep::D;"),
            (
                "x/deep.rs",
                "pub struct D; fn f() { tracing::info!(v = %super::super::top()); }",
            ),
            ("x/y.rs", "pub fn y() { let _ = super::deep::D; }"),
        ],
    );
    assert_eq!(
        edges_of(&src),
        [
            pair("x/deep.rs", "lib.rs"),
            pair("x/mod.rs", "x/deep.rs"),
            pair("x/y.rs", "x/deep.rs"),
        ]
    );
}

#[test]
fn test_code_and_single_names_are_not_edges() {
    let src = crate_of(
        "tests",
        &[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "fn f(b: u32) -> u32 { b }\n#[cfg(test)]\nmod tests { use crate::b::G; }",
            ),
            ("b.rs", "pub const G: u32 = 1;"),
        ],
    );
    assert!(edges_of(&src).is_empty());
}

#[test]
fn a_circle_of_three_files_is_found_whole() {
    let src = crate_of(
        "circle",
        &[
            ("lib.rs", "mod a; mod b; mod c;"),
            ("a.rs", "use crate::b::B; pub struct A;"),
            ("b.rs", "pub struct B(pub crate::c::C);"),
            ("c.rs", "pub struct C; fn f() { let _ = crate::a::A; }"),
        ],
    );
    let graph = graph(&src).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(circles(&graph), [["a.rs", "b.rs", "c.rs", "a.rs"]]);
}

#[test]
fn an_unreadable_file_is_an_error_not_a_skip() {
    let src = crate_of("broken", &[("lib.rs", "fn f( {")]);
    assert!(matches!(graph(&src), Err(ReadError::Parse(..))));
}

#[test]
fn module_paths_follow_the_file_layout() {
    assert!(module_of("lib.rs").is_empty());
    assert_eq!(module_of("store/mod.rs"), ["store"]);
    assert_eq!(module_of("store/jobs.rs"), ["store", "jobs"]);
}

#[test]
fn a_path_in_an_attribute_is_an_edge() {
    let src = crate_of(
        "attr",
        &[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "#[derive(Api)]\n#[api(paths(crate::b::route))]\npub struct A;",
            ),
            ("b.rs", "pub fn route() {}"),
        ],
    );
    assert_eq!(edges_of(&src), [pair("a.rs", "b.rs")]);
}
