//! A Rust file split into its code, its comments and its literals: enough to read paths and
//! words from it (no parser: macros are not expanded, `cfg`s are not evaluated).

/// One Rust file, read. Every text keeps the source's bytes at their places (what is left out
/// becomes spaces, one per byte; line breaks stay), so a position in one is one in the others.
pub struct Lexed {
    /// The code: comments, string and character literals blanked (a string keeps its quotes).
    pub code: String,
    /// The code with its string literals as written (comments and characters blanked).
    pub with_strings: String,
    /// Each comment (doc comments too), with the line it starts on (1-based).
    pub comments: Vec<(usize, String)>,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

pub fn lex(source: &str) -> Lexed {
    let s: Vec<char> = source.chars().collect();
    // Which characters each text leaves out.
    let mut code = vec![false; s.len()];
    let mut with_strings = vec![false; s.len()];
    let mut comments = Vec::new();
    let blank = |out: &mut Vec<bool>, from: usize, to: usize| {
        for left_out in &mut out[from..to] {
            *left_out = true;
        }
    };
    let line_at = |i: usize| s[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let mut i = 0;
    while i < s.len() {
        let next = s.get(i + 1).copied();
        if s[i] == '/' && next == Some('/') {
            let end = s[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(s.len(), |n| i + n);
            comments.push((line_at(i), s[i..end].iter().collect()));
            blank(&mut code, i, end);
            blank(&mut with_strings, i, end);
            i = end;
        } else if s[i] == '/' && next == Some('*') {
            let (mut depth, mut j) = (0usize, i);
            while j < s.len() {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            let end = j.min(s.len());
            comments.push((line_at(i), s[i..end].iter().collect()));
            blank(&mut code, i, end);
            blank(&mut with_strings, i, end);
            i = end;
        } else if s[i] == 'r' && matches!(next, Some('"') | Some('#')) && opens_literal(&s, i) {
            // r"…", r#"…"#, br#"…"#: no escapes; ends at a quote followed by as many hashes.
            let hashes = s[i + 1..].iter().take_while(|&&c| c == '#').count();
            let open = i + 1 + hashes;
            if s.get(open) != Some(&'"') {
                i += 1;
                continue;
            }
            let mut j = open + 1;
            let end = loop {
                if j >= s.len() {
                    break s.len();
                }
                if s[j] == '"'
                    && s[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == '#')
                        .count()
                        == hashes
                {
                    break j;
                }
                j += 1;
            };
            blank(&mut code, open + 1, end);
            i = (end + 1 + hashes).min(s.len());
        } else if s[i] == '"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            let end = j.min(s.len());
            blank(&mut code, i + 1, end);
            i = end + 1;
        } else if s[i] == '\'' && opens_literal(&s, i) {
            // A character literal ('a', '\n', '\'', '\u{1F600}'), or a lifetime or label ('a).
            let end = if next == Some('\\') {
                s[i + 3..]
                    .iter()
                    .position(|&c| c == '\'')
                    .map(|n| i + 3 + n)
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut code, i + 1, end);
                    blank(&mut with_strings, i + 1, end);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    let text = |left_out: Vec<bool>| -> String {
        let mut out = String::with_capacity(source.len());
        for (&c, gone) in s.iter().zip(left_out) {
            match c {
                '\n' => out.push('\n'),
                c if gone => out.extend(std::iter::repeat_n(' ', c.len_utf8())),
                c => out.push(c),
            }
        }
        out
    };
    Lexed {
        code: text(code),
        with_strings: text(with_strings),
        comments,
    }
}

/// Whether the `r` or quote at `i` opens a literal (`r"…"`, `'x'`) rather than ending a name
/// (`for`, `it's`): a `b` before it (`br"…"`, `b'x'`) belongs to the literal.
fn opens_literal(s: &[char], i: usize) -> bool {
    match i.checked_sub(1).map(|b| s[b]) {
        None => true,
        Some('b') => i < 2 || !is_ident(s[i - 2]),
        Some(b) => !is_ident(b),
    }
}

/// The byte ranges of the items `#[cfg(test)]` marks (a test module, a test-only function or
/// import), in `code` as [`lex`] leaves it.
pub fn test_only(code: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut from = 0;
    while let Some(n) = code[from..].find("#[cfg(test)]") {
        let start = from + n;
        let mut i = start + "#[cfg(test)]".len();
        let bytes = code.as_bytes();
        // The item ends at its first `;` outside braces, or where its first brace closes; its
        // other attributes (`#[…]`, brackets nested) come first.
        let mut depth = 0usize;
        while i < bytes.len() {
            match bytes[i] {
                b'#' if depth == 0 && bytes.get(i + 1) == Some(&b'[') => {
                    let mut brackets = 0usize;
                    while i < bytes.len() {
                        match bytes[i] {
                            b'[' => brackets += 1,
                            b']' => {
                                brackets -= 1;
                                if brackets == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                }
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        ranges.push((start, i));
        from = i;
    }
    ranges
}
