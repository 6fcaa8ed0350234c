//! `openloop`: Poisson arrivals at 50 % and 80 % of a closed loop measured just before; each task's
//! life measured from its scheduled arrival to its result drained (no coordinated omission).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::db::Store;
use crate::progress::Progress;
use crate::scale::{self, Caller, Rng};
use crate::server::{Engine, Server};
use crate::stats::{round1, round3, Samples};
use crate::Settings;

/// The tasks of the rate being measured: when each was due, and the lives that ended.
#[derive(Default)]
struct State {
    due: HashMap<String, Instant>,
    /// When each task's send was answered and its lease read, and when its send began.
    marks: HashMap<String, [Option<Instant>; 3]>,
    lives: Samples,
    /// Each ended life and its stages, in microseconds (see [`STAGES`]).
    stages: Vec<[u32; 5]>,
    failed: Vec<String>,
}

/// Where a life's time went: the arrival to the send's answer; to the worker's lease (which may
/// come before the send's answer); the lease to the drain (the worker's result, its commit and the
/// drain, which may be answered before the result is); the arrival to the send's start (the
/// harness's own lag).
const STAGES: [&str; 4] = ["send", "to_lease", "lease_to_drain", "send_start"];

fn mark(st: &Shared, id: &str, stage: usize, at: Instant) {
    st.lock()
        .expect("state")
        .marks
        .entry(id.to_owned())
        .or_default()[stage] = Some(at);
}

/// Each stage's p50 and p99 over every life, and its median over the slowest 1 % of lives: which
/// stage the tail is spent in.
fn stages(all: &mut [[u32; 5]]) -> Value {
    all.sort_unstable_by_key(|l| l[0]);
    let tail = &all[all.len() - all.len().div_ceil(100)..];
    let mut out = serde_json::Map::new();
    for (k, name) in STAGES.iter().enumerate() {
        let (mut every, mut slow) = (Samples::default(), Samples::default());
        every.0 = all.iter().map(|l| l[k + 1]).collect();
        slow.0 = tail.iter().map(|l| l[k + 1]).collect();
        let (every, slow) = (every.summary(), slow.summary());
        out.insert(
            (*name).to_owned(),
            json!({ "p50_ms": every["p50_ms"], "p99_ms": every["p99_ms"], "slowest_1pct_p50_ms": slow["p50_ms"] }),
        );
    }
    Value::Object(out)
}

type Shared = Arc<Mutex<State>>;

/// Workers waiting on each recipient: arrivals are random, so a recipient with one worker would
/// queue behind its own worker (a single-server queue at 80 % has p99 ≈ 6.6 × p50 whatever the
/// server does); with a few, what is measured is the mailbox, not the agents.
const WORKERS_PER_RECIPIENT: usize = 4;

fn fail(st: &Shared, what: String) {
    st.lock().expect("state").failed.push(what);
}

/// A worker: waits for its next task and answers it, again and again.
async fn work(w: Caller, me: String, st: Shared) {
    loop {
        let r = async {
            let (leased, at) = w.must("/a2a/tasks/next?wait_ms=30000", None, 200).await?;
            if let Some(id) = leased["task"]["id"].as_str() {
                mark(&st, id, 1, at);
                w.must("/a2a/results", Some(&scale::result_of(&leased)), 201)
                    .await?;
            }
            Ok::<_, anyhow::Error>(())
        };
        if let Err(e) = r.await {
            return fail(&st, format!("{me}: {e:#}"));
        }
    }
}

/// A sender's drain: waits for its results; each ends a task's life.
async fn drain(a: Caller, me: String, st: Shared) {
    loop {
        match a.must("/a2a/results/next?wait_ms=30000", None, 200).await {
            Ok((got, at)) => {
                if let Some(id) = got["result"]["task_id"].as_str() {
                    let mut s = st.lock().expect("state");
                    match s.due.remove(id) {
                        Some(due) => {
                            let life = at.saturating_duration_since(due);
                            s.lives.push(life);
                            let m = s.marks.remove(id).unwrap_or_default();
                            let us = |from: Option<Instant>, to: Option<Instant>| {
                                from.zip(to).map_or(0, |(a, b)| {
                                    b.saturating_duration_since(a).as_micros() as u32
                                })
                            };
                            let lived = [
                                life.as_micros() as u32,
                                us(Some(due), m[0]),
                                us(Some(due), m[1]),
                                us(m[1], Some(at)),
                                us(Some(due), m[2]),
                            ];
                            s.stages.push(lived);
                        }
                        None => s.failed.push(format!("{me} drained {id}, not due")),
                    }
                }
            }
            Err(e) => return fail(&st, format!("{me}: {e:#}")),
        }
    }
}

