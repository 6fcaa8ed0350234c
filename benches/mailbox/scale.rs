//! What the scale phases share: their settings, a light HTTP caller that reports the status
//! instead of failing on it, the server's metrics and process counters, a seeded RNG, and the
//! `waiting` phase (the lifecycle with 1,024 waiting agents).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::db::Store;
use crate::load;
use crate::server::{Engine, Server};
use crate::stats::round3;
use crate::Settings;

/// The scale phases' sizes (full run / smoke run).
#[derive(Clone, Debug)]
pub struct Config {
    /// Sender/worker pairs of the `waiting` and `handoff` phases.
    pub waiting_pairs: usize,
    /// Serial hand-off samples of the `handoff` phase.
    pub handoff_samples: usize,
    /// Callers of the `parked` phase, and long-polls each.
    pub parked_callers: usize,
    pub parked_per_caller: usize,
    /// Seconds of the `parked` phase's CPU window and of its wait before the last RSS reading.
    pub parked_window: Duration,
    /// Tasks of each open-loop rate.
    pub openloop_tasks: usize,
    /// Hand-off samples and waiting workers of the `instances` phase (2,000 samples: the p99 of
    /// 500 is their fifth-worst, and the ratio of two such p99s moved from 0.7 to 3.5 between
    /// runs).
    pub instances_handoffs: usize,
    pub instances_waiting: usize,
    /// Open A2A streams of the `streams` phase.
    pub streams: usize,
}

impl Config {
    pub fn new(smoke: bool, waiting_pairs: Option<usize>) -> Config {
        Config {
            waiting_pairs: waiting_pairs.unwrap_or(if smoke { 8 } else { 512 }),
            handoff_samples: if smoke { 50 } else { 2_000 },
            parked_callers: if smoke { 20 } else { 1_000 },
            parked_per_caller: 10,
            parked_window: Duration::from_secs(if smoke { 2 } else { 10 }),
            openloop_tasks: if smoke { 100 } else { 10_000 },
            instances_handoffs: if smoke { 30 } else { 2_000 },
            instances_waiting: if smoke { 8 } else { 64 },
            streams: if smoke { 40 } else { 1_000 },
        }
    }
}

/// An HTTP client of the harness: its own connection pool, and no root certificates loaded
/// (plain HTTP only), so a thousand of them are cheap to make. An idle connection is not reused
/// once the server may be closing it: a request written on it would be lost unanswered, and the
/// run would fail on a race of the harness's own making.
pub fn client() -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .tls_built_in_root_certs(false)
        .pool_idle_timeout(a2a_mailbox_types::IDLE_CONNECTION_REUSE)
        .timeout(Duration::from_secs(60))
        .build()?)
}

/// One caller (its own token) on one server; answers the status, the body and the instant the
/// body had been read.
#[derive(Clone)]
pub struct Caller {
    http: reqwest::Client,
    base: String,
    auth: String,
}

impl Caller {
    pub fn new(base: &str, sub: &str, caps: &[&str]) -> Result<Caller> {
        Caller::with_client(client()?, base, sub, caps)
    }

    pub fn with_client(
        http: reqwest::Client,
        base: &str,
        sub: &str,
        caps: &[&str],
    ) -> Result<Caller> {
        Ok(Caller {
            http,
            base: base.to_owned(),
            auth: format!("Bearer {}", load::mint(sub, caps)?),
        })
    }

    pub async fn call(&self, path: &str, body: Option<&Value>) -> Result<(u16, Value, Instant)> {
        let url = format!("{}{path}", self.base);
        let rb = match body {
            Some(b) => self.http.post(url).json(b),
            None => self.http.get(url),
        };
        let resp = rb
            .header("authorization", &self.auth)
            .send()
            .await
            .with_context(|| format!("{path}: request failed"))?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await?;
        let at = Instant::now();
        let v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok((status, v, at))
    }

    /// A call that must answer `expect`.
    pub async fn must(
        &self,
        path: &str,
        body: Option<&Value>,
        expect: u16,
    ) -> Result<(Value, Instant)> {
        let (status, v, at) = self.call(path, body).await?;
        anyhow::ensure!(
            status == expect,
            "{path}: HTTP {status} (expected {expect}): {v}"
        );
        Ok((v, at))
    }
}

/// A task from `sender` to `recipient`.
pub fn task(id: &str, sender: &str, recipient: &str) -> Value {
    json!({
        "id": id,
        "sender": sender,
        "recipient": recipient,
        "intent_text": "summarise the attached report and answer with three bullet points",
    })
}

/// The result of a leased task (`leased` is the lease response).
pub fn result_of(leased: &Value) -> Value {
    json!({
        "task_id": leased["task"]["id"],
        "status": "ok",
        "lease_id": leased["lease"]["lease_id"],
        "content": [{"type": "text", "text": "done"}],
    })
}

