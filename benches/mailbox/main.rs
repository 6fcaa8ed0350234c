//! The a2a-mailbox benchmark harness. See BENCHMARKS.md for what it measures and how
//! to read the numbers.
//!
//! Full run (release build of the server and of this harness):
//!     cargo bench --bench mailbox
//! CI smoke run (debug build, reuses `cargo test`'s artefacts, small numbers, both engines):
//!     cargo test --bench mailbox -- --smoke
//!
//! Everything happens in ONE process with ONE single-threaded tokio runtime, so the load
//! generator takes at most one of the machine's cores away from the server and the databases.
//! Each simulated agent has its own `reqwest::Client` (its own keep-alive pool).

mod authflood;
mod batch;
mod batches;
mod batches_report;
mod dashboard;
mod db;
mod handoff;
mod instances;
mod load;
mod openloop;
mod parked;
mod peer;
mod progress;
mod raw;
mod report;
mod scale;
mod scale_report;
mod server;
mod stats;
mod streams;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use serde_json::{json, Value};

use crate::server::{Engine, Server};

#[derive(Parser, Debug, Clone)]
#[command(
    name = "mailbox-bench",
    about = "a2a-mailbox benchmark: lifecycle, depth, same-run baselines and the pgqueuer peer"
)]
pub struct Args {
    /// Small numbers for CI: checks that every phase runs and the JSON is written, no timing.
    #[arg(long)]
    pub smoke: bool,
    /// Engines to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "sqlite,postgres")]
    pub engines: Vec<String>,
    /// Concurrent sender/worker pairs (also the concurrency of every baseline).
    #[arg(long)]
    pub pairs: Option<usize>,
    /// Measured task lives in the lifecycle phase (after the warm-up).
    #[arg(long)]
    pub tasks: Option<usize>,
    /// Queue depths of the depth phase, comma-separated, ascending.
    #[arg(long, value_delimiter = ',')]
    pub depths: Option<Vec<u64>>,
    /// Measured sends and lease claims at each depth (default 20,000: a p99 of 4,000 samples
    /// moved by ±50 % between runs on a shared machine).
    #[arg(long)]
    pub depth_ops: Option<usize>,
    /// Rounds the depth phase's measured operations are split into: each round measures every
    /// depth once, one after another, so time-varying interference falls on every depth alike
    /// (at least 1, at most `--depth-ops`).
    #[arg(long)]
    pub depth_rounds: Option<usize>,
    /// Sender/worker pairs of the `waiting` and `handoff` phases (default 512: 1,024 agents).
    #[arg(long)]
    pub waiting_pairs: Option<usize>,
    /// Seconds each raw-commit and /healthz baseline runs.
    #[arg(long)]
    pub baseline_secs: Option<f64>,
    /// Skip the pgqueuer peer (the smoke run skips it unless --peer is given).
    #[arg(long)]
    pub no_peer: bool,
    /// Run the pgqueuer peer even with --smoke.
    #[arg(long)]
    pub peer: bool,
    /// pgqueuer QueueManagers (consumers), one connection each.
    #[arg(long, default_value_t = 1)]
    pub peer_consumers: usize,
    /// pgqueuer dequeue batch size per QueueManager.
    #[arg(long, default_value_t = 16)]
    pub peer_batch: usize,
    /// Do NOT run `VACUUM (ANALYZE) tasks` after each PostgreSQL bulk load. By default it runs,
    /// so claims are measured with realistic planner statistics (what autovacuum/autoanalyze
    /// produce within a minute of a large change) and no autovacuum of the loaded rows runs
    /// during the measurement; without it the planner still has the empty table's statistics.
    #[arg(long)]
    pub no_vacuum_analyze_after_load: bool,
    /// Phases to run, comma-separated: baselines,lifecycle,batches,agents,batch,authflood,depth,
    /// dashboard,peer (`batches`: the lifecycle's task lives 16 at a time, each request a batch;
    /// `agents`: the lifecycle again, with waiting agents; `batch`: 500 single sends against one
    /// batch of 500; `authflood`: a sender's latency during a burst of bad tokens; `dashboard`:
    /// the operator's overview with a million tasks). Not run by default, the scale phases:
    /// `waiting` (1,024 waiting agents against the closed loop), `handoff` (send to a waiting
    /// worker's lease, 1,024 agents parked), `parked` (10,000 parked long-polls: memory, CPU,
    /// wake-ups per send), `openloop` (Poisson arrivals at 50 % and 80 % of a closed loop
    /// measured just before them), `instances` (PostgreSQL: three servers on one database),
    /// `streams` (1,000 A2A streams open at once, one event each: commit to event, memory per
    /// stream).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "baselines,lifecycle,batches,agents,batch,authflood,depth,dashboard,peer"
    )]
    pub phases: Vec<String>,
    /// PostgreSQL server (the admin database is used to create and drop fresh databases).
    #[arg(
        long,
        env = "A2A_BENCH_PG_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    pub pg_url: String,
    /// Where results, logs and SQLite files go (default target/bench/{full,smoke}).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The server binary (default: the one cargo built for this bench).
    #[arg(long, env = "A2A_BENCH_SERVER")]
    pub server: Option<PathBuf>,
    /// Python used to create the peer's venv.
    #[arg(long, env = "A2A_BENCH_PYTHON", default_value = "python3")]
    pub python: String,
    /// Keep the PostgreSQL databases and SQLite files after the run.
    #[arg(long)]
    pub keep: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    pub bench: bool,
}

