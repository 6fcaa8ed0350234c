//! The authflood phase: an authenticated sender's latency (one send at a time) for a few quiet
//! seconds, then while another client sends a burst of bad-token requests (10,000, as fast as
//! 16 connections go) from a thread of its own, so the burst does not queue behind the
//! measured caller in this process. Reports both p50/p99, loaded p99 ÷ quiet p99 (target ≤ 1.5)
//! and the `authentication_failed` audit rows the burst wrote (target ≤ 5: one per client
//! address and minute, docs/contract.md#audit).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::db::Store;
use crate::load::Agent;
use crate::server::{Engine, Server};
use crate::stats::{round3, Samples};
use crate::Settings;

/// Concurrent connections of the bad-token client.
const FLOOD_CONNECTIONS: usize = 16;

fn task() -> Value {
    json!({
        "id": Uuid::new_v4(),
        "sender": "bench-sender",
        "recipient": "bench-worker",
        "intent_text": "summarise the attached report and answer with three bullet points",
    })
}

/// Sends one task at a time until `until` says stop; one latency sample per send.
async fn measure(sender: &Agent, until: impl Fn() -> bool) -> Result<Samples> {
    let mut samples = Samples::default();
    while !until() {
        let t = Instant::now();
        sender.post("/a2a/tasks", &task(), 201).await?;
        samples.push(t.elapsed());
    }
    Ok(samples)
}

/// `total` requests with bad tokens (missing, malformed, forged, in turn), all 401, on a thread
/// and runtime of their own. Answers when the last one was answered, and how long they took.
fn flood(base: String, total: usize) -> std::thread::JoinHandle<Result<Duration>> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async move {
            let http = reqwest::Client::builder()
                .no_proxy()
                .tcp_nodelay(true)
                .timeout(Duration::from_secs(60))
                .build()?;
            let forged = {
                let claims = json!({"sub": "mallory", "exp": crate::stats::unix_secs() + 3600});
                jsonwebtoken::encode(
                    &jsonwebtoken::Header::default(),
                    &claims,
                    &jsonwebtoken::EncodingKey::from_secret(b"not-the-server-secret"),
                )?
            };
            let headers = [
                None,
                Some("Bearer garbage".to_owned()),
                Some(format!("Bearer {forged}")),
            ];
            let next = Arc::new(AtomicUsize::new(0));
            let start = Instant::now();
            let mut workers = Vec::new();
            for _ in 0..FLOOD_CONNECTIONS {
                let (http, next, headers, url) = (
                    http.clone(),
                    next.clone(),
                    headers.clone(),
                    format!("{base}/a2a/queue"),
                );
                workers.push(tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total {
                            return Ok::<_, anyhow::Error>(());
                        }
                        let mut rb = http.get(&url);
                        if let Some(h) = &headers[i % headers.len()] {
                            rb = rb.header("authorization", h);
                        }
                        let status = rb.send().await?.status().as_u16();
                        anyhow::ensure!(status == 401, "a bad token answered {status}");
                    }
                }));
            }
            for w in workers {
                w.await??;
            }
            Ok(start.elapsed())
        })
    })
}

/// The `authentication_failed` rows and the sum of their counts, once that sum reaches
/// `expected` (they are flushed at least every second) or 10 s passed.
async fn audited(ops: &Agent, expected: u64) -> Result<(usize, u64)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let feed = ops
            .get("/audit/recent?kind=authentication_failed&limit=1000", 200)
            .await?;
        let rows = feed["events"].as_array().cloned().unwrap_or_default();
        let sum = rows
            .iter()
            .filter_map(|r| r["kind"]["count"].as_u64())
            .sum();
        if sum >= expected || Instant::now() > deadline {
            return Ok((rows.len(), sum));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn authflood(s: &Settings, engine: Engine) -> Result<Value> {
    let (quiet_for, burst) = if s.smoke {
        (Duration::from_millis(500), 200)
    } else {
        (Duration::from_secs(4), 10_000)
    };
    let store = Store::fresh(s, engine, "authflood").await?;
    let server = Server::start(s, engine, &store, "authflood").await?;
    let sender = Agent::new(&server, "bench-sender", &["a2a.send.bench-worker"])?;
    let ops = Agent::new(&server, "bench-ops", &["a2a.operator"])?;
    for _ in 0..20 {
        sender.post("/a2a/tasks", &task(), 201).await?;
    }
    let t = Instant::now();
    let quiet = measure(&sender, || t.elapsed() >= quiet_for).await?;
    let flooder = flood(server.base.clone(), burst);
    let loaded = measure(&sender, || flooder.is_finished()).await?;
    let burst_time = flooder
        .join()
        .map_err(|_| anyhow::anyhow!("the bad-token client panicked"))?
        .context("the bad-token client failed")?;
    let (rows, counted) = audited(&ops, burst as u64).await?;
    eprintln!(
        "  {} authflood: {burst} bad tokens in {:.2} s, {rows} audit row(s) counting {counted}",
        engine.name(),
        burst_time.as_secs_f64()
    );
    server.stop().await?;
    store.drop_it(s).await?;
    let (q, l) = (quiet.summary(), loaded.summary());
    let ratio =
        |k: &str| round3(l[k].as_f64().unwrap_or(0.0) / q[k].as_f64().unwrap_or(1.0).max(0.001));
    Ok(json!({
        "bad_tokens": burst,
        "burst_secs": round3(burst_time.as_secs_f64()),
        "bad_tokens_per_s": round3(burst as f64 / burst_time.as_secs_f64().max(1e-9)),
        "quiet": q,
        "loaded": l,
        "loaded_over_quiet_p50": ratio("p50_ms"),
        "loaded_over_quiet_p99": ratio("p99_ms"),
        "audit_rows": rows,
        "audited_failures": counted,
    }))
}
