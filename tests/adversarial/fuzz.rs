//! The generative fuzzer: random and mutated requests on every surface (`fuzz_surfaces.rs`)
//! from every kind of token, against the real server on both engines. Each request is judged
//! alone (no 5xx but 503, no dropped connection; a sampled refusal must change nothing), and
//! after each batch every listing, the queue snapshot and a lease must still answer, the
//! mailbox must keep the property test's invariants, and now and then a case of the property
//! test runs against its model (`fuzz_check.rs`). A check that fails restarts the server on a
//! fresh database, so that one poisoned listing doesn't hide the next finding.
//!
//! The corpus (`fuzz_corpus/`) is replayed first. Then random requests for
//! `A2A_MAILBOX_FUZZ_SECS` seconds per engine (default 45) from `A2A_MAILBOX_FUZZ_SEED` (default:
//! the clock; always printed). A finding prints its requests as corpus lines: save them as a
//! file in `fuzz_corpus/` and the failure is a fixed case from then on. The long run:
//! `A2A_MAILBOX_FUZZ_SECS=1800 cargo test --test adversarial fuzz -- --nocapture`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::fuzz_check::{health, invariants_hold, model_case};
use super::fuzz_corpus::corpus;
use super::fuzz_gen::Rng;
use super::fuzz_surfaces::{request, FReq};
use super::fuzz_world::World;
use super::kit::{short, Judge};
use super::world::{audit_bounded, try_snapshot, unchanged};
use crate::common::Engine;

const BATCH: usize = 8;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// What a run found: each class of failure once (with the requests to replay it).
#[derive(Default)]
struct Findings {
    classes: BTreeMap<String, String>,
    /// How many answers of each status each route gave (to see what the run reached).
    statuses: BTreeMap<String, BTreeMap<u16, usize>>,
    /// The engine, naming the files a finding is saved in.
    tag: String,
}

/// A failure's class: its text with ids and numbers blanked, cut short.
fn class(detail: &str) -> String {
    let blank = |w: &str| w.len() >= 8 && w.bytes().any(|b| b.is_ascii_digit());
    let mut out = String::new();
    let mut word = String::new();
    for c in detail.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() || c == '-' {
            word.push(c);
            continue;
        }
        out.push_str(if blank(&word) { "#" } else { &word });
        word.clear();
        out.push(c);
    }
    out.chars().take(90).collect()
}

impl Findings {
    fn record(&mut self, detail: &str, requests: &[FReq]) {
        if self.classes.contains_key(&class(detail)) {
            return;
        }
        // The whole failure as a corpus entry, ready to be copied into `fuzz_corpus/`.
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-findings");
        let file = dir.join(format!("{}-{}.json", self.tag, self.classes.len()));
        let entry = serde_json::json!({"note": detail, "requests": requests});
        let saved = std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::write(&file, format!("{entry:#}\n")))
            .map_or_else(
                |e| format!("not saved: {e}"),
                |_| file.display().to_string(),
            );
        let last = requests.last().map(FReq::line).unwrap_or_default();
        self.classes.insert(
            class(detail),
            format!(
                "{detail}\n    last request: {}\n    replay: {saved}",
                short(&last)
            ),
        );
    }
}

/// The checks of a batch: each failure as one line.
async fn after_batch(w: &mut World) -> Vec<String> {
    let mut bad = health(w).await;
    if bad.is_empty() {
        bad.extend(invariants_hold(w).await);
    }
    bad
}

async fn restart(w: World, engine: Engine, test: &str) -> World {
    drop(w);
    let mut w = World::new(engine, test)
        .await
        .expect("the engine ran before");
    w.last = try_snapshot(&w.app).await.unwrap_or_default();
    w
}

/// Replays every corpus entry; a failing one restarts the server.
async fn replay_corpus(mut w: World, engine: Engine, test: &str, found: &mut Findings) -> World {
    for (name, entry) in corpus() {
        let mut bad = Vec::new();
        for (i, r) in entry.requests.iter().enumerate() {
            let (got, finding) = w.send(r).await;
            bad.extend(finding);
            if let Some((_, want)) = entry.expect.iter().find(|(j, _)| *j == i) {
                if got.status != *want {
                    bad.push(format!(
                        "request {i} answered {}, the contract says {want}: {}",
                        got.status,
                        short(&got.text)
                    ));
                }
            }
        }
        bad.extend(after_batch(&mut w).await);
        for b in &bad {
            found.record(
                &format!("corpus {name} ({}): {b}", entry.note),
                &entry.requests,
            );
        }
        if !bad.is_empty() {
            w = restart(w, engine, test).await;
        }
    }
    w
}

