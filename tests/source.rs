//! Checks of the source tree itself, by reading its files (the crate is not used): no circle of
//! imports between the crate's files, no database engine named above the store, and no reference
//! in the docs or the comments to a file that does not exist. How each reads the sources is in
//! `source/` (`lex.rs`, `imports.rs`, `engines.rs`, `references.rs`).

mod source {
    pub mod engines;
    pub mod imports;
    pub mod lex;
    pub mod references;
}

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use source::{engines, imports, lex, references};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (relative to `base`, with `/`), but build output and version control.
fn files_under(base: &Path, dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![base.join(dir)];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if matches!(name.to_str(), Some("target" | ".git" | "node_modules")) {
                continue;
            }
            if path.is_dir() {
                todo.push(path);
            } else if let Ok(rel) = path.strip_prefix(base) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

fn rust_files(dir: &str) -> Vec<String> {
    files_under(&root(), dir)
        .into_iter()
        .filter(|f| f.ends_with(".rs"))
        .collect()
}

fn read(file: &str) -> String {
    std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn no_import_circle() {
    let src = root().join("src");
    let files: Vec<String> = files_under(&src, "")
        .into_iter()
        .filter(|f| f.ends_with(".rs"))
        .collect();
    let graph = imports::graph(&src, &files);
    let circles = imports::circles(&graph);
    let mut report = String::new();
    for circle in &circles {
        report.push_str("a circle of imports:\n");
        for from in circle {
            for (to, (line, path)) in &graph[from] {
                if circle.contains(to) {
                    report.push_str(&format!("  src/{from}:{line} → src/{to} ({path})\n"));
                }
            }
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn no_engine_named_above_the_store() {
    let mut found = String::new();
    for file in rust_files("src") {
        if file.starts_with("src/store/") {
            continue;
        }
        for (line, word) in engines::named(&read(&file)) {
            found.push_str(&format!("  {file}:{line}: {word}\n"));
        }
    }
    assert!(
        found.is_empty(),
        "code above the store names an engine:\n{found}"
    );
}

/// The comments of a Rust file, each on its line (without its `//`, `///`, `//!`), the code's
/// lines left empty.
fn comments_only(source: &str) -> String {
    let mut lines = vec![String::new(); source.lines().count() + 1];
    for (line, comment) in lex::lex(source).comments {
        for (n, text) in comment.lines().enumerate() {
            let text = text.trim_start();
            let text = ["//!", "///", "//", "/*!", "/**", "/*", "*"]
                .iter()
                .find_map(|m| text.strip_prefix(m))
                .unwrap_or(text);
            if let Some(l) = lines.get_mut(line + n - 1) {
                *l = text.trim_end_matches("*/").to_owned();
            }
        }
    }
    lines.join("\n")
}

#[test]
fn file_references_exist() {
    let root = root();
    let files: BTreeSet<String> = files_under(&root, "").into_iter().collect();
    // Every page (the root's, docs/, benches/ and its notes, openapi/, the crates'), whole, and
    // the comments of every Rust file of src/, crates/, tests/ and benches/.
    let mut prose: Vec<(String, String)> = files
        .iter()
        .filter(|f| f.ends_with(".md"))
        .map(|page| (page.clone(), read(page)))
        .collect();
    for file in ["src", "crates", "tests", "benches"]
        .iter()
        .flat_map(|d| rust_files(d))
    {
        let source = read(&file);
        prose.push((file, comments_only(&source)));
    }
    let mut dangling = String::new();
    for (file, text) in &prose {
        for (line, reference) in references::in_prose(text) {
            if !references::resolves(&reference, file, &files) {
                dangling.push_str(&format!("  {file}:{line}: {reference}\n"));
            }
        }
    }
    assert!(
        dangling.is_empty(),
        "references to files that do not exist:\n{dangling}"
    );
}
