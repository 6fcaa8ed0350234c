//! The load: agents speaking HTTP to the real server (lifecycle, depth, /healthz).

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures_util::future::join_all;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::db::Store;
use crate::progress::Progress;
use crate::server::{Engine, Server, JWT_SECRET};
use crate::stats::{round1, round3, CpuMeter, CpuTotals, Samples};
use crate::Settings;

/// One agent: its own HTTP client (its own keep-alive connection pool) and its token.
pub struct Agent {
    http: reqwest::Client,
    base: String,
    auth: String,
}

pub fn mint(sub: &str, caps: &[&str]) -> Result<String> {
    let exp = crate::stats::unix_secs() + 24 * 3600;
    let claims = json!({"sub": sub, "exp": exp, "caps": caps});
    Ok(jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(JWT_SECRET.as_bytes()),
    )?)
}

impl Agent {
    pub fn new(server: &Server, sub: &str, caps: &[&str]) -> Result<Agent> {
        Ok(Agent {
            http: crate::scale::client()?,
            base: server.base.clone(),
            auth: format!("Bearer {}", mint(sub, caps)?),
        })
    }

    async fn finish(&self, what: &str, rb: reqwest::RequestBuilder, expect: u16) -> Result<Value> {
        let resp = rb
            .header("authorization", &self.auth)
            .send()
            .await
            .with_context(|| format!("{what}: request failed"))?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await?;
        if status != expect {
            bail!(
                "{what}: HTTP {status} (expected {expect}): {}",
                String::from_utf8_lossy(&bytes)
            );
        }
        Ok(serde_json::from_slice(&bytes)?)
    }

    pub async fn post(&self, path: &str, body: &Value, expect: u16) -> Result<Value> {
        let rb = self.http.post(format!("{}{path}", self.base)).json(body);
        self.finish(path, rb, expect).await
    }

    pub async fn get(&self, path: &str, expect: u16) -> Result<Value> {
        let rb = self.http.get(format!("{}{path}", self.base));
        self.finish(path, rb, expect).await
    }
}

#[derive(Default)]
struct LifeSamples {
    send: Samples,
    lease: Samples,
    result: Samples,
    drain: Samples,
    task: Samples,
}

/// One task's full life: send → lease → result → drain, each step checked.
async fn one_life(
    i: usize,
    sender: &Agent,
    worker: &Agent,
    rec: Option<&mut LifeSamples>,
) -> Result<()> {
    let id = Uuid::new_v4();
    let task = json!({
        "id": id,
        "sender": format!("alice-{i}"),
        "recipient": format!("worker-{i}"),
        "intent_text": "summarise the attached report and answer with three bullet points",
    });
    let t0 = Instant::now();
    sender.post("/a2a/tasks", &task, 201).await?;
    let t1 = Instant::now();
    let leased = worker.get("/a2a/tasks/next?wait_ms=1000", 200).await?;
    let t2 = Instant::now();
    if leased["task"]["id"].as_str() != Some(id.to_string().as_str()) {
        bail!("worker-{i} leased {} instead of {id}", leased["task"]["id"]);
    }
    let lease_id = leased["lease"]["lease_id"].clone();
    let result = json!({
        "task_id": id,
        "status": "ok",
        "lease_id": lease_id,
        "content": [{"type": "text", "text": "done"}],
    });
    worker.post("/a2a/results", &result, 201).await?;
    let t3 = Instant::now();
    let drained = sender.get("/a2a/results/next?wait_ms=1000", 200).await?;
    let t4 = Instant::now();
    if drained["result"]["task_id"].as_str() != Some(id.to_string().as_str()) {
        bail!("alice-{i} drained {} instead of {id}", drained["result"]);
    }
    if let Some(r) = rec {
        r.send.push(t1 - t0);
        r.lease.push(t2 - t1);
        r.result.push(t3 - t2);
        r.drain.push(t4 - t3);
        r.task.push(t4 - t0);
    }
    Ok(())
}

pub(crate) fn split(total: usize, parts: usize) -> Vec<usize> {
    (0..parts)
        .map(|i| total / parts + usize::from(i < total % parts))
        .collect()
}

