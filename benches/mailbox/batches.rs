//! The batches phase: the closed loop's task lives, a batch of tasks at a time. Each pair's
//! sender sends a batch (`POST /a2a/tasks/batch`), its worker leases it
//! (`GET /a2a/tasks/next?max=`) and answers every task in one request
//! (`POST /a2a/results/batch`, each result fenced by its lease id), and the sender drains the
//! results (`GET /a2a/results/next?max=`); then the next batch. Every task is checked: the
//! worker leases exactly the tasks its sender sent it, and the sender drains each one's own
//! result.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Result};
use futures_util::future::join_all;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::db::Store;
use crate::load::Agent;
use crate::progress::Progress;
use crate::server::{Engine, Server};
use crate::stats::{round1, round3, CpuMeter, Samples};
use crate::Settings;

/// Tasks a request in the full run (the smoke run uses 4, so that a pair's share spans several
/// batches and ends with a short one).
const BATCH: usize = 16;

/// How long a pair waits for the tasks or results it is owed before the run fails.
const STUCK: Duration = Duration::from_secs(30);

/// The batch size of this run.
pub fn batch_size(s: &Settings) -> usize {
    if s.smoke {
        4
    } else {
        BATCH
    }
}

/// What a pair's batches recorded: each step's latency per batch, requests per route, and the
/// tasks whose lease and result were checked.
#[derive(Default)]
struct Rec {
    send: Samples,
    lease: Samples,
    result: Samples,
    drain: Samples,
    batch: Samples,
    requests: [u64; 4],
    checked: u64,
}

impl Rec {
    fn add(&mut self, o: &Rec) {
        self.send.extend(&o.send);
        self.lease.extend(&o.lease);
        self.result.extend(&o.result);
        self.drain.extend(&o.drain);
        self.batch.extend(&o.batch);
        for (a, b) in self.requests.iter_mut().zip(o.requests) {
            *a += b;
        }
        self.checked += o.checked;
    }
}

fn result_text(id: &str) -> String {
    format!("done {id}")
}

