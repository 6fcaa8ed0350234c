//! The committed `.sql` files, one per engine (`sqlite/statements.sql`,
//! `postgres/statements.sql`): every statement the engine runs, expanded from the macros that
//! declare it once (`transitions.rs`, `statements.rs`, the engine's `statements.rs`) and laid out
//! on lines (`layout.rs`), under its name and doc comment, so that a statement can be read and
//! grepped whole. Each engine's `statements.rs` says what its file holds and runs the checks
//! below in its tests: the committed file is what the code renders (regenerate it with
//! [`REGENERATE`]), the layout changes only whitespace, and each statement's parameters are
//! `$1..$N` with none missing, each named by its doc.

mod layout;

use std::path::PathBuf;

pub(crate) use layout::lay_out_mark;

use super::statements::{Named, Statements, SHARED};

/// The command that writes the committed files again.
const REGENERATE: &str = "A2A_MAILBOX_UPDATE_SQL=1 cargo test --lib sql_files";
/// Set to `1`: the checks write the files instead of comparing them.
const UPDATE_VAR: &str = "A2A_MAILBOX_UPDATE_SQL";

/// One statement of a file.
pub(crate) struct SqlEntry {
    name: String,
    doc: String,
    /// What runs.
    text: String,
    /// What the file shows: `text` laid out.
    shown: String,
}

impl SqlEntry {
    /// A statement declared in Rust, laid out alone.
    fn declared(n: &Named) -> SqlEntry {
        SqlEntry {
            name: n.name.to_lowercase(),
            doc: n.doc.to_owned(),
            text: n.text.to_owned(),
            shown: layout::lay_out(n.text, 0, 0, false),
        }
    }

    /// A statement shown laid out by its engine (PostgreSQL's batch function).
    pub(crate) fn shown_as(name: &str, doc: &str, text: String, shown: String) -> SqlEntry {
        SqlEntry {
            name: name.to_owned(),
            doc: doc.to_owned(),
            text,
            shown,
        }
    }
}

/// A titled run of entries.
pub(crate) struct Section {
    title: String,
    entries: Vec<SqlEntry>,
}

impl Section {
    pub(crate) fn new(title: &str, named: &[Named]) -> Section {
        Section {
            title: title.to_owned(),
            entries: named.iter().map(SqlEntry::declared).collect(),
        }
    }

    pub(crate) fn push(&mut self, entry: SqlEntry) {
        self.entries.push(entry);
    }
}

/// What one engine's file holds.
pub(crate) struct SqlFile {
    /// The file, from the crate's root.
    path: &'static str,
    /// The engine's name, as a reader calls it.
    engine: &'static str,
    /// What the engine runs that the file does not hold, and where it is.
    elsewhere: &'static str,
    /// The relation the engine's lists read ([`Statements::listed`]).
    listed: &'static str,
    sections: Vec<Section>,
}

impl SqlFile {
    /// The file of an engine: its [`Statements`] (less `listed`, a relation the header names),
    /// its `own` statements, then those both engines run alike.
    pub(crate) fn new(
        path: &'static str,
        engine: &'static str,
        elsewhere: &'static str,
        statements: &'static Statements,
        own: Section,
    ) -> SqlFile {
        let fields: Vec<Named> = statements
            .named()
            .into_iter()
            .filter(|n| n.name != "listed")
            .collect();
        let sections = vec![
            Section::new(
                "The engine's `Statements` (fields documented in src/store/statements.rs)",
                &fields,
            ),
            own,
            Section::new("Both engines alike (src/store/statements.rs)", SHARED),
            Section::new(
                "The operator's overview, both engines (src/store/overview.rs)",
                super::overview::OVERVIEW,
            ),
        ];
        SqlFile {
            path,
            engine,
            elsewhere,
            listed: statements.listed,
            sections,
        }
    }

    fn entries(&self) -> impl Iterator<Item = &SqlEntry> {
        self.sections.iter().flat_map(|s| s.entries.iter())
    }

    /// The file's text.
    fn render(&self) -> String {
        let mut out = comment(&format!(
            "Every SQL statement {engine} runs, generated from the code: do not edit. Each is \
             declared once in src/store (built from the transitions of src/store/transitions.rs) \
             and shown here expanded under its name and doc, laid out on lines: the text executed \
             is the same with each line break a space. $n are its parameters. Regenerate after \
             changing one (a test fails until then): {REGENERATE}\n\n\
             Composed at run time from a filter, not here: task lists and their counts \
             (src/store/listing.rs, reading {listed}), lease pages and counts \
             (src/store/leases.rs), audit feeds (src/store/reads.rs). Not here either: \
             {elsewhere}",
            engine = self.engine,
            listed = self.listed,
            elsewhere = self.elsewhere,
        ));
        for section in &self.sections {
            out.push_str(&format!("\n-- ==== {} ====\n", section.title));
            for e in &section.entries {
                out.push_str(&format!("\n-- name: {}\n", e.name));
                let doc: Vec<&str> = e.doc.lines().map(str::trim).collect();
                let doc = doc.join("\n").replace("[`", "").replace("`]", "");
                out.push_str(&comment(&doc.replace('`', "")));
                let shown = e.shown.trim_end();
                out.push_str(shown);
                out.push_str(if shown.ends_with(';') { "\n" } else { ";\n" });
            }
        }
        out
    }

