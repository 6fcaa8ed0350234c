//! The fuzzer's raw material: a small seeded PRNG, and random text, JSON text (of any shape and
//! depth, with numbers no `f64` holds and escapes no Rust string holds), query strings, form
//! bodies and header values, each biased towards the values that break parsers.

use serde_json::Value;

use super::fuzz_values::*;
use super::kit::enc;

/// SplitMix64: small, seedable, and the same sequence on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True `pct` times in a hundred.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }

    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// Random text of up to `max` pieces.
pub fn text(rng: &mut Rng, max: usize) -> String {
    if rng.chance(30) {
        return (*rng.pick(WORDS)).to_owned();
    }
    if rng.chance(3) {
        return rng.pick(CHARS).repeat(3000 + rng.below(70_000));
    }
    let n = rng.below(max + 1);
    (0..n).map(|_| *rng.pick(CHARS)).collect()
}

/// A JSON string literal (quotes included), possibly holding escapes no Rust string can.
pub fn json_string(rng: &mut Rng) -> String {
    let mut out = Value::String(text(rng, 12)).to_string();
    if rng.chance(25) {
        let at = 1 + rng.below(out.len() - 1);
        if out.is_char_boundary(at) && !out[..at].ends_with('\\') {
            let escape = *rng.pick(ESCAPES);
            out.insert_str(at, escape);
        }
    }
    out
}

/// A random JSON text of at most `depth` levels (before any bomb).
pub fn json(rng: &mut Rng, depth: usize) -> String {
    if rng.chance(6) {
        let n = *rng.pick(DEPTHS);
        let inner = json(rng, 1);
        return nest(n, rng.chance(50), &inner);
    }
    if depth == 0 || rng.chance(45) {
        return match rng.below(6) {
            0 => "null".into(),
            1 => if rng.chance(50) { "true" } else { "false" }.into(),
            2 | 3 => (*rng.pick(NUMBERS)).to_owned(),
            _ => json_string(rng),
        };
    }
    let n = rng.below(4);
    if rng.chance(50) {
        let items: Vec<String> = (0..n).map(|_| json(rng, depth - 1)).collect();
        format!("[{}]", items.join(","))
    } else {
        let items: Vec<String> = (0..n)
            .map(|_| {
                let key = if rng.chance(40) {
                    Value::String((*rng.pick(KEYS)).into()).to_string()
                } else {
                    json_string(rng)
                };
                format!("{key}:{}", json(rng, depth - 1))
            })
            .collect();
        format!("{{{}}}", items.join(","))
    }
}

/// `inner` inside `n` arrays (or objects).
pub fn nest(n: usize, arrays: bool, inner: &str) -> String {
    let (open, close) = if arrays { ("[", "]") } else { ("{\"a\":", "}") };
    format!("{}{inner}{}", open.repeat(n), close.repeat(n))
}

/// A placeholder a template carries where a mutation puts raw JSON text.
const HOLE: &str = "\u{1}hole\u{1}";

/// Mutates a JSON template: replaces one of its values by random JSON text, drops or adds a
/// key, truncates the text, or leaves it alone. Returns JSON text (often not valid JSON).
pub fn mutate(rng: &mut Rng, template: &Value) -> String {
    let mut v = template.clone();
    match rng.below(10) {
        0 => return json(rng, 4),
        1 => {
            let t = v.to_string();
            let mut at = rng.below(t.len() + 1);
            while !t.is_char_boundary(at) {
                at -= 1;
            }
            return t[..at].to_owned();
        }
        2 => return v.to_string(),
        _ => {}
    }
    let slot = random_slot(rng, &mut v);
    match rng.below(4) {
        0 => {
            if let Some(o) = slot.as_object_mut() {
                if let Some(k) = o.keys().nth(rng.below(o.len().max(1))).cloned() {
                    o.remove(&k);
                }
                return v.to_string();
            }
            *slot = Value::String(HOLE.into());
        }
        1 => {
            if let Some(o) = slot.as_object_mut() {
                o.insert((*rng.pick(KEYS)).to_owned(), Value::String(HOLE.into()));
            } else {
                *slot = Value::String(HOLE.into());
            }
        }
        _ => *slot = Value::String(HOLE.into()),
    }
    let hole = Value::String(HOLE.into()).to_string();
    v.to_string().replacen(&hole, &json(rng, 5), 1)
}

