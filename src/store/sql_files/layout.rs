//! How the committed `.sql` files lay a statement out: a line break before each clause keyword of
//! the statement's own level (not inside parentheses or quotes), after each comma of a `SET` list
//! and after a `;` that ends one statement of several; then a line longer than [`WIDTH`] wraps
//! after a comma or before `AND`/`OR`. Only whitespace changes: the text executed is the same
//! with each line break a space.

/// The width a line wraps at (when it can).
pub(super) const WIDTH: usize = 100;

/// The clause keywords a line starts with; `ORDER`, `GROUP` and `ON` only before `BY`, `BY` and
/// `CONFLICT`.
const CLAUSES: [&str; 9] = [
    "SELECT",
    "FROM",
    "WHERE",
    "SET",
    "VALUES",
    "RETURNING",
    "ORDER BY",
    "GROUP BY",
    "ON CONFLICT",
];

/// A piece of SQL text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Space(&'a str),
    Word(&'a str),
    /// A quoted literal or identifier, its quotes included.
    Quoted(&'a str),
    Punct(&'a str),
    /// `--` and the rest of its line.
    Comment(&'a str),
}

impl<'a> Token<'a> {
    fn text(self) -> &'a str {
        match self {
            Token::Space(s)
            | Token::Word(s)
            | Token::Quoted(s)
            | Token::Punct(s)
            | Token::Comment(s) => s,
        }
    }
}

fn tokens(text: &str) -> Vec<Token<'_>> {
    let word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '$' | '.');
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let comment = rest.starts_with("--");
        let len = if comment {
            rest.find('\n').unwrap_or(rest.len())
        } else if c.is_whitespace() {
            rest.find(|c: char| !c.is_whitespace())
                .unwrap_or(rest.len())
        } else if word(c) {
            rest.find(|c: char| !word(c)).unwrap_or(rest.len())
        } else if c == '\'' || c == '"' {
            // Up to the closing quote; a doubled quote stays inside.
            let mut end = 1;
            loop {
                match rest[end..].find(c) {
                    Some(at) if rest[end + at + 1..].starts_with(c) => end += at + 2,
                    Some(at) => break end + at + 1,
                    None => break rest.len(),
                }
            }
        } else {
            c.len_utf8()
        };
        let (piece, tail) = rest.split_at(len);
        out.push(if comment {
            Token::Comment(piece)
        } else if c.is_whitespace() {
            Token::Space(piece)
        } else if word(c) {
            Token::Word(piece)
        } else if c == '\'' || c == '"' {
            Token::Quoted(piece)
        } else {
            Token::Punct(piece)
        });
        rest = tail;
    }
    out
}

/// Whether a clause keyword ([`CLAUSES`]) starts at token `i`.
fn starts_clause(toks: &[Token<'_>], i: usize) -> bool {
    let word = |i: usize| match toks.get(i) {
        Some(Token::Word(w)) => Some(*w),
        _ => None,
    };
    let Some(first) = word(i) else {
        return false;
    };
    let two = match (toks.get(i + 1), word(i + 2)) {
        (Some(Token::Space(_)), Some(second)) => format!("{first} {second}"),
        _ => String::new(),
    };
    CLAUSES.contains(&first) || CLAUSES.contains(&two.as_str())
}

/// One laid-out line: its indentation (past the statement's own), and its pieces, each with the
/// depth in parentheses it may wrap at (a space after a comma or before `AND`/`OR`).
struct Line {
    indent: usize,
    pieces: Vec<(String, Option<usize>)>,
}

/// `text` laid out. Its first line starts at column `first` (after whatever precedes it there);
/// the others at column `base` and their own indentation. A `set_list` is the list after a `SET`
/// (a statement given from its middle, as `step_many.sql` writes one in).
pub(super) fn lay_out(text: &str, first: usize, base: usize, set_list: bool) -> String {
    let toks = tokens(text.trim());
    let word_at = |i: usize| match toks.get(i) {
        Some(Token::Word(w)) => Some(*w),
        _ => None,
    };
    // A set list's first line is one of its items, indented as the others are.
    let mut lines = vec![Line {
        indent: if set_list { 4 } else { 0 },
        pieces: Vec::new(),
    }];
    let (mut depth, mut in_set, mut started, mut last_word) = (0usize, set_list, false, "");
    for (i, tok) in toks.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|j| toks.get(j)).copied();
        if let Token::Space(s) = tok {
            let next = word_at(i + 1).unwrap_or_default();
            let new_clause = started
                && starts_clause(&toks, i + 1)
                && !(next == "FROM" && last_word == "DELETE");
            let indent = if depth > 0 {
                None
            } else if new_clause || before == Some(Token::Punct(";")) {
                Some(0)
            } else if before == Some(Token::Punct(",")) && in_set {
                Some(4)
            } else {
                None
            };
            match indent {
                Some(indent) => lines.push(Line {
                    indent,
                    pieces: Vec::new(),
                }),
                None => {
                    let wraps = (before == Some(Token::Punct(",")) || matches!(next, "AND" | "OR"))
                        && depth <= 1;
                    if let Some(line) = lines.last_mut() {
                        line.pieces.push(((*s).to_owned(), wraps.then_some(depth)));
                    }
                }
            }
            continue;
        }
        match tok {
            Token::Punct("(") => depth += 1,
            Token::Punct(")") => depth = depth.saturating_sub(1),
            Token::Punct(";") if depth == 0 => (started, in_set) = (false, false),
            Token::Word(w) if depth == 0 => {
                match *w {
                    "SET" => in_set = true,
                    "SELECT" | "FROM" | "WHERE" | "VALUES" | "RETURNING" => in_set = false,
                    _ => {}
                }
                (started, last_word) = (true, w);
            }
            _ => {}
        }
        if let Some(line) = lines.last_mut() {
            line.pieces.push((tok.text().to_owned(), None));
        }
    }
    let mut out = String::new();
    for (n, line) in lines.into_iter().enumerate() {
        let column = if n == 0 { first } else { base + line.indent };
        let wrapped = wrap(line.pieces, column, base + line.indent + 4);
        for (k, text) in wrapped.into_iter().enumerate() {
            if n > 0 || k > 0 {
                out.push('\n');
                let at = if k == 0 {
                    column
                } else {
                    base + line.indent + 4
                };
                out.push_str(&" ".repeat(at));
            }
            out.push_str(&text);
        }
    }
    out
}