/// `n` Poisson arrivals at `rate` a second, spread round-robin over the senders; waits until
/// every one was drained and answers their lives.
async fn arrivals(
    senders: &[(Caller, String, String)],
    st: &Shared,
    rate: f64,
    n: usize,
    seed: u64,
    label: &str,
) -> Result<(Samples, f64, Value)> {
    let mut rng = Rng::new(seed);
    let p = Progress::start(label.to_owned(), n as u64);
    let t0 = Instant::now();
    let mut at = 0.0;
    for k in 0..n {
        at += rng.exp(rate);
        let due = t0 + Duration::from_secs_f64(at);
        tokio::time::sleep_until(due.into()).await;
        let (a, me, worker) = &senders[k % senders.len()];
        let id = Uuid::new_v4().to_string();
        st.lock().expect("state").due.insert(id.clone(), due);
        let (a, t, st) = (a.clone(), scale::task(&id, me, worker), st.clone());
        // The send runs on its own, so a slow answer delays no later arrival.
        tokio::spawn(async move {
            mark(&st, &id, 2, Instant::now());
            match a.must("/a2a/tasks", Some(&t), 201).await {
                Ok((_, at)) => mark(&st, &id, 0, at),
                Err(e) => fail(&st, format!("send: {e:#}")),
            }
        });
        p.inc(1);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        {
            let s = st.lock().expect("state");
            if !s.failed.is_empty() {
                bail!("{label}: {:?}", &s.failed[..s.failed.len().min(5)]);
            }
            if s.lives.0.len() >= n {
                break;
            }
            if Instant::now() > deadline {
                bail!(
                    "{label}: {} of {n} tasks not drained within 60 s of the last arrival",
                    n - s.lives.0.len()
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let secs = t0.elapsed().as_secs_f64();
    p.finish();
    let mut s = st.lock().expect("state");
    let lives = std::mem::take(&mut s.lives);
    let stages = stages(&mut std::mem::take(&mut s.stages));
    s.marks.clear();
    Ok((lives, secs, stages))
}

/// The `openloop` phase of one engine. Its rates are fractions of a closed loop measured just
/// before them, on a fresh database and server of its own (the lifecycle's shape and size), not
/// of the lifecycle phase's: on a machine whose speed drifts by a third within minutes, 80 % of
/// a loop measured several phases earlier can be past what the server sustains now, or far
/// below it. The lifecycle phase's rate, when it ran, is kept beside it.
pub async fn openloop(s: &Settings, engine: Engine, out: &Value) -> Result<Value> {
    let (closed, life) = scale::closed_loop_now(s, engine).await?;
    if closed <= 0.0 {
        bail!(
            "{} open loop: no closed-loop rate to start from",
            engine.name()
        );
    }
    let store = Store::fresh(s, engine, "openloop").await?;
    let server = Server::start(s, engine, &store, "openloop").await?;
    let r = run(s, engine, &server, closed).await;
    server.stop_within(Duration::from_secs(2)).await?;
    store.drop_it(s).await?;
    let rates = r?;
    Ok(json!({
        "closed_loop_tasks_per_s": closed,
        "closed_loop_measured": "just before the rates, on a fresh database and server of its own",
        "closed_loop": life,
        "lifecycle_phase_tasks_per_s": out["lifecycle"]["tasks_per_s"],
        "pairs": s.pairs,
        "rates": rates,
        "shape": format!("{} recipients with {WORKERS_PER_RECIPIENT} workers each: each worker long-polls its recipient (wait_ms=30000) and answers what it leases; each sender's drain long-polls its results (wait_ms=30000); arrivals are Poisson (exponential gaps, xorshift64* seeded per rate), round-robin over the senders, each send on its own; a life runs from the arrival's scheduled time to its result's drain answer read", s.pairs),
    }))
}

async fn run(s: &Settings, engine: Engine, server: &Server, closed: f64) -> Result<Value> {
    let st: Shared = Arc::default();
    let mut senders = Vec::new();
    let mut handles = Vec::new();
    for i in 0..s.pairs {
        let (wsub, asub) = (format!("ol-worker-{i}"), format!("ol-alice-{i}"));
        for _ in 0..WORKERS_PER_RECIPIENT {
            let w = Caller::new(&server.base, &wsub, &["a2a.respond.*"])?;
            handles.push(tokio::spawn(work(w, wsub.clone(), st.clone())));
        }
        let a = Caller::new(&server.base, &asub, &["a2a.send.*"])?;
        handles.push(tokio::spawn(drain(a.clone(), asub.clone(), st.clone())));
        senders.push((a, asub, wsub));
    }
    let run = async {
        // Warm-up (not recorded): connections opened, statements prepared.
        let label = format!("{} open loop warm-up", engine.name());
        arrivals(&senders, &st, 0.5 * closed, 4 * s.pairs, 1, &label).await?;
        let mut rows = Vec::new();
        for (k, fraction) in [0.5, 0.8].into_iter().enumerate() {
            let rate = fraction * closed;
            let n = s.scale.openloop_tasks;
            let label = format!(
                "{} open loop {:.0} % ({rate:.0}/s)",
                engine.name(),
                fraction * 100.0
            );
            let (lives, secs, stages) =
                arrivals(&senders, &st, rate, n, 42 + k as u64, &label).await?;
            let life = lives.summary();
            let ratio = match (life["p99_ms"].as_f64(), life["p50_ms"].as_f64()) {
                (Some(a), Some(b)) if b > 0.0 => json!(round3(a / b)),
                _ => Value::Null,
            };
            rows.push(json!({
                "fraction": fraction,
                "rate_per_s": round1(rate),
                "tasks": n,
                "secs": round3(secs),
                "achieved_per_s": round1(n as f64 / secs),
                "life": life,
                "p99_over_p50": ratio,
                "stages": stages,
            }));
        }
        Ok::<_, anyhow::Error>(Value::Array(rows))
    };
    let r = run.await;
    for h in &handles {
        h.abort();
    }
    r
}
