//! `handoff`: how long a task takes from its send's answer to the waiting worker's lease, with
//! 1,024 agents parked in long-polls, against one raw commit on the same database.

use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, PgConnection};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::db::Store;
use crate::progress::Progress;
use crate::scale::{self, Caller};
use crate::server::{Engine, Server};
use crate::stats::{round3, Samples};
use crate::Settings;

/// What a parked agent saw.
enum Event {
    Lease(String, Instant),
    Drain(String),
    Failed(String),
}

/// A worker: waits for its next task, answers it, waits again.
async fn work(w: Caller, me: String, tx: mpsc::UnboundedSender<Event>) {
    loop {
        let r = async {
            let (leased, at) = w.must("/a2a/tasks/next?wait_ms=30000", None, 200).await?;
            if let Some(id) = leased["task"]["id"].as_str() {
                let _ = tx.send(Event::Lease(id.to_owned(), at));
                w.must("/a2a/results", Some(&scale::result_of(&leased)), 201)
                    .await?;
            }
            Ok::<_, anyhow::Error>(())
        };
        if let Err(e) = r.await {
            let _ = tx.send(Event::Failed(format!("{me}: {e:#}")));
            return;
        }
    }
}

/// A sender's other half: waits for its results and drains them.
async fn drain(a: Caller, me: String, tx: mpsc::UnboundedSender<Event>) {
    loop {
        match a.must("/a2a/results/next?wait_ms=30000", None, 200).await {
            Ok((got, _)) => {
                if let Some(id) = got["result"]["task_id"].as_str() {
                    let _ = tx.send(Event::Drain(id.to_owned()));
                }
            }
            Err(e) => {
                let _ = tx.send(Event::Failed(format!("{me}: {e:#}")));
                return;
            }
        }
    }
}

/// Waits until no request is parked on the server any more (the server's `a2a_waiters`), at
/// most `patience`. Answers the gauge's last reading.
pub async fn wait_parked_down(server: &Server, patience: Duration) -> Option<f64> {
    let deadline = Instant::now() + patience;
    loop {
        let w = scale::metric(&scale::metrics(server).await, "a2a_waiters");
        match w {
            Some(w) if w > 0.0 && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            _ => return w,
        }
    }
}

/// Waits until `parked` long-polls are parked (the server's `a2a_waiters`), or, without that
/// metric, `fallback` after the last poll went out. Answers the gauge's reading.
pub async fn wait_parked(server: &Server, parked: usize, fallback: Duration) -> Option<f64> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let m = scale::metrics(server).await;
        match scale::metric(&m, "a2a_waiters") {
            None => {
                tokio::time::sleep(fallback).await;
                return None;
            }
            Some(w) if w >= parked as f64 || Instant::now() > deadline => return Some(w),
            Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// `pairs` workers parked on `worker_base` and their senders parked for results on
/// `sender_base`; then `n` serial hand-offs (after `warmup` unrecorded ones), each to the next
/// pair's worker: from the send's 201 (body read) to the worker's lease (body read). `server`
/// is the workers' (its gauge and counters are read).
pub async fn handoffs(
    server: &Server,
    prefix: &str,
    worker_base: &str,
    sender_base: &str,
    pairs: usize,
    n: usize,
    label: &str,
) -> Result<Value> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut senders = Vec::new();
    let mut handles = Vec::new();
    for i in 0..pairs {
        let (wsub, asub) = (
            format!("{prefix}-worker-{i}"),
            format!("{prefix}-alice-{i}"),
        );
        let w = Caller::new(worker_base, &wsub, &["a2a.respond.*"])?;
        let a = Caller::new(sender_base, &asub, &["a2a.send.*"])?;
        // Two connections each, opened now: one waits, the other sends or answers.
        for c in [&w, &a] {
            let (x, y) = tokio::join!(c.call("/healthz", None), c.call("/healthz", None));
            x?;
            y?;
        }
        handles.push(tokio::spawn(work(w, wsub.clone(), tx.clone())));
        handles.push(tokio::spawn(drain(a.clone(), asub, tx.clone())));
        senders.push((a, format!("{prefix}-alice-{i}"), wsub));
    }
    // The senders' drains park on `server` too only when it serves them.
    let parked_here = pairs * (1 + usize::from(worker_base == sender_base));
    let parked_seen = wait_parked(server, parked_here, Duration::from_secs(2)).await;
    let warmup = (n / 10).clamp(1, 50);
    let p = Progress::start(label.to_owned(), (warmup + n) as u64);
    let (mut smp, mut from_start) = (Samples::default(), Samples::default());
    let mut early = 0;
    let mut before = Vec::new();
    for k in 0..warmup + n {
        if k == warmup {
            before = scale::metrics(server).await;
        }
        let (a, me, worker) = &senders[k % pairs];
        let id = Uuid::new_v4().to_string();
        let t = scale::task(&id, me, worker);
        let start = Instant::now();
        let (_, sent) = a.must("/a2a/tasks", Some(&t), 201).await?;
        let (mut leased, mut drained) = (None, false);
        while leased.is_none() || !drained {
            let ev = tokio::time::timeout(Duration::from_secs(40), rx.recv())
                .await
                .with_context(|| format!("{label}: task {id} was not handed off within 40 s"))?;
            match ev {
                Some(Event::Lease(got, at)) if got == id => leased = Some(at),
                Some(Event::Drain(got)) if got == id => drained = true,
                Some(Event::Lease(got, _)) | Some(Event::Drain(got)) => {
                    bail!("{label}: {got} came back while {id} was awaited")
                }
                Some(Event::Failed(e)) => bail!("{label}: {e}"),
                None => bail!("{label}: every agent stopped"),
            }
        }
        let at = leased.unwrap_or(sent);
        if at < sent {
            early += 1;
        }
        if k >= warmup {
            smp.push(at.saturating_duration_since(sent));
            from_start.push(at.saturating_duration_since(start));
        }
        p.inc(1);
    }
    p.finish();
    let after = scale::metrics(server).await;
    for h in &handles {
        h.abort();
    }
    let wakeups = scale::metric_delta(&before, &after, "a2a_wakeups_total");
    let mut v = smp.summary();
    v["warmup"] = json!(warmup);
    v["lease_before_send_answer"] = json!(early);
    v["from_send_start"] = from_start.summary();
    v["note"] = json!("hand-off = the lease answer read minus the send's 201 read; the lease answer may be read first (counted in lease_before_send_answer; such a sample is 0); from_send_start: the same lease answer from the moment the send's request began");
    v["parked_agents"] = json!(2 * pairs);
    v["a2a_waiters_seen"] = json!(parked_seen);
    v["wakeups_per_handoff"] = json!(wakeups.map(|w| round3(w / n.max(1) as f64)));
    Ok(v)
}

