//! `parked`: 10,000 long-polls parked at once from 1,000 callers: the server's memory and CPU
//! while they wait, how many of them one send wakes, and the memory after they went away.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::db::Store;
use crate::load::Agent;
use crate::scale::{self, Caller};
use crate::server::{Engine, Server};
use crate::stats::{clk_tck, round1, round3};
use crate::Settings;

/// What the parked polls saw, counted across all of them.
#[derive(Default)]
struct Seen {
    leased: AtomicU64,
    empty: AtomicU64,
    too_many_waiting: AtomicU64,
    overloaded: AtomicU64,
    other: AtomicU64,
}

/// One parked long-poll: waits for a task of its caller; when it gets one, or its wait ends
/// empty, it waits again. A 429 or 503 waits the Retry-After second and tries again.
async fn poll(c: Caller, seen: Arc<Seen>) {
    loop {
        match c.call("/a2a/tasks/next?wait_ms=30000", None).await {
            Ok((200, v, _)) if v["task"].is_object() => seen.leased.fetch_add(1, Ordering::Relaxed),
            Ok((200, _, _)) => seen.empty.fetch_add(1, Ordering::Relaxed),
            Ok((status, _, _)) => {
                let n = match status {
                    429 => &seen.too_many_waiting,
                    503 => &seen.overloaded,
                    _ => &seen.other,
                };
                n.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(1)).await;
                0
            }
            Err(_) => {
                seen.other.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(1)).await;
                0
            }
        };
    }
}

fn mib(kib: Option<u64>) -> Option<f64> {
    kib.map(|k| round1(k as f64 / 1024.0))
}

/// The `parked` phase of one engine.
pub async fn parked(s: &Settings, engine: Engine) -> Result<Value> {
    let store = Store::fresh(s, engine, "parked").await?;
    let server = Server::start(s, engine, &store, "parked").await?;
    let r = run(s, engine, &server).await;
    server.stop_within(Duration::from_secs(2)).await?;
    store.drop_it(s).await?;
    r
}

