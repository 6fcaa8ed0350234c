//! The crate's file-level import graph: an edge from one file of `src/` to another for each path
//! in its code that names the other (`use crate::a::b`, `use super::…`, `use child::…`,
//! `crate::x::y(…)` in code). A path resolves to the file of the deepest module it names (an item
//! resolves to its module's file); `mod` declarations are not edges.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::lex::lex;

/// One edge's first occurrence: the line and the path as written.
pub type Why = (usize, String);

/// From each file (relative to `src/`) to the files it imports, each with its first reason.
pub type Graph = BTreeMap<String, BTreeMap<String, Why>>;

/// A file's module path (`http/dashboard/mod.rs` → `http::dashboard`); `lib.rs` is the root.
fn module_of(file: &str) -> Vec<String> {
    let stem = file.trim_end_matches(".rs");
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    if stem == "lib" {
        return Vec::new();
    }
    stem.split('/').map(str::to_owned).collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The import graph of the crate whose sources are `src` (every `.rs` file but `main.rs`, the
/// binary, a crate of its own).
pub fn graph(src: &Path, files: &[String]) -> Graph {
    let files: Vec<&String> = files.iter().filter(|f| f.as_str() != "main.rs").collect();
    let modules: HashMap<Vec<String>, String> =
        files.iter().map(|f| (module_of(f), (*f).clone())).collect();
    let mut graph = Graph::new();
    for file in files {
        let source = std::fs::read_to_string(src.join(file)).unwrap_or_default();
        let code = lex(&source).code;
        let edges = graph.entry(file.clone()).or_default();
        for (at, path, inline) in paths(&code) {
            let line = code[..at].matches('\n').count() + 1;
            let Some(target) = resolve(&modules, file, &inline, &path, &code) else {
                continue;
            };
            if &target != file {
                edges.entry(target).or_insert((line, path.join("::")));
            }
        }
    }
    graph
}

/// Each path in `code` that may name a module of the crate, with where it is and the inline
/// modules (`mod tests { … }`) it sits in: the paths a `use` tree spells, each expanded, and
/// every other `a::b…` of the code.
fn paths(code: &str) -> Vec<(usize, Vec<String>, Vec<String>)> {
    let tokens = tokens(code);
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let (at, ref tok) = tokens[i];
        let names = |inline: &Vec<(String, usize)>| inline.iter().map(|(n, _)| n.clone()).collect();
        match tok.as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if tokens.get(i + 2).is_some_and(|(_, t)| t == "{") => {
                inline.push((tokens[i + 1].1.clone(), depth));
                i += 2;
                continue;
            }
            "mod" => i += 1,
            "use" => {
                let end = tokens[i..]
                    .iter()
                    .position(|(_, t)| t == ";")
                    .map_or(tokens.len(), |n| i + n);
                let mut pos = i + 1;
                let mut expanded = Vec::new();
                use_tree(&tokens[..end], &mut pos, Vec::new(), &mut expanded);
                out.extend(expanded.into_iter().map(|p| (at, p, names(&inline))));
                i = end;
                continue;
            }
            t if t.starts_with(|c: char| is_ident(c) || c == '$')
                && tokens.get(i + 1).is_some_and(|(_, t)| t == "::")
                && (i == 0 || tokens[i - 1].1 != "::") =>
            {
                let mut path = vec![t.to_owned()];
                let mut j = i + 1;
                while tokens.get(j).is_some_and(|(_, t)| t == "::")
                    && tokens
                        .get(j + 1)
                        .is_some_and(|(_, t)| t.starts_with(is_ident))
                {
                    path.push(tokens[j + 1].1.clone());
                    j += 2;
                }
                out.push((at, path, names(&inline)));
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `code` as tokens, each with its byte offset: names (`$crate` one), `::`, and every other
/// character on its own.
fn tokens(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if is_ident(c) || c == '$' {
            let mut word = c.to_string();
            while let Some(&(_, n)) = chars.peek().filter(|(_, n)| is_ident(*n)) {
                word.push(n);
                chars.next();
            }
            out.push((at, word));
        } else if c == ':' && chars.peek().is_some_and(|(_, n)| *n == ':') {
            chars.next();
            out.push((at, "::".to_owned()));
        } else if !c.is_whitespace() {
            out.push((at, c.to_string()));
        }
    }
    out
}

/// Expands the `use` tree at `pos` (`a::{b, c::{self, d}}`, `e as f`, `g::*`) into its paths.
fn use_tree(
    tokens: &[(usize, String)],
    pos: &mut usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    while let Some((_, tok)) = tokens.get(*pos) {
        *pos += 1;
        match tok.as_str() {
            "::" => {}
            "{" => {
                loop {
                    use_tree(tokens, pos, prefix.clone(), out);
                    match tokens.get(*pos).map(|(_, t)| t.as_str()) {
                        Some(",") => *pos += 1,
                        Some("}") => {
                            *pos += 1;
                            break;
                        }
                        _ => break,
                    }
                }
                return;
            }
            "*" => {
                out.push(prefix);
                return;
            }
            name if name.starts_with(|c: char| is_ident(c) || c == '$') => {
                prefix.push(name.to_owned());
                if tokens.get(*pos).is_some_and(|(_, t)| t == "as") {
                    *pos += 2;
                }
                if tokens.get(*pos).is_none_or(|(_, t)| t != "::") {
                    out.push(prefix);
                    return;
                }
            }
            _ => {
                // `,` or `}`: the caller's.
                *pos -= 1;
                if !prefix.is_empty() {
                    out.push(prefix);
                }
                return;
            }
        }
    }
}

/// The file a path names, seen from `file` inside its inline modules `inline`, if it names one of
/// the crate's.
fn resolve(
    modules: &HashMap<Vec<String>, String>,
    file: &str,
    inline: &[String],
    path: &[String],
    code: &str,
) -> Option<String> {
    let here: Vec<String> = module_of(file)
        .into_iter()
        .chain(inline.iter().cloned())
        .collect();
    let first = path.first()?.as_str();
    let mut rest = path.iter().skip(1).peekable();
    let mut base = match first {
        "crate" | "$crate" => Vec::new(),
        "self" => here,
        "super" => {
            let mut up = here;
            up.pop()?;
            while rest.next_if(|s| *s == "super").is_some() {
                up.pop()?;
            }
            up
        }
        // A child module, declared here (`mod child;`): `use child::item`, `child::f()`.
        child if inline.is_empty() && declares(code, child) => {
            let mut base = module_of(file);
            base.push(child.to_owned());
            base
        }
        _ => return None,
    };
    base.extend(rest.filter(|s| *s != "self").cloned());
    (0..=base.len())
        .rev()
        .find_map(|n| modules.get(&base[..n]).cloned())
}

/// Whether `code` declares a module `name` (`mod name;`, `pub(crate) mod name {`).
fn declares(code: &str, name: &str) -> bool {
    let words: Vec<&str> = code
        .split(|c: char| !is_ident(c))
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).any(|w| w == ["mod", name])
}

/// The strongly connected components of `graph` with more than one file: its import circles.
pub fn circles(graph: &Graph) -> Vec<BTreeSet<String>> {
    // Tarjan's algorithm.
    struct State<'g> {
        graph: &'g Graph,
        index: HashMap<&'g str, usize>,
        low: HashMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flat_map(|e| e.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found.sort();
    s.found
}