    /// The committed file is what the code renders (or, with [`UPDATE_VAR`] set, becomes it).
    pub(crate) fn check_committed(&self) {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(self.path);
        let rendered = self.render();
        if std::env::var(UPDATE_VAR).is_ok_and(|v| v == "1") {
            std::fs::write(&path, &rendered).unwrap();
            eprintln!("wrote {}", path.display());
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != rendered {
            let line = committed
                .lines()
                .zip(rendered.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| committed.lines().count().min(rendered.lines().count()));
            panic!(
                "{} is stale (first difference at line {}): the statements changed. Regenerate it \
                 with `{REGENERATE}` and commit it.",
                self.path,
                line + 1
            );
        }
    }

    /// Each statement shown differs from the one executed only in whitespace, and the names
    /// are unique.
    pub(crate) fn check_layout(&self) {
        let mut names = std::collections::HashSet::new();
        for e in self.entries() {
            assert!(
                names.insert(e.name.as_str()),
                "two statements named {}",
                e.name
            );
            assert_eq!(
                layout::collapsed(&e.shown),
                layout::collapsed(&e.text),
                "{}: laid out, its text changed",
                e.name
            );
        }
    }

    /// Each statement uses `$1..$N`, none missing, and has a doc that names each `$n` it uses
    /// (alone, or in a range `$a..$b`).
    pub(crate) fn check_parameters(&self) {
        for e in self.entries() {
            assert!(!e.doc.trim().is_empty(), "{}: no doc comment", e.name);
            let used = layout::parameters(&e.text);
            let expected: Vec<usize> = (1..=used.len()).collect();
            assert_eq!(used, expected, "{}: its parameters are not $1..$N", e.name);
            let named = named_in_doc(&e.doc);
            for n in used {
                assert!(named.contains(&n), "{}: its doc does not name ${n}", e.name);
            }
        }
    }
}

/// `text` as `--` comment lines of at most [`layout::WIDTH`] columns (longer words alone), its
/// lines joined and its paragraphs (separated by an empty line) kept apart.
fn comment(text: &str) -> String {
    let mut out = String::new();
    for (i, paragraph) in text.split("\n\n").enumerate() {
        if i > 0 {
            out.push_str("--\n");
        }
        let mut line = String::from("--");
        for word in paragraph.split_whitespace() {
            if line.len() > 2 && line.len() + 1 + word.len() > layout::WIDTH {
                out.push_str(&line);
                out.push('\n');
                line = String::from("--");
            }
            line.push(' ');
            line.push_str(word);
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The parameters a doc names: `$n`, and every one of a range `$a..$b`.
fn named_in_doc(doc: &str) -> Vec<usize> {
    let number = |s: &str| -> Option<(usize, usize)> {
        let digits = s.chars().take_while(char::is_ascii_digit).count();
        s[..digits].parse().ok().map(|n| (n, digits))
    };
    let mut named = Vec::new();
    let mut rest = doc;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let Some((from, len)) = number(rest) else {
            continue;
        };
        rest = &rest[len..];
        match rest
            .strip_prefix("..$")
            .and_then(|r| number(r).map(|n| (r, n)))
        {
            Some((r, (to, len))) => {
                named.extend(from..=to);
                rest = &r[len..];
            }
            None => named.push(from),
        }
    }
    named
}

#[test]
fn a_doc_names_parameters_alone_and_in_ranges() {
    assert_eq!(
        named_in_doc("`$1..$3` the task, `$12` now, `$4`/`$5` bounds"),
        vec![1, 2, 3, 12, 4, 5]
    );
}

/// `sql_file_tests!(file)`: an engine's three tests of its committed file, `file` the function
/// that describes it: the file is current, laid out with only whitespace changed, and its
/// parameters numbered without gaps and documented.
macro_rules! sql_file_tests {
    ($file:path) => {
        #[test]
        fn the_committed_file_is_current() {
            $file().check_committed();
        }

        #[test]
        fn laid_out_only_whitespace_changes() {
            $file().check_layout();
        }

        #[test]
        fn parameters_are_numbered_without_gaps_and_documented() {
            $file().check_parameters();
        }
    };
}
pub(crate) use sql_file_tests;