/// One batch of `n` task lives: send, lease, answer, drain, each step checked.
async fn one_batch(
    i: usize,
    sender: &Agent,
    worker: &Agent,
    n: usize,
    rec: &mut Rec,
) -> Result<()> {
    let (me, worker_name) = (format!("alice-{i}"), format!("worker-{i}"));
    let ids: Vec<String> = (0..n).map(|_| Uuid::new_v4().to_string()).collect();
    let tasks: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({
                "id": id,
                "sender": me,
                "recipient": worker_name,
                "intent_text": "summarise the attached report and answer with three bullet points",
            })
        })
        .collect();
    let t0 = Instant::now();
    let sent = sender
        .post("/a2a/tasks/batch", &json!({ "tasks": tasks }), 201)
        .await?;
    rec.requests[0] += 1;
    let t1 = Instant::now();
    let items = sent["tasks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    ensure!(
        items.len() == n
            && items.iter().zip(&ids).all(|(it, id)| {
                it["task_id"].as_str() == Some(id.as_str()) && it["replayed"] == json!(false)
            }),
        "{me}: the batch of {n} was answered {sent}"
    );

    let lease_path = format!("/a2a/tasks/next?max={n}&wait_ms=1000");
    let mut owed: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let mut results = Vec::with_capacity(n);
    while !owed.is_empty() {
        let leased = worker.get(&lease_path, 200).await?;
        rec.requests[1] += 1;
        ensure!(
            leased["kind"] == "a2a_task_batch",
            "{worker_name}: {lease_path} answered {leased}"
        );
        let got = leased["leases"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if got.is_empty() && t1.elapsed() > STUCK {
            bail!(
                "{worker_name} waited {STUCK:?} for {} tasks of its batch",
                owed.len()
            );
        }
        for l in got {
            let id = l["task"]["id"].as_str().unwrap_or_default();
            if !owed.remove(id) || l["task"]["sender"].as_str() != Some(me.as_str()) {
                bail!(
                    "{worker_name} leased {id} of {}, not a task owed to it",
                    l["task"]["sender"]
                );
            }
            let Some(lease_id) = l["lease"]["lease_id"].as_str() else {
                bail!("{worker_name} leased {id} without a lease id: {l}");
            };
            results.push(json!({
                "task_id": id,
                "status": "ok",
                "lease_id": lease_id,
                "content": [{"type": "text", "text": result_text(id)}],
            }));
        }
    }
    let t2 = Instant::now();

    let body = json!({ "results": results });
    let posted = worker.post("/a2a/results/batch", &body, 200).await?;
    rec.requests[2] += 1;
    let t3 = Instant::now();
    let items = posted["results"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    ensure!(
        items.len() == n
            && items.iter().zip(&results).all(|(it, r)| {
                it["task_id"] == r["task_id"] && it["status"].as_u64() == Some(201)
            }),
        "{worker_name}: its {n} results were answered {posted}"
    );

    let drain_path = format!("/a2a/results/next?max={n}&wait_ms=1000");
    let mut owed: HashSet<&str> = ids.iter().map(String::as_str).collect();
    while !owed.is_empty() {
        let drained = sender.get(&drain_path, 200).await?;
        rec.requests[3] += 1;
        ensure!(
            drained["kind"] == "a2a_result_batch",
            "{me}: {drain_path} answered {drained}"
        );
        let got = drained["results"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if got.is_empty() && t3.elapsed() > STUCK {
            bail!(
                "{me} waited {STUCK:?} for {} results of its batch",
                owed.len()
            );
        }
        for r in got {
            let id = r["task_id"].as_str().unwrap_or_default();
            if !owed.remove(id)
                || r["status"].as_str() != Some("ok")
                || r["content"][0]["text"].as_str() != Some(result_text(id).as_str())
            {
                bail!("{me} drained a result that is not the one owed to it: {r}");
            }
            rec.checked += 1;
        }
    }
    let t4 = Instant::now();
    rec.send.push(t1 - t0);
    rec.lease.push(t2 - t1);
    rec.result.push(t3 - t2);
    rec.drain.push(t4 - t3);
    rec.batch.push(t4 - t0);
    Ok(())
}

/// One pair's `n` task lives, `size` at a time (the last batch may be shorter).
async fn run_pair(
    i: usize,
    (sender, worker): &(Agent, Agent),
    n: usize,
    size: usize,
    progress: Option<&Progress>,
) -> Result<Rec> {
    let mut rec = Rec::default();
    let mut left = n;
    while left > 0 {
        let k = left.min(size);
        one_batch(i, sender, worker, k, &mut rec).await?;
        left -= k;
        if let Some(p) = progress {
            p.inc(k as u64);
        }
    }
    Ok(rec)
}

/// The phase on its own fresh database and server: `s.pairs` pairs drive `s.tasks` task lives
/// in batches after a warm-up of one batch a pair.
pub async fn batches(s: &Settings, engine: Engine) -> Result<Value> {
    let store = Store::fresh(s, engine, "batches").await?;
    let server = Server::start(s, engine, &store, "batches").await?;
    let mut out = measure(s, engine, &server, &store).await?;
    server.stop().await?;
    if engine == Engine::Postgres {
        // The server's backends flush their statistics when they exit.
        tokio::time::sleep(Duration::from_millis(600)).await;
        let after = store.pg_counters().await?;
        out["postgres"] = crate::db::pg_counter_delta(&out["pg_counters_before"], &after, s.tasks);
    }
    store.drop_it(s).await?;
    Ok(out)
}

async fn measure(s: &Settings, engine: Engine, server: &Server, store: &Store) -> Result<Value> {
    let size = batch_size(s);
    let agents: Vec<(Agent, Agent)> = (0..s.pairs)
        .map(|i| {
            Ok((
                Agent::new(server, &format!("alice-{i}"), &["a2a.send.*"])?,
                Agent::new(server, &format!("worker-{i}"), &["a2a.respond.*"])?,
            ))
        })
        .collect::<Result<_>>()?;
    // Warm-up: one full batch a pair (connections opened, statements prepared), not recorded.
    join_all(
        agents
            .iter()
            .enumerate()
            .map(|(i, pair)| run_pair(i, pair, size, size, None)),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    let pg_before = match engine {
        Engine::Postgres => store.pg_counters().await?,
        Engine::Sqlite => Value::Null,
    };
    let probe = Agent::new(server, "bench-operator", &["a2a.operator"])?;
    let metrics_before = crate::load::scrape(&probe).await.unwrap_or_default();
    let shares = crate::load::split(s.tasks, s.pairs);
    let p = Progress::start(
        format!("{} batches of {size} (tasks)", engine.name()),
        s.tasks as u64,
    );
    let cpu = CpuMeter::start(server.pid, engine == Engine::Postgres);
    let t0 = Instant::now();
    let per_pair = join_all(
        agents
            .iter()
            .enumerate()
            .map(|(i, pair)| run_pair(i, pair, shares[i], size, Some(&p))),
    )
    .await;
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu.finish(s.tasks);
    p.finish();
    let mut all = Rec::default();
    for r in per_pair {
        all.add(&r?);
    }
    let metrics_after = crate::load::scrape(&probe).await.unwrap_or_default();
    let [send, lease, result, drain] = all.requests;
    let requests = send + lease + result + drain;
    let tasks_per_s = s.tasks as f64 / secs;
    let per_task = |x: u64| round3(x as f64 / s.tasks.max(1) as f64);
    Ok(json!({
        "server_metrics_per_task": crate::load::metrics_delta(&metrics_before, &metrics_after, s.tasks),
        "tasks": s.tasks,
        "pairs": s.pairs,
        "batch_size": size,
        "batches": all.batch.0.len(),
        "warmup_tasks": size * s.pairs,
        "checked_tasks": all.checked,
        "secs": round3(secs),
        "tasks_per_s": round1(tasks_per_s),
        "requests_per_s": round1(requests as f64 / secs),
        "requests": {"send": send, "lease": lease, "result": result, "drain": drain, "total": requests},
        "requests_per_task": per_task(requests),
        "errors": 0,
        "ops": {
            "send": all.send.summary(),
            "lease": all.lease.summary(),
            "result": all.result.summary(),
            "drain": all.drain.summary(),
            "batch": all.batch.summary(),
        },
        "ops_unit": "one batch: each step's latency (a lease or drain step may take several requests), `batch` the whole batch's life",
        "cpu": cpu,
        "cpu_unit": "task",
        "pg_counters_before": pg_before,
        "shape": format!("closed loop in batches of {size}: each pair sends a batch (POST /a2a/tasks/batch), its worker leases it (GET /a2a/tasks/next?max={size}&wait_ms=1000) and answers it (POST /a2a/results/batch, each result fenced by its lease id), its sender drains the results (GET /a2a/results/next?max={size}&wait_ms=1000), then the next batch"),
    }))
}
