//! `streams`: 1,000 A2A streams open at once (SubscribeToTask, HTTP+JSON), one event each: how
//! long from the commit that changed a task to its event on the stream, and the server's memory
//! per open stream.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::db::Store;
use crate::load::{self, Agent};
use crate::report::{num, pp, target};
use crate::scale::{self, Caller};
use crate::server::{Engine, Server};
use crate::stats::{round1, round3, Samples};
use crate::Settings;

/// Streams per sender: the open streams are spread over senders, below each caller's limit of
/// waiting requests.
const PER_SENDER: usize = 100;
/// The recipient whose tasks the streams follow.
const WORKER: &str = "stream-worker";

/// What a stream saw.
enum Seen {
    /// Its first event (the Task) arrived.
    Open,
    /// Its statusUpdate for `task` arrived at this instant.
    Update(String, Instant),
    Failed(String),
}

/// One stream: opens SubscribeToTask on `task`, reports its first event and its next one.
async fn follow(
    http: reqwest::Client,
    url: String,
    auth: String,
    task: String,
    tx: mpsc::UnboundedSender<Seen>,
) {
    let r = async {
        let mut resp = http
            .get(&url)
            .header("authorization", &auth)
            .header("A2A-Version", "1.0")
            .send()
            .await?;
        if resp.status() != 200 {
            bail!("{url}: {}", resp.status());
        }
        let mut buf = String::new();
        let mut events = 0;
        while let Some(chunk) = resp.chunk().await? {
            let at = Instant::now();
            buf.push_str(std::str::from_utf8(&chunk)?);
            while let Some(end) = buf.find("\n\n") {
                let frame: String = buf.drain(..end + 2).collect();
                if !frame.starts_with("data: ") {
                    continue;
                }
                events += 1;
                if events == 1 {
                    let _ = tx.send(Seen::Open);
                } else if frame.contains("statusUpdate") {
                    let _ = tx.send(Seen::Update(task.clone(), at));
                    return Ok(());
                }
            }
        }
        bail!("{url}: the stream ended before its update")
    };
    if let Err(e) = r.await {
        let _ = tx.send(Seen::Failed(format!("{e:#}")));
    }
}

/// The `streams` phase of one engine.
pub async fn streams(s: &Settings, engine: Engine) -> Result<Value> {
    let store = Store::fresh(s, engine, "streams").await?;
    let server = Server::start(s, engine, &store, "streams").await?;
    let r = run(s, &server).await;
    server.stop_within(Duration::from_secs(2)).await?;
    store.drop_it(s).await?;
    r
}