fn pair_agents(server: &Server, pairs: usize) -> Result<Vec<(Agent, Agent)>> {
    (0..pairs)
        .map(|i| {
            Ok((
                Agent::new(server, &format!("alice-{i}"), &["a2a.send.*"])?,
                Agent::new(server, &format!("worker-{i}"), &["a2a.respond.*"])?,
            ))
        })
        .collect()
}

/// How a pair drives its task lives.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// [`one_life`] after [`one_life`]: the closed loop.
    Chain,
    /// [`agent_pair`]: a worker and a sender working at once, waiting in long-polls.
    Agents,
}

/// One pair's share of task lives in `shape`.
async fn run_pair(
    shape: Shape,
    i: usize,
    (sender, worker): &(Agent, Agent),
    n: usize,
    progress: Option<&Progress>,
) -> Result<LifeSamples> {
    if shape == Shape::Agents {
        return agent_pair(i, sender, worker, n, progress).await;
    }
    let mut rec = LifeSamples::default();
    for _ in 0..n {
        one_life(i, sender, worker, Some(&mut rec)).await?;
        if let Some(p) = progress {
            p.inc(1);
        }
    }
    Ok(rec)
}

/// What [`measure`] measured.
struct Measured {
    samples: LifeSamples,
    secs: f64,
    cpu: Value,
    server_metrics_per_task: Value,
    pg_before: Value,
}