macro_rules! commit_c1 {
    ($conn:expr, $create:expr, $secs:expr) => {{
        let c = &mut $conn;
        sqlx::query($create).execute(&mut *c).await?;
        let mut smp = Samples::default();
        let deadline = Instant::now() + $secs;
        while Instant::now() < deadline {
            let t = Instant::now();
            sqlx::query(
                "INSERT INTO bench_raw_commits (id, body, created_at_ms) VALUES ($1, $2, $3)",
            )
            .bind(Uuid::new_v4().to_string())
            .bind("x".repeat(230))
            .bind(crate::db::now_ms())
            .execute(&mut *c)
            .await?;
            smp.push(t.elapsed());
        }
        sqlx::query("DROP TABLE bench_raw_commits")
            .execute(&mut *c)
            .await?;
        smp
    }};
}

/// One raw single-row commit per transaction on the phase's own database, one connection
/// (SQLite: WAL, synchronous=FULL; PostgreSQL: the server's settings).
pub async fn raw_commit_c1(store: &Store, secs: Duration) -> Result<Value> {
    let create = "CREATE TABLE bench_raw_commits (id TEXT PRIMARY KEY NOT NULL, body TEXT NOT NULL, created_at_ms BIGINT NOT NULL)";
    let smp = match store.engine {
        Engine::Sqlite => {
            let mut c = SqliteConnectOptions::from_str(&store.url)?
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Full)
                .busy_timeout(Duration::from_secs(5))
                .connect()
                .await?;
            let smp = commit_c1!(c, create, secs);
            c.close().await?;
            smp
        }
        Engine::Postgres => {
            let mut c = PgConnection::connect(&store.url).await?;
            let smp = commit_c1!(c, create, secs);
            c.close().await?;
            smp
        }
    };
    let mut v = smp.summary();
    v["what"] = json!("one INSERT of a 230-byte row per autocommit transaction, one connection, on this phase's database before its server started");
    Ok(v)
}

/// The `handoff` phase of one engine.
pub async fn handoff(s: &Settings, engine: Engine) -> Result<Value> {
    let store = Store::fresh(s, engine, "handoff").await?;
    let raw = raw_commit_c1(
        &store,
        Duration::from_secs_f64(if s.smoke { 0.3 } else { 3.0 }),
    )
    .await?;
    let server = Server::start(s, engine, &store, "handoff").await?;
    let pairs = s.scale.waiting_pairs;
    let label = format!("{} hand-off, {} agents parked", engine.name(), 2 * pairs);
    let r = handoffs(
        &server,
        "ho",
        &server.base,
        &server.base,
        pairs,
        s.scale.handoff_samples,
        &label,
    )
    .await;
    server.stop_within(Duration::from_secs(2)).await?;
    store.drop_it(s).await?;
    let h = r?;
    let ratio = match (h["p50_ms"].as_f64(), raw["p50_ms"].as_f64()) {
        (Some(a), Some(b)) if b > 0.0 => json!(round3(a / b)),
        _ => Value::Null,
    };
    Ok(json!({
        "parked_agents": h["parked_agents"],
        "handoff": h,
        "raw_commit": raw,
        "p50_over_raw_commit_p50": ratio,
        "shape": format!("{pairs} workers long-poll their own recipients (wait_ms=30000), {pairs} senders long-poll their results; serially, the next pair's sender sends one task to its waiting worker; hand-off = the worker's lease answer read minus the send's 201 read (0 when the lease came first; counted); the worker answers, the sender drains, before the next"),
    }))
}