async fn run(s: &Settings, server: &Server) -> Result<Value> {
    let n = s.scale.streams;
    let pid = server.pid;
    // The tasks the streams follow, queued first.
    let senders: Vec<(String, Agent)> = (0..n.div_ceil(PER_SENDER))
        .map(|i| {
            let sub = format!("stream-sender-{i}");
            Agent::new(server, &sub, &["a2a.send.*"]).map(|a| (sub, a))
        })
        .collect::<Result<_>>()?;
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let (sub, agent) = &senders[i / PER_SENDER];
        let id = Uuid::new_v4().to_string();
        agent
            .post("/a2a/tasks", &scale::task(&id, sub, WORKER), 201)
            .await?;
        tasks.push((i / PER_SENDER, id));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle = scale::rss_kib(pid);

    // Open every stream; each reports its first event.
    let http = scale::client()?;
    let auths: Vec<String> = (0..senders.len())
        .map(|i| load::mint(&format!("stream-sender-{i}"), &[]).map(|t| format!("Bearer {t}")))
        .collect::<Result<_>>()?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let t_open = Instant::now();
    let mut handles = Vec::with_capacity(n);
    for (k, (sender, id)) in tasks.iter().enumerate() {
        let url = format!("{}/a2a/agents/{WORKER}/tasks/{id}:subscribe", server.base);
        let h = tokio::spawn(follow(
            http.clone(),
            url,
            auths[*sender].clone(),
            id.clone(),
            tx.clone(),
        ));
        handles.push(h);
        if (k + 1) % 50 == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let mut updates: HashMap<String, Instant> = HashMap::with_capacity(n);
    let mut open = 0;
    while open < n {
        match tokio::time::timeout(Duration::from_secs(60), rx.recv()).await {
            Ok(Some(Seen::Open)) => open += 1,
            Ok(Some(Seen::Failed(e))) => bail!("a stream failed while opening: {e}"),
            Ok(Some(Seen::Update(id, at))) => drop(updates.insert(id, at)),
            _ => bail!("only {open} of {n} streams opened within 60 s"),
        }
    }
    let waiters = super::handoff::wait_parked(server, n, Duration::from_secs(1)).await;
    let open_secs = t_open.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_open = scale::rss_kib(pid);

    // The state changes: a worker leases the tasks one after another; each lease's commit is
    // done when its answer arrives, and it was not begun before its request went out.
    let worker = Caller::new(&server.base, WORKER, &[])?;
    let mut sent_at: HashMap<String, (Instant, Instant)> = HashMap::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        let (leased, at) = worker.must("/a2a/tasks/next", None, 200).await?;
        let id = leased["task"]["id"]
            .as_str()
            .context("a lease found no task")?
            .to_owned();
        sent_at.insert(id, (t0, at));
    }
    while updates.len() < n {
        match tokio::time::timeout(Duration::from_secs(30), rx.recv()).await {
            Ok(Some(Seen::Update(id, at))) => drop(updates.insert(id, at)),
            Ok(Some(Seen::Failed(e))) => bail!("a stream failed: {e}"),
            Ok(Some(Seen::Open)) => {}
            _ => bail!("only {} of {n} streams saw their update", updates.len()),
        }
    }
    let (mut from_request, mut from_answer) = (Samples::default(), Samples::default());
    let mut before_answer = 0;
    for (id, at) in &updates {
        let (t0, answered) = sent_at[id];
        from_request.push(at.saturating_duration_since(t0));
        from_answer.push(at.saturating_duration_since(answered));
        before_answer += usize::from(*at < answered);
    }
    for h in handles {
        let _ = h.await;
    }
    let closed = super::handoff::wait_parked_down(server, Duration::from_secs(10)).await;
    let per_stream = match (rss_idle, rss_open) {
        (Some(a), Some(b)) => Some(round3((b.saturating_sub(a)) as f64 / n as f64)),
        _ => None,
    };
    Ok(json!({
        "streams": n,
        "senders": senders.len(),
        "open_secs": round3(open_secs),
        "waiters_when_open": waiters,
        "waiters_after": closed,
        "rss_idle_mib": rss_idle.map(|k| round1(k as f64 / 1024.0)),
        "rss_open_mib": rss_open.map(|k| round1(k as f64 / 1024.0)),
        "rss_per_stream_kib": per_stream,
        "event_from_request": from_request.summary(),
        "event_from_answer": from_answer.summary(),
        "events_before_the_answer": before_answer,
        "shape": format!("{n} SubscribeToTask streams (HTTP+JSON) from {} senders on {WORKER}'s queued tasks; one worker leases them one after another; latency from the lease request's start (the commit cannot be earlier) to the WORKING statusUpdate read off the stream", senders.len()),
    }))
}

/// The target rows of one engine.
pub fn targets(name: &str, e: &Value, caveat: &str, out: &mut Vec<Value>) {
    let st = &e["streams"];
    if !st.is_object() {
        return;
    }
    out.push(target(
        "streams: commit to event on the wire p99 <= 10 ms",
        name,
        st["event_from_request"]["p99_ms"].as_f64(),
        Some(10.0),
        true,
        "ms",
        format!(
            "{} open streams, one event each, from the lease request's start (an upper bound of the commit's time){caveat}",
            st["streams"]
        ),
    ));
}

/// The Markdown table.
pub fn markdown(m: &mut String, engines: &Map<String, Value>) {
    if !engines.values().any(|e| e["streams"].is_object()) {
        return;
    }
    let _ = writeln!(m, "\n### A2A streams (open at once, one event each)\n");
    let _ = writeln!(m, "| engine | streams | opened in s | event p50 / p99 ms from the request | from the answer | RSS idle / open MiB | KiB per stream | waiters after |");
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|");
    for (name, e) in engines {
        let st = &e["streams"];
        if st.is_object() {
            let _ = writeln!(
                m,
                "| {name} | {} | {} | {} | {} | {} / {} | {} | {} |",
                st["streams"],
                num(&st["open_secs"]),
                pp(&st["event_from_request"]),
                pp(&st["event_from_answer"]),
                num(&st["rss_idle_mib"]),
                num(&st["rss_open_mib"]),
                num(&st["rss_per_stream_kib"]),
                st["waiters_after"]
            );
        }
    }
}

/// The smoke run's check: every stream opened, saw its event, and was let go.
pub fn smoke_check(s: &Settings, e: &str, r: &Value, check: &mut dyn FnMut(bool, String)) {
    if !s.phase("streams") {
        return;
    }
    let st = &r["streams"];
    check(
        st["event_from_request"]["n"].as_u64() == Some(s.scale.streams as u64)
            && st["waiters_after"].as_f64() == Some(0.0),
        format!("{e}: every stream saw its event and was let go"),
    );
}
