//! `instances` (PostgreSQL): three servers on one database. The closed loop of the waiting
//! agents (1,024 by default: the load several instances are run for) with every pair's worker
//! and sender on different instances, against the same loop on one instance (each twice,
//! alternated); the loop again with the pairs spread over the three instances but each pair's
//! worker and sender on the same one (what spreading the load costs without a hand-off across
//! instances); the 16-pair loop on one and on three instances (what three instances cost when so
//! few agents leave each instance's batches small); and hand-offs across instances against
//! hand-offs within one.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::Result;
use futures_util::future::join_all;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::db::Store;
use crate::progress::Progress;
use crate::scale::{self, Caller};
use crate::server::{Engine, Server};
use crate::stats::{round1, round3};
use crate::Settings;

/// What one pair's chain of task lives counted.
#[derive(Default)]
struct Tally {
    sent: usize,
    drained: HashSet<String>,
    duplicates: usize,
    lost: usize,
    foreign: usize,
}

/// Polls `path` until it answers something at `field`, for at most 30 s.
async fn next(c: &Caller, path: &str, field: &str) -> Result<Option<Value>> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        let (v, _) = c.must(path, None, 200).await?;
        if v[field].is_object() {
            return Ok(Some(v));
        }
    }
    Ok(None)
}

/// `n` task lives back to back: send (sender's instance) → lease (worker's instance) → result
/// → drain (sender's instance); every drained result counted once.
async fn chain(
    a: &Caller,
    me: &str,
    w: &Caller,
    worker: &str,
    n: usize,
    p: &Progress,
) -> Result<Tally> {
    let mut t = Tally::default();
    for _ in 0..n {
        let id = Uuid::new_v4().to_string();
        a.must("/a2a/tasks", Some(&scale::task(&id, me, worker)), 201)
            .await?;
        t.sent += 1;
        let Some(leased) = next(w, "/a2a/tasks/next?wait_ms=1000", "task").await? else {
            t.lost += 1;
            continue;
        };
        w.must("/a2a/results", Some(&scale::result_of(&leased)), 201)
            .await?;
        loop {
            let Some(got) = next(a, "/a2a/results/next?wait_ms=1000", "result").await? else {
                t.lost += 1;
                break;
            };
            let got = got["result"]["task_id"].as_str().unwrap_or("").to_owned();
            if !t.drained.insert(got.clone()) {
                t.duplicates += 1;
            } else if got != id {
                t.foreign += 1;
            } else {
                break;
            }
        }
        p.inc(1);
    }
    // Nothing may be left: no second copy of a result, no task still queued.
    let (left, _) = a.must("/a2a/results/next?wait_ms=0", None, 200).await?;
    t.duplicates += usize::from(left["result"].is_object());
    let (left, _) = w.must("/a2a/tasks/next?wait_ms=0", None, 200).await?;
    t.lost += usize::from(left["task"].is_object());
    Ok(t)
}

/// Where the closed loop puts pair i's worker and sender among `k` instances.
#[derive(Clone, Copy, PartialEq)]
enum Spread {
    /// Both on instance 0.
    One,
    /// Worker on instance i % k, sender on (i + 1) % k: every hand-off crosses instances.
    Across,
    /// Both on instance i % k: the load spread, every hand-off within one instance.
    Within,
}

/// The closed loop of `pairs` pairs, placed as `spread` says.
async fn closed(
    s: &Settings,
    bases: &[String],
    pairs_n: usize,
    spread: Spread,
    tag: &str,
    label: &str,
) -> Result<Value> {
    let k = bases.len();
    let mut pairs = Vec::new();
    for i in 0..pairs_n {
        let (wi, ai) = match spread {
            Spread::One => (0, 0),
            Spread::Across => (i % k, (i + 1) % k),
            Spread::Within => (i % k, i % k),
        };
        let (wsub, asub) = (format!("{tag}-worker-{i}"), format!("{tag}-alice-{i}"));
        let w = Caller::new(&bases[wi], &wsub, &["a2a.respond.*"])?;
        let a = Caller::new(&bases[ai], &asub, &["a2a.send.*"])?;
        pairs.push((a, asub, w, wsub));
    }
    let quiet = Progress::start(
        format!("{label} warm-up"),
        (pairs_n * s.warmup_tasks) as u64,
    );
    let warm = join_all(
        pairs
            .iter()
            .map(|(a, me, w, wk)| chain(a, me, w, wk, s.warmup_tasks, &quiet)),
    )
    .await;
    quiet.finish();
    let shares: Vec<usize> = (0..pairs_n)
        .map(|i| s.tasks / pairs_n + usize::from(i < s.tasks % pairs_n))
        .collect();
    let p = Progress::start(label.to_owned(), s.tasks as u64);
    let t0 = Instant::now();
    let measured = join_all(
        pairs
            .iter()
            .enumerate()
            .map(|(i, (a, me, w, wk))| chain(a, me, w, wk, shares[i], &p)),
    )
    .await;
    let secs = t0.elapsed().as_secs_f64();
    p.finish();
    let mut all = Tally::default();
    for t in warm.into_iter().chain(measured) {
        let t = t?;
        all.sent += t.sent;
        all.duplicates += t.duplicates;
        all.lost += t.lost;
        all.foreign += t.foreign;
        all.drained.extend(t.drained);
    }
    Ok(json!({
        "instances": if spread == Spread::One { 1 } else { k },
        "pairs": pairs_n,
        "tasks": s.tasks,
        "secs": round3(secs),
        "tasks_per_s": round1(s.tasks as f64 / secs),
        "sent": all.sent,
        "drained": all.drained.len(),
        "lost": all.lost,
        "duplicates": all.duplicates,
        "drained_out_of_order": all.foreign,
        "counts_include_warmup": s.warmup_tasks * pairs_n,
    }))
}