/// The resolved settings of one run.
#[derive(Clone, Debug)]
pub struct Settings {
    pub smoke: bool,
    pub engines: Vec<Engine>,
    pub pairs: usize,
    pub tasks: usize,
    pub warmup_tasks: usize,
    pub depths: Vec<u64>,
    pub depth_ops: usize,
    pub depth_rounds: usize,
    pub baseline: Duration,
    pub peer: bool,
    pub peer_consumers: usize,
    pub peer_batch: usize,
    pub vacuum_analyze_after_load: bool,
    pub phases: Vec<String>,
    pub pg_url: String,
    pub out: PathBuf,
    pub server_bin: PathBuf,
    pub python: String,
    pub keep: bool,
    pub run_id: String,
    pub scale: scale::Config,
}

impl Settings {
    fn from_args(a: Args) -> Result<Settings> {
        let smoke = a.smoke;
        let mut engines = Vec::new();
        for e in &a.engines {
            engines.push(match e.trim() {
                "sqlite" => Engine::Sqlite,
                "postgres" | "pg" | "postgresql" => Engine::Postgres,
                other => bail!("unknown engine {other:?} (sqlite, postgres)"),
            });
        }
        let pairs = a.pairs.unwrap_or(if smoke { 4 } else { 16 });
        let depths = a.depths.clone().unwrap_or_else(|| {
            if smoke {
                vec![100, 1_000]
            } else {
                vec![1_000, 100_000, 1_000_000]
            }
        });
        if depths.windows(2).any(|w| w[0] >= w[1]) {
            bail!("--depths must be strictly ascending");
        }
        let depth_ops = a.depth_ops.unwrap_or(if smoke { 40 } else { 20_000 });
        let target_dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
        let out = a.out.clone().unwrap_or_else(|| {
            target_dir
                .join("bench")
                .join(if smoke { "smoke" } else { "full" })
        });
        let server_bin = a
            .server
            .clone()
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_a2a-mailbox")));
        Ok(Settings {
            smoke,
            engines,
            pairs,
            tasks: a.tasks.unwrap_or(if smoke { 40 } else { 20_000 }),
            warmup_tasks: if smoke { 1 } else { 10 },
            depths,
            depth_ops,
            depth_rounds: a
                .depth_rounds
                .unwrap_or(if smoke { 2 } else { 5 })
                .clamp(1, depth_ops.max(1)),
            baseline: Duration::from_secs_f64(a.baseline_secs.unwrap_or(if smoke {
                0.5
            } else {
                5.0
            })),
            peer: !a.no_peer && (!smoke || a.peer),
            peer_consumers: a.peer_consumers,
            peer_batch: a.peer_batch,
            vacuum_analyze_after_load: !a.no_vacuum_analyze_after_load,
            phases: a.phases.clone(),
            pg_url: a.pg_url.clone(),
            out,
            server_bin,
            python: a.python.clone(),
            keep: a.keep,
            run_id: format!("{}_{}", std::process::id(), stats::unix_secs()),
            scale: scale::Config::new(smoke, a.waiting_pairs),
        })
    }

