//! The corpus (`fuzz_corpus/*.json`: every input that ever failed, replayed first on every run)
//! and the TEMPORARY list of known defects: a finding whose requests match one of them is
//! counted, not failed. Each entry names a defect being fixed elsewhere; the list goes (and the
//! corpus then pins every fix) once those fixes are in.

use std::path::PathBuf;

use serde::Deserialize;

use super::fuzz_surfaces::FReq;

/// One corpus file: the requests of one failure, in order, and the statuses the contract gives
/// some of them (`[index, status]`); every request is also held to the fuzzer's own checks.
#[derive(Deserialize)]
pub struct Entry {
    #[serde(default)]
    pub note: String,
    pub requests: Vec<FReq>,
    #[serde(default)]
    pub expect: Vec<(usize, u16)>,
}

pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/adversarial/fuzz_corpus")
}

/// Every corpus entry, by file name.
pub fn corpus() -> Vec<(String, Entry)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("the fuzz corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a corpus file");
            let entry: Entry = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not a corpus entry: {e}", p.display()));
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, entry)
        })
        .collect()
}

/// The deepest nesting of arrays and objects in a JSON text (strings skipped).
pub fn depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_str, mut escaped) = (0usize, 0, false, false);
    for b in text.bytes() {
        if in_str {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn has_non_ascii(s: &str) -> bool {
    !s.is_ascii()
        || ["%C", "%D", "%E", "%F", "%c", "%d", "%e", "%f"]
            .iter()
            .any(|p| s.contains(p))
}

/// Whether a request has a defect's signature.
type Signature = fn(&FReq) -> bool;

/// TEMPORARY: defects being fixed on other branches, as signatures over the requests of a
/// failure (the batch, or everything sent to this server so far for one that poisons a
/// listing). Remove at merge.
pub const KNOWN: &[(&str, Signature)] = &[
    ("depth bomb (a value nested past the limit)", |r| {
        r.body.as_deref().is_some_and(|b| depth(b) > 64)
    }),
    ("the facade's reserved metadata key on a native send", |r| {
        let line = r.line();
        line.contains("urn:a2a-mailbox:v1:a2a")
    }),
    ("a non-ASCII timestamp", |r| {
        let line = r.line();
        line.contains("statusTimestampAfter") && has_non_ascii(&line)
    }),
    ("NUL in a form with an upper-case Content-Type", |r| {
        let ct = r.content_type.as_deref().unwrap_or_default();
        ct.to_ascii_lowercase()
            .starts_with("application/x-www-form-urlencoded")
            && !ct.starts_with("application/x-www-form-urlencoded")
    }),
    ("the dashboard search's created minutes overflow", |r| {
        r.path.starts_with("/dashboard/tasks?") && r.path.contains("created=")
    }),
    ("a JWT with a crit header", |r| r.token == "crit"),
];

/// The known defect a failure of these requests is, if any.
pub fn known<'a>(requests: impl IntoIterator<Item = &'a FReq>) -> Option<&'static str> {
    let requests: Vec<&FReq> = requests.into_iter().collect();
    KNOWN
        .iter()
        .find(|(_, sig)| requests.iter().any(|r| sig(r)))
        .map(|(name, _)| *name)
}