async fn run(s: &Settings, engine: Engine, server: &Server) -> Result<Value> {
    let (callers, each) = (s.scale.parked_callers, s.scale.parked_per_caller);
    let total = callers * each;
    let pid = server.pid;
    let window = s.scale.parked_window;
    // Warm-up: a few sends and leases, then the idle server.
    let sender = Agent::new(server, "parked-sender", &["a2a.send.*"])?;
    let warm = Caller::new(&server.base, "parked-warmup", &[])?;
    for _ in 0..20 {
        let id = Uuid::new_v4().to_string();
        sender
            .post(
                "/a2a/tasks",
                &scale::task(&id, "parked-sender", "parked-warmup"),
                201,
            )
            .await?;
        warm.must("/a2a/tasks/next?wait_ms=1000", None, 200).await?;
    }
    drop(warm);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_fresh = scale::rss_kib(pid);
    // A server that has served: a burst of concurrent waits (3 s, so the server's 2-second look
    // at its parked count sees it) fills the HTTP layer's pools of request and response heads
    // (128 per HTTP worker, kept for good); then the memory the burst freed goes back.
    let burst = total.min(512);
    let mut warm_polls = Vec::with_capacity(burst);
    for c in 0..burst.div_ceil(8) {
        let caller = Caller::new(&server.base, &format!("parked-warm-{c}"), &[])?;
        for _ in 0..8 {
            let caller = caller.clone();
            warm_polls.push(tokio::spawn(async move {
                caller.call("/a2a/tasks/next?wait_ms=3000", None).await
            }));
        }
    }
    for p in warm_polls {
        let _ = p.await;
    }
    tokio::time::sleep(if s.smoke {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(12)
    })
    .await;
    let before_start = scale::metrics(server).await;
    let rss_idle = scale::rss_kib(pid);
    let fds_idle = scale::open_fds(pid);
    let me = std::process::id();
    let my_fds_idle = scale::open_fds(me);

    // Park: every caller's polls, a batch every 20 ms so the listener's backlog is not flooded.
    let seen = Arc::new(Seen::default());
    let mut handles = Vec::with_capacity(total);
    let t_park = Instant::now();
    for c in 0..callers {
        let caller = Caller::new(&server.base, &format!("parked-{c}"), &[])?;
        for _ in 0..each {
            handles.push(tokio::spawn(poll(caller.clone(), seen.clone())));
        }
        if (c + 1) % 20 == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // Without the gauge: the server holds one more socket per poll, then one more second.
    let mut waiters = super::handoff::wait_parked(server, total, Duration::ZERO).await;
    let detected_by = if waiters.is_some() {
        "a2a_waiters"
    } else {
        let deadline = Instant::now() + Duration::from_secs(120);
        while scale::open_fds(pid).unwrap_or(0) < fds_idle.unwrap_or(0) + total
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        waiters = None;
        "server sockets (one per poll), then 1 s"
    };
    let park_secs = t_park.elapsed().as_secs_f64();
    let rss_parked = scale::rss_kib(pid);
    let fds_parked = scale::open_fds(pid);
    let my_fds_parked = scale::open_fds(me);
    let hwm_parked = server.vm_kib("VmHWM");

    // CPU while they wait, the harness doing nothing.
    let cpu0 = scale::cpu_secs(pid);
    let t = Instant::now();
    tokio::time::sleep(window).await;
    let cpu_secs = scale::cpu_secs(pid) - cpu0;
    let cpu_pct = cpu_secs / t.elapsed().as_secs_f64() * 100.0;
    let empty_in_window = seen.empty.load(Ordering::Relaxed);

    // One task to each of `sends` distinct callers, 200 a second; each wakes one poll.
    let sends = callers.min(1_000);
    let before = scale::metrics(server).await;
    let t_sends = Instant::now();
    for c in 0..sends {
        let id = Uuid::new_v4().to_string();
        sender
            .post(
                "/a2a/tasks",
                &scale::task(&id, "parked-sender", &format!("parked-{c}")),
                201,
            )
            .await?;
        tokio::time::sleep_until((t_sends + Duration::from_millis(5 * (c as u64 + 1))).into())
            .await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while (seen.leased.load(Ordering::Relaxed) as usize) < sends && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = scale::metrics(server).await;
    let leased = seen.leased.load(Ordering::Relaxed);
    let wakeups = scale::metric_delta(&before, &after, "a2a_wakeups_total");
    let oldest_poll_age = t_park.elapsed().as_secs_f64();

    // End the waits from the client side: the polls are dropped, their connections close.
    let t_close = Instant::now();
    for h in &handles {
        h.abort();
    }
    for h in handles {
        let _ = h.await;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let settled = my_fds_idle.unwrap_or(0) + 16;
    while scale::open_fds(me).unwrap_or(usize::MAX) > settled && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let my_fds_closed = scale::open_fds(me);
    let closed = my_fds_closed.is_some_and(|n| n <= settled);
    let closed_in = t_close.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fds_closed = scale::open_fds(pid);
    let tcp_closed = scale::tcp_states(&server.base);
    // The server learns that a client left only when that poll's wait ends (HTTP/1.1 gives it
    // no word before it writes): the waits end when the server's gauge reads 0, at the latest
    // when the last poll's `wait_ms` runs out. The memory is read `window` after that.
    let t_end = Instant::now();
    let deadline = t_end + Duration::from_secs(45);
    while scale::metric(&scale::metrics(server).await, "a2a_waiters").is_some_and(|w| w > 0.0)
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let waits_ended_in = t_end.elapsed().as_secs_f64();
    tokio::time::sleep(window).await;
    let rss_after = scale::rss_kib(pid);
    let fds_after = scale::open_fds(pid);
    let tcp_after = scale::tcp_states(&server.base);
    let end = scale::metrics(server).await;
    if leased as usize > total {
        bail!(
            "{} parked: {leased} leases for {sends} tasks",
            engine.name()
        );
    }
    let count = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let sockets = json!({
        "server_fds_idle": fds_idle,
        "server_fds_parked": fds_parked,
        "server_fds_after_close": fds_closed,
        "server_fds_after_window": fds_after,
        "server_tcp_established_close_wait_after_close": tcp_closed,
        "server_tcp_established_close_wait_after_window": tcp_after,
        "harness_fds_idle": my_fds_idle,
        "harness_fds_parked": my_fds_parked,
        "harness_fds_after_close": my_fds_closed,
        "connections_closed": closed,
        "connections_closed_note": "closed by the harness: its open files back to idle; a close-wait socket on the server's side is one the server has not noticed yet",
        "closed_within_secs": round3(closed_in),
        "server_waits_ended_secs_after_close": round3(waits_ended_in),
        "rss_after_note": "read a cpu window's length after the server's parked count fell to 0 (its waits ended)",
    });
    let mut v = json!({
        "callers": callers,
        "polls_per_caller": each,
        "polls": total,
        "poll_kind": "all lease polls: GET /a2a/tasks/next?wait_ms=30000, each caller (its own token and client) on its own recipient; a poll that gets a task or an empty answer polls again",
        "parked_detected_by": detected_by,
        "a2a_waiters_parked": waiters,
        "a2a_waiters_after": scale::metric(&end, "a2a_waiters"),
        "a2a_waiters_before": scale::metric(&before_start, "a2a_waiters"),
        "park_secs": round3(park_secs),
        "rss_fresh_kib": rss_fresh,
        "rss_idle_kib": rss_idle,
        "rss_idle_note": "rss_fresh: after 20 serial sends and leases; rss_idle: after that and a burst of concurrent 3-second waits (up to 512), 12 s later: the HTTP layer's pools of request and response heads (bounded, 128 per HTTP worker) are full from then on",
        "rss_parked_kib": rss_parked,
        "rss_after_kib": rss_after,
        "rss_idle_mib": mib(rss_idle),
        "rss_parked_mib": mib(rss_parked),
        "rss_after_mib": mib(rss_after),
        "vmhwm_parked_kib": hwm_parked,
        "rss_after_over_idle": match (rss_after, rss_idle) {
            (Some(a), Some(b)) if b > 0 => json!(round3(a as f64 / b as f64)),
            _ => Value::Null,
        },
        "cpu_window_secs": window.as_secs_f64(),
        "cpu_secs": round3(cpu_secs),
        "cpu_pct_of_one_core": round3(cpu_pct),
        "clk_tck": clk_tck(),
        "empty_answers_before_cpu_window_end": empty_in_window,
        "sends": sends,
        "send_rate_per_s": 200,
        "leased": leased,
        "wakeups": wakeups,
        "wakeups_per_send": wakeups.map(|w| round3(w / sends.max(1) as f64)),
        "oldest_poll_age_at_sends_end_secs": round3(oldest_poll_age),
        "empty_answers": count(&seen.empty),
        "status_429_too_many_waiting": count(&seen.too_many_waiting),
        "status_503_overloaded": count(&seen.overloaded),
        "other_errors": count(&seen.other),
        "harness_nofile": scale::nofile(std::process::id()),
        "server_nofile": scale::nofile(pid),
        "waits_ended_by": "aborting the polls in the harness (their connections close); then the window's wait before the last RSS reading",
    });
    if let (Some(v), Some(x)) = (v.as_object_mut(), sockets.as_object()) {
        v.extend(x.clone());
    }
    Ok(v)
}