async fn fuzz(engine: Engine) {
    let test = format!("adversarial::fuzz::{engine:?}");
    let Some(mut w) = World::new(engine, &test).await else {
        return;
    };
    w.last = try_snapshot(&w.app).await.expect("a fresh listing");
    let seed = env_u64("A2A_MAILBOX_FUZZ_SEED").unwrap_or_else(|| {
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        t.as_nanos() as u64
    });
    let secs = env_u64("A2A_MAILBOX_FUZZ_SECS").unwrap_or(45);
    eprintln!("{test}: A2A_MAILBOX_FUZZ_SEED={seed} A2A_MAILBOX_FUZZ_SECS={secs}");
    let mut found = Findings {
        tag: format!("{engine:?}-{seed}").to_lowercase(),
        ..Findings::default()
    };
    w = replay_corpus(w, engine, &test, &mut found).await;

    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut rng = Rng::new(seed);
    let (mut sent, mut batches, mut restarts) = (0usize, 0usize, 0usize);
    // Every request this server accepted: a listing poisoned long ago is still that request's.
    let mut history: Vec<FReq> = Vec::new();
    while Instant::now() < deadline {
        for _ in 0..BATCH {
            let r = request(&mut rng);
            let before = match rng.chance(20) {
                true => try_snapshot(&w.app).await.ok(),
                false => None,
            };
            let (got, finding) = w.send(&r).await;
            sent += 1;
            let route = format!(
                "{} {}",
                r.method,
                r.path.split('?').next().unwrap_or_default()
            );
            *found
                .statuses
                .entry(short(&route))
                .or_default()
                .entry(got.status)
                .or_default() += 1;
            if let Some(f) = finding {
                // A read may fail on what an earlier request stored: replay them all.
                let mut blamed = history.clone();
                blamed.push(r.clone());
                found.record(&f, &blamed);
            }
            let refused = (400..500).contains(&got.status) && ![408, 429].contains(&got.status);
            if let (Some(before), true) = (before, refused) {
                let mut judge = Judge::default();
                if let Ok(after) = try_snapshot(&w.app).await {
                    let what = format!("{} {} refused {}", r.method, short(&r.path), got.status);
                    unchanged(&mut judge, &what, &before, &after);
                }
                for f in judge.failures {
                    found.record(&f, std::slice::from_ref(&r));
                }
            }
            if (200..300).contains(&got.status) {
                history.push(r);
            }
        }
        batches += 1;
        let mut bad = after_batch(&mut w).await;
        if bad.is_empty() && batches % 6 == 0 {
            bad.extend(model_case(&w, &mut rng, batches).await);
        }
        // What broke a listing or a lease is something stored: a request accepted since the
        // server started.
        for b in &bad {
            found.record(b, &history);
        }
        if !bad.is_empty() {
            restarts += 1;
            history.clear();
            w = restart(w, engine, &test).await;
        }
    }
    let mut judge = Judge::default();
    audit_bounded(&w.app, &mut judge).await;
    for f in judge.failures {
        found.record(&f, &[]);
    }
    if std::env::var("A2A_MAILBOX_FUZZ_STATS").is_ok() {
        for (route, by) in &found.statuses {
            eprintln!("{test}: {route}: {by:?}");
        }
    }
    eprintln!(
        "{test}: seed {seed}: {sent} requests in {batches} batches, {restarts} restarts; \
         {} new finding(s)",
        found.classes.len()
    );
    assert!(
        found.classes.is_empty(),
        "{test}: {} finding(s) (replay with A2A_MAILBOX_FUZZ_SEED={seed}):\n  {}",
        found.classes.len(),
        found
            .classes
            .values()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_every_surface_sqlite() {
    fuzz(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_every_surface_postgres() {
    fuzz(Engine::Postgres).await;
}