/// A random node of `v` (the root included).
fn random_slot<'a>(rng: &mut Rng, v: &'a mut Value) -> &'a mut Value {
    if !rng.chance(70) {
        return v;
    }
    let n = match &*v {
        Value::Object(o) => o.len(),
        Value::Array(a) => a.len(),
        _ => 0,
    };
    if n == 0 {
        return v;
    }
    let i = rng.below(n);
    match v {
        Value::Object(o) => {
            let child = o.values_mut().nth(i).expect("an index below the length");
            random_slot(rng, child)
        }
        Value::Array(a) => random_slot(rng, &mut a[i]),
        _ => unreachable!("a scalar has no children"),
    }
}

/// `template` with one free-form value (a `"${payload}"` string in it) replaced by random JSON
/// text: what a store keeps and hands back, so it must be read back by every listing.
pub fn payload(rng: &mut Rng, template: &Value) -> String {
    let hole = Value::String("${payload}".into()).to_string();
    template.to_string().replace(&hole, &json(rng, 6))
}

/// A query string (with its `?`) over `names` and a few random names; values percent-encoded
/// as a browser would, or raw with broken escapes.
pub fn query(rng: &mut Rng, names: &[&str]) -> String {
    let n = rng.below(4);
    if n == 0 {
        return String::new();
    }
    let pairs: Vec<String> = (0..n)
        .map(|_| {
            let name = if names.is_empty() || rng.chance(15) {
                text(rng, 4).chars().take(300).collect()
            } else {
                (*rng.pick(names)).to_owned()
            };
            // Long enough to pass any sane limit, short enough for the client to send.
            let value: String = match rng.chance(40) {
                true => (*rng.pick(WORDS)).to_owned(),
                false => text(rng, 6).chars().take(3000).collect(),
            };
            if rng.chance(15) {
                format!("{name}={value}")
            } else {
                format!("{}={}", enc(&name), enc(&value))
            }
        })
        .collect();
    format!("?{}", pairs.join("&"))
}

/// A form body over `fields` (some values random, some names random).
pub fn form_body(rng: &mut Rng, fields: &[(&str, &str)]) -> String {
    let mut pairs: Vec<String> = Vec::new();
    for (k, v) in fields {
        if rng.chance(10) {
            continue;
        }
        let v = if rng.chance(30) {
            text(rng, 8)
        } else {
            (*v).to_owned()
        };
        pairs.push(format!("{}={}", enc(k), enc(&v)));
    }
    if rng.chance(30) {
        pairs.push(format!("{}={}", enc(&text(rng, 4)), enc(&text(rng, 6))));
    }
    if rng.chance(15) {
        pairs.push(format!(
            "{}=%00{}",
            enc(rng.pick(fields).0),
            *rng.pick(WORDS)
        ));
    }
    pairs.join("&")
}

/// A Content-Type for a JSON body: case variants, `+json`, charsets, wrong types, or none.
pub fn json_media(rng: &mut Rng) -> Option<String> {
    const M: &[&str] = &[
        "application/json",
        "APPLICATION/JSON",
        "Application/Json; charset=utf-8",
        "application/json; charset=UTF-16",
        "application/json;charset=\"utf-8\"",
        "application/a2a+json",
        "application/vnd.x+json",
        "text/plain",
        "text/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; foo",
        "*/*",
        "",
    ];
    if rng.chance(70) {
        return Some("application/json".into());
    }
    if rng.chance(10) {
        return None;
    }
    Some((*rng.pick(M)).into())
}

/// A Content-Type for a form body.
pub fn form_media(rng: &mut Rng) -> Option<String> {
    const M: &[&str] = &[
        "application/x-www-form-urlencoded",
        "APPLICATION/X-WWW-FORM-URLENCODED",
        "Application/X-Www-Form-Urlencoded; charset=UTF-8",
        "application/x-www-form-urlencoded; charset=latin1",
        "application/json",
        "text/plain",
    ];
    if rng.chance(60) {
        return Some(M[0].into());
    }
    if rng.chance(10) {
        return None;
    }
    Some((*rng.pick(M)).into())
}