/// A line's pieces as one or more lines, the first from `column`, the others from `next`: while
/// what is left is longer than [`WIDTH`], it breaks at the last space it may wrap at that fits,
/// of those the least deep in parentheses (or at its first, if none fits).
fn wrap(pieces: Vec<(String, Option<usize>)>, column: usize, next: usize) -> Vec<String> {
    let joined = |pieces: &[(String, Option<usize>)]| -> String {
        pieces.iter().map(|(p, _)| p.as_str()).collect()
    };
    let mut lines = Vec::new();
    let (mut rest, mut column) = (pieces, column);
    loop {
        let width: usize = rest.iter().map(|(p, _)| p.len()).sum();
        // (index, depth, whether the line up to it fits) of each space it may wrap at.
        let mut spaces = Vec::new();
        let mut so_far = column;
        for (i, (piece, wraps)) in rest.iter().enumerate() {
            if let Some(depth) = *wraps {
                spaces.push((i, depth, so_far <= WIDTH));
            }
            so_far += piece.len();
        }
        let best = spaces
            .iter()
            .filter(|(_, _, fits)| *fits)
            .min_by_key(|(i, depth, _)| (*depth, std::cmp::Reverse(*i)))
            .or(spaces.first());
        match best {
            Some((i, _, _)) if column + width > WIDTH => {
                let tail = rest.split_off(i + 1);
                rest.pop();
                lines.push(joined(&rest));
                (rest, column) = (tail, next);
            }
            _ => {
                lines.push(joined(&rest));
                return lines;
            }
        }
    }
}

/// A statement laid out in place of its mark in `step_many.sql`: `before` is the text before the
/// mark on its line (its indentation, and `UPDATE tasks SET` before a `SET` list).
pub(crate) fn lay_out_mark(statement: &str, before: &str) -> String {
    let base = before.len() - before.trim_start().len();
    lay_out(
        statement,
        before.len(),
        base,
        before.trim_end().ends_with("SET"),
    )
}

/// The parameters `$n` a text uses (outside quotes and `--` comments), each once, in order.
pub(super) fn parameters(text: &str) -> Vec<usize> {
    let mut found = std::collections::BTreeSet::new();
    for tok in tokens(text) {
        if let Token::Word(w) = tok {
            found.extend(numbered(w));
        }
    }
    found.into_iter().collect()
}

/// The numbers of the `$n` in a word (`$1`, `$1::text`, `v.$2`).
fn numbered(word: &str) -> Vec<usize> {
    word.split('$')
        .skip(1)
        .filter_map(|s| {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// The text with every run of whitespace one space: what layout leaves unchanged.
pub(super) fn collapsed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn parameters_are_read_outside_quotes_and_comments() {
    let text = "SELECT '$3', \"$5\" -- $4 isn't one\n FROM t WHERE a = $2::text AND b = v.$1 $$";
    assert_eq!(parameters(text), vec![1, 2]);
}

#[test]
fn a_statement_breaks_before_its_clauses_and_after_its_set_items() {
    let text = "UPDATE t SET a = 1, b = (SELECT x FROM u WHERE y = ';') WHERE id = $1 RETURNING a";
    assert_eq!(
        lay_out(text, 0, 0, false),
        "UPDATE t\nSET a = 1,\n    b = (SELECT x FROM u WHERE y = ';')\nWHERE id = $1\nRETURNING a"
    );
    assert_eq!(
        lay_out("DELETE FROM t WHERE a = 1; SELECT changes()", 0, 0, false),
        "DELETE FROM t\nWHERE a = 1;\nSELECT changes()"
    );
}

#[test]
fn a_long_line_wraps_at_its_shallowest_place_that_fits() {
    let text = format!("SELECT {} FROM t", ["column_name"; 12].join(", "));
    let laid = lay_out(&text, 0, 0, false);
    assert!(laid.lines().all(|l| l.len() <= WIDTH), "{laid}");
    assert_eq!(collapsed(&laid), text);
}
