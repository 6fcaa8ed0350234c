//! Where a file's code names a database engine: `sqlite`, `postgres`, `Sqlite`, `Postgres`, `Pg`,
//! `pg_`, as a word or a part of one (`is_sqlite`, `PgPool`, `a2a_pg_batches`), in names and in
//! string literals. Comments, `#[cfg(test)]` items and documentation (`#[doc = "…"]`, an
//! attribute's `description = "…"` or `summary = "…"`) do not count.

use super::lex::{lex, test_only};

/// A word, with what may not come right before it (a letter of the same case would make it the
/// inside of another word: `mysqlite`, `jpg_`, `UPg`) and whether a lowercase letter may follow
/// it (`Pgxyz` is not `Pg`).
struct Word {
    text: &'static str,
    inside: fn(char) -> bool,
    lower_after: bool,
}

const WORDS: [Word; 6] = [
    Word {
        text: "sqlite",
        inside: is_lower,
        lower_after: true,
    },
    Word {
        text: "postgres",
        inside: is_lower,
        lower_after: true,
    },
    Word {
        text: "pg_",
        inside: is_lower,
        lower_after: true,
    },
    Word {
        text: "Sqlite",
        inside: is_upper,
        lower_after: true,
    },
    Word {
        text: "Postgres",
        inside: is_upper,
        lower_after: true,
    },
    Word {
        text: "Pg",
        inside: is_upper,
        lower_after: false,
    },
];

fn is_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_upper(c: char) -> bool {
    c.is_ascii_uppercase()
}

/// Each line of `source`'s code that names an engine: its number and the word.
pub fn named(source: &str) -> Vec<(usize, &'static str)> {
    let lexed = lex(source);
    let mut text: Vec<u8> = lexed.with_strings.into_bytes();
    let mut blank = |from: usize, to: usize| {
        for b in &mut text[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    for (from, to) in test_only(&lexed.code) {
        blank(from, to);
    }
    for (from, to) in documentation(&lexed.code) {
        blank(from, to);
    }
    let text = String::from_utf8_lossy(&text);
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for word in &WORDS {
            let hit = line.match_indices(word.text).any(|(at, _)| {
                let before = line[..at].chars().next_back();
                let after = line[at + word.text.len()..].chars().next();
                !before.is_some_and(word.inside)
                    && (word.lower_after || !after.is_some_and(is_lower))
            });
            if hit {
                found.push((n + 1, word.text));
            }
        }
    }
    found
}

/// The byte ranges of `code` that document rather than do: `#[doc …]` attributes whole, and the
/// string after `description =` or `summary =` in any other attribute.
fn documentation(code: &str) -> Vec<(usize, usize)> {
    let bytes = code.as_bytes();
    let mut ranges = Vec::new();
    let mut from = 0;
    while let Some(n) = code[from..].find('#') {
        let start = from + n;
        let open = start + 1 + usize::from(bytes.get(start + 1) == Some(&b'!'));
        from = start + 1;
        if bytes.get(open) != Some(&b'[') {
            continue;
        }
        let mut depth = 0usize;
        let mut end = open;
        while end < bytes.len() {
            match bytes[end] {
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
        let attribute = &code[open + 1..end];
        if attribute.trim_start().starts_with("doc") {
            ranges.push((start, end));
        } else {
            // The code keeps each string's quotes: pair them.
            let quotes: Vec<usize> = attribute
                .match_indices('"')
                .map(|(i, _)| open + 1 + i)
                .collect();
            for pair in quotes.chunks(2) {
                if let [q1, q2] = pair {
                    let key = code[open + 1..*q1].trim_end_matches(['r', '#']).trim_end();
                    let key = key.strip_suffix('=').unwrap_or("").trim_end();
                    if key.ends_with("description") || key.ends_with("summary") {
                        ranges.push((*q1, *q2));
                    }
                }
            }
        }
        from = end.max(from);
    }
    ranges
}
