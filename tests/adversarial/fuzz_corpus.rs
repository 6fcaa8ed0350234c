//! The corpus (`fuzz_corpus/*.json`): every input that ever failed, replayed first on every run,
//! each a fixed case with the statuses the contract gives it.

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