    pub fn phase(&self, name: &str) -> bool {
        self.phases.iter().any(|p| p == name)
    }

    pub fn engines_json(&self) -> Value {
        json!(self.engines.iter().map(|e| e.name()).collect::<Vec<_>>())
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let settings = Settings::from_args(args)?;
    // 10,000 parked long-polls need as many sockets here and in the server (which inherits it).
    let nofile = scale::raise_nofile();
    eprintln!("open files limit: {nofile}");
    // One single-threaded runtime: the load generator, the baselines' database clients and the
    // progress display share one core at most.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(settings))
}

/// Every engine's phases, then the peer.
async fn measure(s: &Settings) -> Result<(serde_json::Map<String, Value>, Value)> {
    let mut engines = serde_json::Map::new();
    for &engine in &s.engines {
        let r = run_engine(s, engine)
            .await
            .with_context(|| format!("{} phase failed", engine.name()))?;
        engines.insert(engine.name().to_owned(), r);
    }
    let mut peer = Value::Null;
    if s.peer && s.phase("peer") && s.engines.contains(&Engine::Postgres) {
        peer = peer::run(s).await.context("pgqueuer peer failed")?;
    }
    Ok((engines, peer))
}

async fn run(s: Settings) -> Result<()> {
    std::fs::create_dir_all(s.out.join("logs"))?;
    std::fs::create_dir_all(s.out.join("db"))?;
    if !s.server_bin.exists() {
        bail!(
            "server binary {} not found (cargo build --bin a2a-mailbox, or --server PATH)",
            s.server_bin.display()
        );
    }
    let started = stats::unix_secs();
    let machine_start = report::machine(&s).await;
    eprintln!(
        "a2a-mailbox bench{}: engines {:?}, {} pairs, {} tasks, depths {:?}, server {}",
        if s.smoke { " (smoke)" } else { "" },
        s.engines.iter().map(|e| e.name()).collect::<Vec<_>>(),
        s.pairs,
        s.tasks,
        s.depths,
        s.server_bin.display()
    );
    eprintln!(
        "load average at start: {}",
        machine_start["loadavg_start"].as_str().unwrap_or("?")
    );

    let measured = measure(&s).await;
    // A phase that failed left its database behind; drop it before reporting the failure.
    if let Err(e) = db::drop_leftovers(&s).await {
        eprintln!("could not drop this run's leftover databases: {e:#}");
    }
    let (engines, peer) = measured?;

    let mut machine = machine_start;
    machine["loadavg_end"] = json!(report::loadavg());
    let mut summary = json!({
        "schema": "a2a-mailbox-bench/1",
        "smoke": s.smoke,
        "started_unix": started,
        "finished_unix": stats::unix_secs(),
        "command": std::env::args().collect::<Vec<_>>(),
        "machine": machine,
        "settings": {
            "engines": s.engines_json(),
            "pairs": s.pairs,
            "tasks": s.tasks,
            "warmup_tasks_per_pair": s.warmup_tasks,
            "depths": s.depths,
            "depth_ops": s.depth_ops,
            "depth_rounds": s.depth_rounds,
            "baseline_secs": s.baseline.as_secs_f64(),
            "vacuum_analyze_after_load": s.vacuum_analyze_after_load,
            "phases": s.phases,
            "scale": format!("{:?}", s.scale),
            "generator": "one process, one current-thread tokio runtime, reqwest 0.12 keep-alive, one client (pool) per agent",
        },
        "engines": Value::Object(engines),
        "peer": peer,
    });
    summary["targets"] = report::targets(&summary);
    let md = report::markdown(&summary);
    let json_path = s.out.join("summary.json");
    let md_path = s.out.join("summary.md");
    std::fs::write(&json_path, serde_json::to_string_pretty(&summary)?)?;
    std::fs::write(&md_path, &md)?;
    let stamped = s.out.join(format!("summary-{started}.json"));
    std::fs::write(&stamped, serde_json::to_string_pretty(&summary)?)?;
    println!("{md}");
    eprintln!(
        "wrote {} and {} (and {})",
        json_path.display(),
        md_path.display(),
        stamped.display()
    );
    if s.smoke {
        smoke_check(&s, &summary)?;
    }
    Ok(())
}

/// The smoke run asserts that the harness ran and produced its JSON, never any timing.
fn smoke_check(s: &Settings, summary: &Value) -> Result<()> {
    let text = std::fs::read_to_string(s.out.join("summary.json"))?;
    let back: Value = serde_json::from_str(&text).context("summary.json does not parse")?;
    let mut checks = 0;
    let mut failed = Vec::new();
    let mut check = |ok: bool, what: String| {
        checks += 1;
        if !ok {
            failed.push(what);
        }
    };
    check(back == *summary, "summary.json round-trips".into());
    for e in &s.engines {
        let r = &back["engines"][e.name()];
        if s.phase("baselines") {
            check(
                r["baselines"]["raw_commits"]["c1"]["per_s"].as_f64() > Some(0.0),
                format!("{}: raw commits c=1 measured", e.name()),
            );
            check(
                r["baselines"]["healthz"]["per_s"].as_f64() > Some(0.0),
                format!("{}: /healthz baseline measured", e.name()),
            );
        }
        if s.phase("lifecycle") {
            let l = &r["lifecycle"];
            check(
                l["tasks"].as_u64() == Some(s.tasks as u64),
                format!("{}: lifecycle ran every task", e.name()),
            );
            check(
                l["tasks_per_s"].as_f64() > Some(0.0),
                format!("{}: lifecycle throughput measured", e.name()),
            );
            for op in ["send", "lease", "result", "drain"] {
                check(
                    l["ops"][op]["n"].as_u64() == Some(s.tasks as u64),
                    format!("{}: lifecycle {op} latencies recorded", e.name()),
                );
            }
        }
        if s.phase("agents") {
            let l = &r["lifecycle_agents"];
            check(
                l["tasks_per_s"].as_f64() > Some(0.0)
                    && l["ops"]["task"]["n"].as_u64() == Some(s.tasks as u64),
                format!("{}: lifecycle with waiting agents ran every task", e.name()),
            );
        }
        if s.phase("batch") {
            let b = &r["batch"];
            check(
                b["batch_over_single_median"].as_f64() > Some(0.0)
                    && b["queued_after"].as_u64()
                        == Some(1 + (1 + b["rounds"].as_u64().unwrap_or(0) * 3) * 20),
                format!("{}: batch phase sent every task", e.name()),
            );
        }
        if s.phase("authflood") {
            let a = &r["authflood"];
            check(
                a["loaded"]["n"].as_u64() > Some(0)
                    && a["audited_failures"].as_u64() == a["bad_tokens"].as_u64()
                    && a["audit_rows"]
                        .as_u64()
                        .is_some_and(|n| (1..=2).contains(&n)),
                format!("{}: authflood counted every bad token in one row", e.name()),
            );
        }
        if s.phase("depth") {
            let d = r["depth"].as_array().cloned().unwrap_or_default();
            check(
                d.len() == s.depths.len(),
                format!("{}: every depth measured", e.name()),
            );
            for row in &d {
                check(
                    row["queued_before"].as_u64() == row["depth"].as_u64(),
                    format!("{}: depth {} loaded exactly", e.name(), row["depth"]),
                );
                check(
                    row["lease"]["n"].as_u64() == Some(s.depth_ops as u64)
                        && row["rounds"].as_u64() == Some(s.depth_rounds as u64)
                        && row["server_vmhwm_kib"].as_u64() > Some(0),
                    format!(
                        "{}: depth {} measured in {} alternating rounds",
                        e.name(),
                        row["depth"],
                        s.depth_rounds
                    ),
                );
            }
        }
    }
    for e in &s.engines {
        scale::smoke_checks(s, e.name(), &back["engines"][e.name()], &mut check);
        streams::smoke_check(s, e.name(), &back["engines"][e.name()], &mut check);
        batches_report::smoke_check(s, e.name(), &back["engines"][e.name()], &mut check);
    }
    let passed = checks - failed.len();
    // A plain closing line: CI logs read it as the smoke run's verdict.
    println!("bench-smoke: {passed} passed, {} failed", failed.len());
    if !failed.is_empty() {
        bail!("smoke checks failed: {failed:?}");
    }
    Ok(())
}

/// Every phase of one engine; each phase on a fresh database.
async fn run_engine(s: &Settings, engine: Engine) -> Result<Value> {
    let mut out = json!({ "engine": engine.name() });
    out["database"] = db::describe(s, engine).await?;

    if s.phase("baselines") {
        out["baselines"] = json!({ "raw_commits": raw::raw_commits(s, engine).await? });
    }

    if s.phase("lifecycle") || s.phase("baselines") {
        let store = db::Store::fresh(s, engine, "life").await?;
        let server = Server::start(s, engine, &store, "life").await?;
        if s.phase("baselines") {
            out["baselines"]["healthz"] = load::healthz(s, engine, &server).await?;
        }
        if s.phase("lifecycle") {
            out["lifecycle"] = load::lifecycle(s, engine, &server, &store).await?;
        }
        server.stop().await?;
        if s.phase("lifecycle") && engine == Engine::Postgres {
            // The server's backends flush their statistics when they exit.
            tokio::time::sleep(Duration::from_millis(600)).await;
            let after = store.pg_counters().await?;
            let before = out["lifecycle"]["pg_counters_before"].clone();
            out["lifecycle"]["postgres"] = db::pg_counter_delta(&before, &after, s.tasks);
        }
        store.drop_it(s).await?;
        if s.phase("lifecycle") && s.phase("baselines") {
            // The line divides by the mean of the loops before and after the lifecycle: a
            // drift of the machine's disk during the run falls on both sides of the ratio.
            out["baselines"]["raw_commits"]["cn_after"] = raw::raw_commits_again(s, engine).await?;
        }
    }

    if s.phase("batches") {
        out["batches"] = batches::batches(s, engine).await?;
        if s.phase("baselines") {
            // The phase divides by the mean of the raw-commit loops just before and after it.
            out["baselines"]["raw_commits"]["cn_after_batches"] =
                raw::raw_commits_again(s, engine).await?;
        }
    }

    if s.phase("agents") {
        let store = db::Store::fresh(s, engine, "agents").await?;
        let server = Server::start(s, engine, &store, "agents").await?;
        out["lifecycle_agents"] = load::lifecycle_agents(s, engine, &server).await?;
        server.stop().await?;
        store.drop_it(s).await?;
    }

    if s.phase("batch") {
        out["batch"] = batch::batch(s, engine).await?;
    }
    if s.phase("authflood") {
        out["authflood"] = authflood::authflood(s, engine).await?;
    }
    if s.phase("depth") {
        out["depth"] = load::depth(s, engine).await?;
    }
    if s.phase("dashboard") {
        out["dashboard"] = dashboard::dashboard(s, engine).await?;
    }
    if s.phase("waiting") {
        out["waiting"] = scale::waiting(s, engine, &out).await?;
    }
    if s.phase("handoff") {
        out["handoff"] = handoff::handoff(s, engine).await?;
    }
    if s.phase("parked") {
        out["parked"] = parked::parked(s, engine).await?;
    }
    if s.phase("openloop") {
        out["openloop"] = openloop::openloop(s, engine, &out).await?;
    }
    if s.phase("streams") {
        out["streams"] = streams::streams(s, engine).await?;
    }
    if s.phase("instances") && engine == Engine::Postgres {
        out["instances"] = instances::instances(s, engine).await?;
    }
    report::ratios(&mut out);
    batches_report::ratios(&mut out);
    Ok(out)
}