/// The server's metrics now (`name{labels}` → value; empty when /metrics does not answer).
pub async fn metrics(server: &Server) -> Vec<(String, f64)> {
    let text = async {
        let c = Caller::new(&server.base, "bench-operator", &["a2a.operator"])?;
        let resp = c
            .http
            .get(format!("{}/metrics", c.base))
            .header("authorization", &c.auth)
            .send()
            .await?;
        Ok::<_, anyhow::Error>(resp.text().await?)
    };
    let Ok(text) = text.await else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.contains("_bucket{"))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_owned(), v.parse().ok()?))
        })
        .collect()
}

/// One metric (summed over its label sets), `None` when the server does not export it.
pub fn metric(m: &[(String, f64)], name: &str) -> Option<f64> {
    let mut found = None;
    for (k, v) in m {
        let base = k.split('{').next().unwrap_or(k);
        if base == name {
            found = Some(found.unwrap_or(0.0) + v);
        }
    }
    found
}

/// The change of a counter between two scrapes, `None` when it is missing from either.
pub fn metric_delta(before: &[(String, f64)], after: &[(String, f64)], name: &str) -> Option<f64> {
    Some(metric(after, name)? - metric(before, name)?)
}

/// Server process readings from /proc.
pub fn rss_kib(pid: u32) -> Option<u64> {
    crate::stats::proc_status_kib(pid, "VmRSS")
}

pub fn cpu_secs(pid: u32) -> f64 {
    crate::stats::proc_cpu_secs(pid, crate::stats::clk_tck())
}

/// Open file descriptors of a process (sockets included).
pub fn open_fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// TCP sockets on 127.0.0.1 whose local port is `base`'s: (established, close-wait). A
/// close-wait socket is one whose client has closed it and whose server has not yet.
pub fn tcp_states(base: &str) -> (usize, usize) {
    let Some(port) = base
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse::<u16>().ok())
    else {
        return (0, 0);
    };
    let want = format!(":{port:04X}");
    let (mut est, mut wait) = (0, 0);
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table)
            .unwrap_or_default()
            .lines()
            .skip(1)
        {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 3 && f[1].ends_with(&want) {
                match f[3] {
                    "01" => est += 1,
                    "08" => wait += 1,
                    _ => {}
                }
            }
        }
    }
    (est, wait)
}

/// The soft and hard open-file limits of a process.
pub fn nofile(pid: u32) -> Option<(String, String)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    Some((f.get(3)?.to_string(), f.get(4)?.to_string()))
}

/// Raises this process's soft RLIMIT_NOFILE to its hard limit (with util-linux `prlimit`, so no
/// unsafe code), before any server is spawned: the servers inherit it. Says what it did.
pub fn raise_nofile() -> String {
    let me = std::process::id();
    let Some((soft, hard)) = nofile(me) else {
        return "unknown (no /proc/self/limits)".into();
    };
    if soft == hard {
        return format!("soft = hard = {hard}");
    }
    let ok = std::process::Command::new("prlimit")
        .arg(format!("--pid={me}"))
        .arg(format!("--nofile={hard}:{hard}"))
        .status()
        .is_ok_and(|s| s.success());
    let now = nofile(me).map_or("?".into(), |(s, _)| s);
    format!(
        "soft {soft} -> {now} (hard {hard}){}",
        if ok { "" } else { "; prlimit failed" }
    )
}

/// xorshift64*: a seeded generator for the open loop's arrival times.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((x >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Exponentially distributed with mean `1 / rate`.
    pub fn exp(&mut self, rate: f64) -> f64 {
        -self.unit().ln() / rate
    }
}

/// The 16-pair closed-loop lifecycle's tasks/s of this run: the lifecycle phase's when it ran,
/// else measured now ([`closed_loop_now`]). Answers (tasks/s, reused, its JSON).
pub async fn closed_loop_rate(
    s: &Settings,
    engine: Engine,
    out: &Value,
) -> Result<(f64, bool, Value)> {
    for path in [&out["lifecycle"], &out["waiting"]["lifecycle"]] {
        if let Some(tps) = path["tasks_per_s"].as_f64() {
            return Ok((tps, true, path.clone()));
        }
    }
    let (tps, l) = closed_loop_now(s, engine).await?;
    Ok((tps, false, l))
}

/// The 16-pair closed-loop lifecycle measured now, on a fresh database and server of its own.
/// Answers (tasks/s, its JSON).
pub async fn closed_loop_now(s: &Settings, engine: Engine) -> Result<(f64, Value)> {
    let store = Store::fresh(s, engine, "scale-life").await?;
    let server = Server::start(s, engine, &store, "scale-life").await?;
    let mut l = load::lifecycle(s, engine, &server, &store).await?;
    server.stop().await?;
    store.drop_it(s).await?;
    if let Some(o) = l.as_object_mut() {
        o.remove("pg_counters_before");
    }
    Ok((l["tasks_per_s"].as_f64().unwrap_or(0.0), l))
}