/// The `instances` phase (PostgreSQL only).
pub async fn instances(s: &Settings, engine: Engine) -> Result<Value> {
    let store = Store::fresh(s, engine, "instances").await?;
    let env = [("A2A_MAILBOX_HTTP_WORKERS", "1")];
    let mut servers = Vec::new();
    let mut r = Ok(Value::Null);
    for k in 0..3 {
        match Server::start_env(s, engine, &store, &format!("instances-{k}"), &env).await {
            Ok(srv) => servers.push(srv),
            Err(e) => {
                r = Err(e);
                break;
            }
        }
    }
    if r.is_ok() {
        r = run(s, engine, &servers).await;
    }
    for srv in servers {
        srv.stop_within(Duration::from_secs(2)).await?;
    }
    store.drop_it(s).await?;
    r
}

async fn run(s: &Settings, engine: Engine, servers: &[Server]) -> Result<Value> {
    let e = engine.name();
    let bases: Vec<String> = servers.iter().map(|x| x.base.clone()).collect();
    let looped = |pairs, spread, tag, label| {
        let label = format!("{e} closed loop of {pairs} pairs, {label}");
        let bases = &bases;
        async move { closed(s, bases, pairs, spread, tag, &label).await }
    };
    let agents = s.scale.waiting_pairs;
    // One, three, three, one: a drift of the machine's speed during the phase falls on both.
    let one = looped(agents, Spread::One, "one", "1 instance").await?;
    let three = looped(agents, Spread::Across, "three", "3 instances").await?;
    let three_again = looped(agents, Spread::Across, "three-b", "3 instances, again").await?;
    let one_again = looped(agents, Spread::One, "one-b", "1 instance, again").await?;
    let mean = |a: &Value, b: &Value| match (a["tasks_per_s"].as_f64(), b["tasks_per_s"].as_f64()) {
        (Some(a), Some(b)) => json!(round1((a + b) / 2.0)),
        _ => Value::Null,
    };
    let (one_rate, three_rate) = (mean(&one, &one_again), mean(&three, &three_again));
    let spread = looped(
        agents,
        Spread::Within,
        "spread",
        "3 instances, pairs within one",
    )
    .await?;
    let few_one = looped(s.pairs, Spread::One, "few-one", "1 instance").await?;
    let few_three = looped(s.pairs, Spread::Across, "few-three", "3 instances").await?;
    let (n, waiting) = (s.scale.instances_handoffs, s.scale.instances_waiting);
    let within = crate::handoff::handoffs(
        &servers[0],
        "in",
        &bases[0],
        &bases[0],
        waiting,
        n,
        &format!("{e} hand-off within one instance"),
    )
    .await?;
    let cross = crate::handoff::handoffs(
        &servers[1],
        "x",
        &bases[1],
        &bases[0],
        waiting,
        n,
        &format!("{e} hand-off across instances"),
    )
    .await?;
    let div = |a: &Value, b: &Value| match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) if b > 0.0 => json!(round3(a / b)),
        _ => Value::Null,
    };
    let loops = [
        &one,
        &three,
        &three_again,
        &one_again,
        &spread,
        &few_one,
        &few_three,
    ];
    let lost_or_duplicated: u64 = loops
        .iter()
        .map(|l| l["lost"].as_u64().unwrap_or(0) + l["duplicates"].as_u64().unwrap_or(0))
        .sum();
    Ok(json!({
        "servers": servers.len(),
        "server_env": "A2A_MAILBOX_HTTP_WORKERS=1 on each server (2 cores shared by 3 servers, PostgreSQL and the harness)",
        "one": one,
        "three": three,
        "three_again": three_again,
        "one_again": one_again,
        // The mean of the two rounds of each.
        "one_tasks_per_s": one_rate,
        "three_tasks_per_s": three_rate,
        "three_over_one": div(&three_rate, &one_rate),
        // Not a target: the same three instances with no hand-off across them, to tell what
        // spreading the load costs from what crossing instances costs.
        "three_pairs_within": spread,
        "three_pairs_within_over_one": div(&spread["tasks_per_s"], &one_rate),
        // Not a target: the lifecycle's few pairs, whose batches three instances split three
        // ways (each batch carries a third of the requests, and costs about as much).
        "few_pairs": {
            "one": few_one,
            "three": few_three,
            "three_over_one": div(&few_three["tasks_per_s"], &few_one["tasks_per_s"]),
        },
        "lost_or_duplicated": lost_or_duplicated,
        "handoff_within": within,
        "handoff_cross": cross,
        "cross_p99_over_within_p99": div(&cross["p99_ms"], &within["p99_ms"]),
        // Within one instance on PostgreSQL the lease is often answered before the send (the
        // same batch commits both), so a hand-off measured from the send's answer is ~0 there:
        // the comparison is made from the moment the send began.
        "cross_p99_over_within_p99_from_send_start": div(
            &cross["from_send_start"]["p99_ms"],
            &within["from_send_start"]["p99_ms"]
        ),
        "shape": format!("closed loop of {agents} pairs (the waiting agents), first every agent on instance 0 (the other two running idle), then pair i's worker on instance i%3 and its sender on (i+1)%3, each twice (one, three, three, one; the ratio of the means), then both on instance i%3 (three_pairs_within), on the same database; then the closed loop of {} pairs on instance 0 and across instances (few_pairs); hand-offs: {waiting} workers parked on instance 1 and their senders on instance 0 (across), or all on instance 0 (within), serially", s.pairs),
    }))
}
