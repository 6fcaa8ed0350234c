//! References to the repository's files in prose (a page of the docs, the comments of a Rust
//! file): paths ending in `.rs`, `.sql`, `.md`, `.sh`, `.py`, `.json` or `.toml`.

use std::collections::BTreeSet;

const EXTENSIONS: [&str; 7] = [".rs", ".sql", ".md", ".sh", ".py", ".json", ".toml"];

/// Files the prose names that a run writes, not the repository: the benchmark's report and the
/// client example's checkpoint.
const WRITTEN_BY_A_RUN: [&str; 3] = ["summary.json", "summary.md", "resume.checkpoint.json"];

/// The file references of `text`, each with its line (1-based), outside fenced code blocks
/// (commands and their output): every word between backticks and every link target
/// (`[…](path#anchor)`) that ends in one of [`EXTENSIONS`], and every other word that does and
/// is a path (`docs/contract.md#listing`) or a page (`README.md`); without anchor or line number.
pub fn in_prose(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut words = Vec::new();
        let mut bare = String::new();
        // Every other piece between backticks is code.
        for (i, piece) in line.split('`').enumerate() {
            if i % 2 == 1 {
                words.extend(piece.split_whitespace().map(str::to_owned));
                bare.push(' ');
                continue;
            }
            let mut rest = piece;
            while let Some(n) = rest.find("](") {
                bare.push_str(&rest[..n]);
                rest = &rest[n + 2..];
                let end = rest.find(')').unwrap_or(rest.len());
                words.push(rest[..end].to_owned());
                rest = &rest[end..];
            }
            bare.push_str(rest);
        }
        let path_char = |c: char| c.is_alphanumeric() || "_./-".contains(c);
        let mut start = None;
        for (i, c) in bare.char_indices().chain([(bare.len(), ' ')]) {
            match (start, path_char(c)) {
                (None, true) => start = Some(i),
                (Some(s), false) => {
                    let run = &bare[s..i];
                    // `host:8080/x.json` is an address.
                    let address = bare[..s].ends_with(':');
                    if !address && (run.contains('/') || run.ends_with(".md")) {
                        words.push(run.to_owned());
                    }
                    start = None;
                }
                _ => {}
            }
        }
        found.extend(
            words
                .iter()
                .filter_map(|w| reference(w))
                .map(|r| (n + 1, r)),
        );
    }
    found
}

/// `word` as a file reference, if it is one: patterns (`*.rs`, `<name>.md`, `{a,b}.rs`), elided
/// names (`…/x.json`, `...-2.json`, `-2.json`), addresses and absolute paths are none.
fn reference(word: &str) -> Option<String> {
    let word = word.trim_matches(|c: char| "()[]<>,;'\"!?".contains(c));
    let word = word.split('#').next()?;
    // `src/lib.rs:42`, `lex.rs:10-20`.
    let word = match word.rsplit_once(':') {
        Some((path, line)) if line.chars().all(|c| c.is_ascii_digit() || c == '-') => path,
        _ => word,
    };
    let word = word.trim_end_matches(['.', ':']);
    let word = word.strip_prefix("./").unwrap_or(word);
    let not_a_path = word.contains(['*', '<', '>', '{', '}', '$', '…', '=', '|', ':'])
        || word.starts_with(['/', '~', '-'])
        || (word.starts_with("..") && !word.starts_with("../"))
        || WRITTEN_BY_A_RUN.contains(&word);
    (!not_a_path
        && EXTENSIONS
            .iter()
            .any(|e| word.ends_with(e) && word.len() > e.len()))
    .then(|| word.to_owned())
}

/// Whether `reference`, written in the file `from` (both relative to the repository's root),
/// names one of `files`: relative to `from`'s directory, to the root, or as the end of one of
/// their paths (`store/facade.rs`, `mod.rs`, `contract.md`), whole names only.
pub fn resolves(reference: &str, from: &str, files: &BTreeSet<String>) -> bool {
    let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
    let beside = normalize(&format!("{dir}/{reference}"));
    let from_root = normalize(reference);
    [beside, from_root]
        .iter()
        .flatten()
        .any(|p| files.contains(p))
        || (!reference.starts_with("..")
            && files.iter().any(|f| f.ends_with(&format!("/{reference}"))))
}

/// `path` with its `.` and `..` steps walked; `None` when it climbs out of the repository.
fn normalize(path: &str) -> Option<String> {
    let mut steps: Vec<&str> = Vec::new();
    for step in path.split('/') {
        match step {
            "" | "." => {}
            ".." => {
                steps.pop()?;
            }
            s => steps.push(s),
        }
    }
    Some(steps.join("/"))
}