/// `waiting`: the lifecycle with 1,024 waiting agents (512 pairs of `lifecycle_agents`), and the
/// same run's 16-pair closed loop to compare with.
pub async fn waiting(s: &Settings, engine: Engine, out: &Value) -> Result<Value> {
    let pairs = s.scale.waiting_pairs;
    let mut big = s.clone();
    big.pairs = pairs;
    // One warm-up task per pair opens every agent's connection; 512 × 10 would be a run of its own.
    big.warmup_tasks = 1;
    let store = Store::fresh(s, engine, "waiting").await?;
    let server = Server::start(s, engine, &store, "waiting").await?;
    let run = load::lifecycle_agents(&big, engine, &server).await?;
    let rss = rss_kib(server.pid);
    server.stop().await?;
    store.drop_it(s).await?;
    let (life_tps, reused, life) = closed_loop_rate(s, engine, out).await?;
    let tps = run["tasks_per_s"].as_f64().unwrap_or(0.0);
    let per_task = &run["server_metrics_per_task"];
    Ok(json!({
        "pairs": pairs,
        "agents": 2 * pairs,
        "tasks": s.tasks,
        "tasks_per_s": tps,
        "lifecycle_pairs": s.pairs,
        "lifecycle_tasks_per_s": life_tps,
        "lifecycle_reused_from_this_run": reused,
        "lifecycle": if reused { Value::Null } else { life },
        "over_lifecycle": if life_tps > 0.0 { json!(round3(tps / life_tps)) } else { Value::Null },
        "wakeups_per_task": per_task.get("a2a_wakeups_total").cloned().unwrap_or(Value::Null),
        "server_metrics_per_task": per_task,
        "server_vmrss_kib_after": rss,
        "run": run,
        "shape": format!("{pairs} pairs of waiting agents (lifecycle_agents: each worker long-polls its own recipient, each sender long-polls its results, wait_ms=1000), closed loop; compared with the closed loop of {} pairs (lifecycle)", s.pairs),
    }))
}

/// The smoke run's checks of the scale phases: each ran and counted right (never timing).
pub fn smoke_checks(s: &Settings, e: &str, r: &Value, check: &mut dyn FnMut(bool, String)) {
    let pos = |v: &Value| v.as_f64().is_some_and(|x| x > 0.0);
    if s.phase("waiting") {
        let w = &r["waiting"];
        check(
            pos(&w["tasks_per_s"])
                && pos(&w["lifecycle_tasks_per_s"])
                && pos(&w["over_lifecycle"])
                && w["run"]["ops"]["task"]["n"].as_u64() == Some(s.tasks as u64),
            format!("{e}: waiting agents ran every task"),
        );
    }
    if s.phase("handoff") {
        let h = &r["handoff"];
        check(
            h["handoff"]["n"].as_u64() == Some(s.scale.handoff_samples as u64)
                && pos(&h["raw_commit"]["p50_ms"])
                && h["parked_agents"].as_u64() == Some(2 * s.scale.waiting_pairs as u64),
            format!("{e}: hand-off measured every sample"),
        );
    }
    if s.phase("parked") {
        let p = &r["parked"];
        let total = (s.scale.parked_callers * s.scale.parked_per_caller) as u64;
        check(
            p["polls"].as_u64() == Some(total)
                && p["leased"].as_u64() == p["sends"].as_u64()
                && pos(&p["rss_idle_kib"])
                && pos(&p["rss_parked_kib"])
                && pos(&p["rss_after_kib"])
                && p["connections_closed"].as_bool() == Some(true),
            format!("{e}: parked polls held, woken and closed"),
        );
    }
    if s.phase("openloop") {
        let rows = r["openloop"]["rates"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        check(
            rows.len() == 2
                && rows.iter().all(|x| {
                    x["life"]["n"].as_u64() == Some(s.scale.openloop_tasks as u64)
                        && pos(&x["life"]["p50_ms"])
                }),
            format!("{e}: open loop ran every task at both rates"),
        );
    }
    if s.phase("instances") && e == "postgres" {
        let i = &r["instances"];
        let ok = |x: &Value, pairs: usize| {
            x["lost"].as_u64() == Some(0)
                && x["duplicates"].as_u64() == Some(0)
                && x["drained"].as_u64() == x["sent"].as_u64()
                && x["sent"].as_u64() == Some((s.tasks + s.warmup_tasks * pairs) as u64)
                && pos(&x["tasks_per_s"])
        };
        let (agents, few) = (s.scale.waiting_pairs, &i["few_pairs"]);
        check(
            i["servers"].as_u64() == Some(3)
                && ["one", "three", "one_again", "three_again"]
                    .iter()
                    .all(|k| ok(&i[*k], agents))
                && ok(&i["three_pairs_within"], agents)
                && ok(&few["three"], s.pairs)
                && ok(&few["one"], s.pairs)
                && i["handoff_cross"]["n"].as_u64() == Some(s.scale.instances_handoffs as u64)
                && i["handoff_within"]["n"].as_u64() == Some(s.scale.instances_handoffs as u64),
            format!("{e}: three instances lost nothing and handed off across"),
        );
    }
}