/// `pairs` concurrent pairs each drive their share of `s.tasks` task lives in `shape`, after a
/// warm-up (connections opened, statements prepared, caches filled; not recorded). Reads
/// PostgreSQL's counters after the warm-up when `store` is given.
async fn measure(
    s: &Settings,
    engine: Engine,
    server: &Server,
    shape: Shape,
    store: Option<&Store>,
) -> Result<Measured> {
    let agents = pair_agents(server, s.pairs)?;
    join_all(
        agents
            .iter()
            .enumerate()
            .map(|(i, pair)| run_pair(shape, i, pair, s.warmup_tasks, None)),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    let pg_before = match store {
        Some(store) => store.pg_counters().await?,
        None => Value::Null,
    };
    let probe = Agent::new(server, "bench-operator", &["a2a.operator"])?;
    let metrics_before = scrape(&probe).await.unwrap_or_default();
    let shares = split(s.tasks, s.pairs);
    let label = match shape {
        Shape::Chain => "lifecycle",
        Shape::Agents => "lifecycle, waiting agents",
    };
    let p = Progress::start(format!("{} {label} (tasks)", engine.name()), s.tasks as u64);
    let cpu = CpuMeter::start(server.pid, engine == Engine::Postgres);
    let t0 = Instant::now();
    let per_pair = join_all(
        agents
            .iter()
            .enumerate()
            .map(|(i, pair)| run_pair(shape, i, pair, shares[i], Some(&p))),
    )
    .await;
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu.finish(s.tasks);
    p.finish();
    let mut samples = LifeSamples::default();
    for r in per_pair {
        let r = r?;
        samples.send.extend(&r.send);
        samples.lease.extend(&r.lease);
        samples.result.extend(&r.result);
        samples.drain.extend(&r.drain);
        samples.task.extend(&r.task);
    }
    let metrics_after = scrape(&probe).await.unwrap_or_default();
    Ok(Measured {
        samples,
        secs,
        cpu,
        server_metrics_per_task: metrics_delta(&metrics_before, &metrics_after, s.tasks),
        pg_before,
    })
}

/// Lifecycle throughput: `pairs` concurrent sender/worker pairs each drive their share of
/// task lives back to back.
pub async fn lifecycle(
    s: &Settings,
    engine: Engine,
    server: &Server,
    store: &Store,
) -> Result<Value> {
    let pg = (engine == Engine::Postgres).then_some(store);
    let m = measure(s, engine, server, Shape::Chain, pg).await?;
    let tasks_per_s = s.tasks as f64 / m.secs;
    let all = &m.samples;
    Ok(json!({
        "server_metrics_per_task": m.server_metrics_per_task,
        "tasks": s.tasks,
        "pairs": s.pairs,
        "warmup_tasks": s.warmup_tasks * s.pairs,
        "secs": round3(m.secs),
        "tasks_per_s": round1(tasks_per_s),
        "requests_per_s": round1(4.0 * tasks_per_s),
        "errors": 0,
        "ops": {
            "send": all.send.summary(),
            "lease": all.lease.summary(),
            "result": all.result.summary(),
            "drain": all.drain.summary(),
            "task": all.task.summary(),
        },
        "cpu": m.cpu,
        "cpu_unit": "task",
        "pg_counters_before": m.pg_before,
        "shape": "closed loop: each pair runs one task's four requests back to back, then the next task",
    }))
}

/// How long a waiting agent goes without progress before the run fails.
const STUCK: Duration = Duration::from_secs(30);

/// One sender/worker pair as two agents working at once, the way agents use a mailbox: the
/// worker waits in long-polls for its next task and answers it; the sender sends a task, waits
/// in a long-poll for its result, and sends the next. Unlike [`one_life`], a poll is usually
/// waiting before the task or result it gets exists.
async fn agent_pair(
    i: usize,
    sender: &Agent,
    worker: &Agent,
    n: usize,
    progress: Option<&Progress>,
) -> Result<LifeSamples> {
    let me = format!("alice-{i}");
    let work = async {
        let mut results = Samples::default();
        let mut done = 0;
        let mut since = Instant::now();
        while done < n {
            let leased = worker.get("/a2a/tasks/next?wait_ms=1000", 200).await?;
            let Some(id) = leased["task"]["id"].as_str() else {
                if since.elapsed() > STUCK {
                    bail!("worker-{i} waited {STUCK:?} for its next task (a lost lease?)");
                }
                continue;
            };
            since = Instant::now();
            if leased["task"]["sender"].as_str() != Some(me.as_str()) {
                bail!("worker-{i} leased {id} of {}", leased["task"]["sender"]);
            }
            let result = json!({
                "task_id": id,
                "status": "ok",
                "lease_id": leased["lease"]["lease_id"],
                "content": [{"type": "text", "text": "done"}],
            });
            let t = Instant::now();
            worker.post("/a2a/results", &result, 201).await?;
            results.push(t.elapsed());
            done += 1;
        }
        Ok::<_, anyhow::Error>(results)
    };
    let send = async {
        let (mut sends, mut lives) = (Samples::default(), Samples::default());
        for _ in 0..n {
            let id = Uuid::new_v4();
            let task = json!({
                "id": id,
                "sender": me,
                "recipient": format!("worker-{i}"),
                "intent_text": "summarise the attached report and answer with three bullet points",
            });
            let t0 = Instant::now();
            sender.post("/a2a/tasks", &task, 201).await?;
            sends.push(t0.elapsed());
            loop {
                let drained = sender.get("/a2a/results/next?wait_ms=1000", 200).await?;
                match drained["result"]["task_id"].as_str() {
                    None if t0.elapsed() > STUCK => {
                        bail!(
                            "{me} waited {STUCK:?} for the result of {id} (a lost lease or drain?)"
                        )
                    }
                    None => continue,
                    Some(got) if got == id.to_string() => break,
                    Some(got) => bail!("{me} drained {got} instead of {id}"),
                }
            }
            lives.push(t0.elapsed());
            if let Some(p) = progress {
                p.inc(1);
            }
        }
        Ok::<_, anyhow::Error>((sends, lives))
    };
    let (result, (send, task)) = tokio::try_join!(work, send)?;
    // A waiting poll's latency is mostly waiting: only sends, results and whole lives count.
    Ok(LifeSamples {
        send,
        result,
        task,
        ..LifeSamples::default()
    })
}

/// Lifecycle throughput with waiting agents: `pairs` concurrent pairs of [`agent_pair`], the
/// same number of task lives as [`lifecycle`].
pub async fn lifecycle_agents(s: &Settings, engine: Engine, server: &Server) -> Result<Value> {
    let m = measure(s, engine, server, Shape::Agents, None).await?;
    let all = &m.samples;
    Ok(json!({
        "server_metrics_per_task": m.server_metrics_per_task,
        "tasks": s.tasks,
        "pairs": s.pairs,
        "secs": round3(m.secs),
        "tasks_per_s": round1(s.tasks as f64 / m.secs),
        "ops": {
            "send": all.send.summary(),
            "result": all.result.summary(),
            "task": all.task.summary(),
        },
        "cpu": m.cpu,
        "cpu_unit": "task",
        "shape": "waiting agents: each pair's worker waits in GET /a2a/tasks/next?wait_ms=1000 and answers what it leases; its sender sends, waits in GET /a2a/results/next?wait_ms=1000 for the result, and sends the next",
    }))
}

/// Plain HTTP requests per second to /healthz of the real server, same clients and concurrency.
pub async fn healthz(s: &Settings, engine: Engine, server: &Server) -> Result<Value> {
    let agents: Vec<Agent> = (0..s.pairs)
        .map(|i| Agent::new(server, &format!("probe-{i}"), &[]))
        .collect::<Result<_>>()?;
    for a in &agents {
        a.get("/healthz", 200).await?;
    }
    let p = Progress::start(format!("{} /healthz", engine.name()), 0);
    let cpu = CpuMeter::start(server.pid, engine == Engine::Postgres);
    let deadline = Instant::now() + s.baseline;
    let t0 = Instant::now();
    let per = join_all(agents.iter().map(|a| {
        let p = p.clone();
        async move {
            let mut smp = Samples::default();
            while Instant::now() < deadline {
                let t = Instant::now();
                a.get("/healthz", 200).await?;
                smp.push(t.elapsed());
                p.inc(1);
            }
            Ok::<_, anyhow::Error>(smp)
        }
    }))
    .await;
    let secs = t0.elapsed().as_secs_f64();
    p.finish();
    let mut all = Samples::default();
    for r in per {
        all.extend(&r?);
    }
    let mut v = all.summary();
    v["concurrency"] = json!(s.pairs);
    v["secs"] = json!(round3(secs));
    v["per_s"] = json!(round1(all.0.len() as f64 / secs));
    v["cpu"] = cpu.finish(all.0.len());
    v["cpu_unit"] = json!("request");
    Ok(v)
}

/// Lease-claim and send latency with deep queues, loaded in bulk, and the server's peak RSS.
pub async fn depth(s: &Settings, engine: Engine) -> Result<Value> {
    // Every depth gets its own database and server, loaded and warmed up before any measurement.
    let mut stages = Vec::new();
    for &d in &s.depths {
        let phase = format!("depth-{d}");
        let store = Store::fresh(s, engine, &phase).await?;
        let server = Server::start(s, engine, &store, &phase).await?;
        let load = store
            .bulk_load(
                s,
                d,
                s.pairs,
                &format!("{} bulk load to {d}", engine.name()),
            )
            .await?;
        let queued_before = store.queued().await?;
        let agents = pair_agents(&server, s.pairs)?;
        // Warm-up: each worker sends one task and claims one (the depth does not change).
        for (i, (a, w)) in agents.iter().enumerate() {
            send_one(i, a).await?;
            w.get("/a2a/tasks/next?wait_ms=1000", 200).await?;
        }
        stages.push(DepthStage {
            d,
            store,
            server,
            agents,
            load,
            queued_before,
            send: Samples::default(),
            lease: Samples::default(),
            cpu: CpuTotals::default(),
            pg: serde_json::Map::new(),
        });
    }
    // The measured windows alternate between the depths, round after round (the order reversed
    // every other round), so whatever varies with time (a checkpoint, a neighbour's burst, the
    // machine's drift) falls on every depth alike instead of on the one measured at that moment.
    let rounds = s.depth_rounds;
    for (r, ops) in split(s.depth_ops, rounds).into_iter().enumerate() {
        let mut order: Vec<usize> = (0..stages.len()).collect();
        if r % 2 == 1 {
            order.reverse();
        }
        for i in order {
            stages[i].window(engine, ops, (r + 1, rounds)).await?;
        }
    }
    let mut rows = Vec::new();
    for st in stages {
        rows.push(st.diagnose_and_stop(s, engine).await?);
    }
    Ok(Value::Array(rows))
}

/// One depth of the depth phase: its own store and server, and what its windows measured.
struct DepthStage {
    d: u64,
    store: Store,
    server: Server,
    agents: Vec<(Agent, Agent)>,
    load: Value,
    queued_before: u64,
    send: Samples,
    lease: Samples,
    cpu: CpuTotals,
    pg: serde_json::Map<String, Value>,
}

impl DepthStage {
    /// One measured window: `ops` sends and lease claims by all pairs at once, each worker
    /// claiming right after its sender sent (the depth does not change).
    async fn window(
        &mut self,
        engine: Engine,
        ops: usize,
        (round, rounds): (usize, usize),
    ) -> Result<()> {
        let d = self.d;
        let shares = split(ops, self.agents.len());
        let p = Progress::start(
            format!(
                "{} depth {d} round {round}/{rounds} (send+lease)",
                engine.name()
            ),
            ops as u64,
        );
        let pg_before = if engine == Engine::Postgres {
            Some(self.store.pg_counters().await?)
        } else {
            None
        };
        let cpu = CpuMeter::start(self.server.pid, engine == Engine::Postgres);
        let per = join_all(self.agents.iter().enumerate().map(|(i, (a, w))| {
            let n = shares[i];
            let p = p.clone();
            async move {
                let (mut send, mut lease) = (Samples::default(), Samples::default());
                for _ in 0..n {
                    let t = Instant::now();
                    send_one(i, a).await?;
                    send.push(t.elapsed());
                    let t = Instant::now();
                    let got = w.get("/a2a/tasks/next?wait_ms=1000", 200).await?;
                    lease.push(t.elapsed());
                    if got["task"].is_null() {
                        bail!("worker-{i} found no task at depth {d}");
                    }
                    p.inc(1);
                }
                Ok::<_, anyhow::Error>((send, lease))
            }
        }))
        .await;
        self.cpu.add(cpu.take());
        if let Some(before) = pg_before {
            let after = self.store.pg_counters().await?;
            crate::db::pg_counter_add(&mut self.pg, &before, &after);
        }
        p.finish();
        for r in per {
            let (a, b) = r?;
            self.send.extend(&a);
            self.lease.extend(&b);
        }
        Ok(())
    }

    /// The depth's diagnostics (one client alone, a lonely recipient, an operator's views),
    /// its row of the report; then its server stops and its store goes.
    async fn diagnose_and_stop(self, s: &Settings, engine: Engine) -> Result<Value> {
        let DepthStage {
            d,
            store: db,
            server: srv,
            agents,
            load,
            queued_before,
            send,
            lease,
            cpu,
            pg,
        } = self;
        let (server, store) = (&srv, &db);
        let operator = Agent::new(server, "bench-operator", &["a2a.operator"])?;
        // What an operator's dashboard does at this depth (a few samples, not a target).
        let mut metrics = Samples::default();
        let mut queue_view = Samples::default();
        for _ in 0..3 {
            let t = Instant::now();
            let resp = operator
                .http
                .get(format!("{}/metrics", operator.base))
                .send()
                .await?;
            resp.bytes().await?;
            metrics.push(t.elapsed());
            let t = Instant::now();
            operator.get("/a2a/queue?limit=10", 200).await?;
            queue_view.push(t.elapsed());
        }
        // The same claim cost without the other 15 clients queueing in front of it: one
        // client, one send and one lease at a time.
        let serial_n = (s.depth_ops / 4).max(1);
        let p = Progress::start(
            format!("{} depth {d} (1 client)", engine.name()),
            serial_n as u64,
        );
        let (mut serial_send, mut serial_lease) = (Samples::default(), Samples::default());
        let (a, w) = &agents[0];
        for _ in 0..serial_n {
            let t = Instant::now();
            send_one(0, a).await?;
            serial_send.push(t.elapsed());
            let t = Instant::now();
            let got = w.get("/a2a/tasks/next?wait_ms=1000", 200).await?;
            serial_lease.push(t.elapsed());
            if got["task"].is_null() {
                bail!("worker-0 found no task at depth {d}");
            }
            p.inc(1);
        }
        p.finish();
        // A recipient with ONE task at the end of the deep queue: its claim must not walk the
        // other recipients' rows (a plan that scans the global FIFO and filters does).
        let lonely_n = if s.smoke { 3 } else { 20 };
        let mut lonely = Samples::default();
        for k in 0..lonely_n {
            let who = format!("lonely-{k}");
            let task = json!({
                "id": Uuid::new_v4(),
                "sender": "alice-0",
                "recipient": who,
                "intent_text": "the only task of its recipient",
            });
            agents[0].0.post("/a2a/tasks", &task, 201).await?;
            let l = Agent::new(server, &who, &[])?;
            let t = Instant::now();
            let got = l.get("/a2a/tasks/next?wait_ms=1000", 200).await?;
            lonely.push(t.elapsed());
            if got["task"].is_null() {
                bail!("{who} found no task at depth {d}");
            }
        }
        // One page of the task list (newest first, 50 tasks) and the page after it: its cost
        // must not grow with the tasks that are not on it.
        let list_n = if s.smoke { 3 } else { 200 };
        let (mut list_first, mut list_next) = (Samples::default(), Samples::default());
        for _ in 0..list_n {
            let t = Instant::now();
            let page = operator.get("/a2a/tasks?limit=50", 200).await?;
            list_first.push(t.elapsed());
            let Some(cursor) = page["next_cursor"].as_str() else {
                bail!("depth {d}: the first page of the task list has no cursor");
            };
            let t = Instant::now();
            operator
                .get(&format!("/a2a/tasks?limit=50&cursor={cursor}"), 200)
                .await?;
            list_next.push(t.elapsed());
        }
        let queued_after = store.queued().await?;
        let maintenance = if engine == Engine::Postgres {
            store.pg_maintenance().await?
        } else {
            Value::Null
        };
        let measured = s.depth_ops;
        let row = json!({
            "depth": d,
            "load": load,
            "queued_before": queued_before,
            "queued_after": queued_after,
            "ops": measured,
            "rounds": s.depth_rounds,
            "secs": round3(cpu.wall()),
            "send": send.summary(),
            "lease": lease.summary(),
            "serial": {"send": serial_send.summary(), "lease": serial_lease.summary()},
            "pg_tasks_maintenance_after": maintenance,
            "lonely_lease": lonely.summary(),
            "metrics_scrape": metrics.summary(),
            "queue_view_limit_10": queue_view.summary(),
            "list_page_limit_50": {"first": list_first.summary(), "next": list_next.summary()},
            "server_vmhwm_kib": server.vm_kib("VmHWM"),
            "server_vmrss_kib": server.vm_kib("VmRSS"),
            "cpu": cpu.report(measured),
            "cpu_unit": "send + lease",
            "postgres": if engine == Engine::Postgres {
                crate::db::pg_counter_per_unit(&pg, measured)
            } else {
                Value::Null
            },
        });
        // Close the agents' keep-alive connections first, so the server stops without waiting.
        drop((operator, agents));
        srv.stop().await?;
        db.drop_it(s).await?;
        Ok(row)
    }
}

async fn send_one(i: usize, a: &Agent) -> Result<()> {
    let task = json!({
        "id": Uuid::new_v4(),
        "sender": format!("alice-{i}"),
        "recipient": format!("worker-{i}"),
        "intent_text": "summarise the attached report and answer with three bullet points",
    });
    a.post("/a2a/tasks", &task, 201).await?;
    Ok(())
}

/// The server's Prometheus counters (`name{labels}` → value); histogram buckets left out.
pub(crate) async fn scrape(a: &Agent) -> Result<Vec<(String, f64)>> {
    let text = a
        .http
        .get(format!("{}/metrics", a.base))
        .header("authorization", &a.auth)
        .send()
        .await?
        .text()
        .await?;
    Ok(text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains("_bucket{"))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_owned(), v.parse().ok()?))
        })
        .collect())
}

/// Per-task change of every server counter that moved during a phase (what the server says it
/// did: leases, commits, group sizes... whatever it exports).
pub(crate) fn metrics_delta(
    before: &[(String, f64)],
    after: &[(String, f64)],
    units: usize,
) -> Value {
    let mut out = serde_json::Map::new();
    for (k, a) in after {
        let b = before
            .iter()
            .find(|(bk, _)| bk == k)
            .map_or(0.0, |(_, v)| *v);
        if (a - b).abs() > 0.0 && !k.contains("seconds") && !k.contains("depth") {
            out.insert(k.clone(), json!(round3((a - b) / units.max(1) as f64)));
        }
    }
    Value::Object(out)
}
