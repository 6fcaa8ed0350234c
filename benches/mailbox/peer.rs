//! The peer: pgqueuer (PyPI, pinned in benches/peer-requirements.txt) on the same PostgreSQL,
//! the same number of jobs, the same concurrency, driven by benches/pgqueuer_peer.py inside a
//! venv under target/bench/.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::db::{pg_counter_delta, Store};
use crate::server::Engine;
use crate::stats::CpuMeter;
use crate::Settings;

const PGQUEUER_VERSION: &str = "1.6.0";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

async fn run_ok(cmd: &mut tokio::process::Command, what: &str) -> Result<String> {
    let out = cmd
        .output()
        .await
        .with_context(|| format!("{what}: could not start"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Creates (once) the venv with the pinned peer, answers its python.
async fn venv(s: &Settings) -> Result<PathBuf> {
    let dir = s.out.join("pgq-venv");
    let py = dir.join("bin").join("python");
    let installed = if py.exists() {
        run_ok(
            tokio::process::Command::new(&py).args([
                "-c",
                "import importlib.metadata as m; print(m.version('pgqueuer'), m.version('asyncpg'))",
            ]),
            "peer version check",
        )
        .await
        .ok()
    } else {
        None
    };
    if installed
        .as_deref()
        .map(str::trim)
        .map(|v| v.starts_with(PGQUEUER_VERSION))
        != Some(true)
    {
        eprintln!(
            "  creating the peer's venv in {} (pip install pgqueuer=={PGQUEUER_VERSION})",
            dir.display()
        );
        run_ok(
            tokio::process::Command::new(&s.python)
                .args(["-m", "venv"])
                .arg(&dir),
            "python3 -m venv",
        )
        .await?;
        run_ok(
            tokio::process::Command::new(&py)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "-r",
                ])
                .arg(manifest_dir().join("benches").join("peer-requirements.txt")),
            "pip install -r benches/peer-requirements.txt",
        )
        .await?;
    }
    Ok(py)
}

fn script() -> PathBuf {
    manifest_dir().join("benches").join("pgqueuer_peer.py")
}

pub async fn run(s: &Settings) -> Result<Value> {
    let py = venv(s).await?;
    let store = Store::fresh(s, Engine::Postgres, "peer").await?;
    let before = store.pg_counters().await?;
    let cpu = CpuMeter::start(0, true);
    eprintln!(
        "  pgqueuer peer: {} jobs, {} producers, {} consumer(s), batch {}",
        s.tasks, s.pairs, s.peer_consumers, s.peer_batch
    );
    let out = run_ok(
        tokio::process::Command::new(&py)
            .arg(script())
            .arg("--dsn")
            .arg(&store.url)
            .arg("--jobs")
            .arg(s.tasks.to_string())
            .arg("--concurrency")
            .arg(s.pairs.to_string())
            .arg("--consumers")
            .arg(s.peer_consumers.to_string())
            .arg("--batch-size")
            .arg(s.peer_batch.to_string()),
        "benches/pgqueuer_peer.py",
    )
    .await?;
    let cpu = cpu.finish(s.tasks);
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let after = store.pg_counters().await?;
    store.drop_it(s).await?;
    let mut v: Value = serde_json::from_str(out.trim())
        .with_context(|| format!("the peer printed no JSON: {out}"))?;
    v["postgres"] = pg_counter_delta(&before, &after, s.tasks);
    v["cpu"] = cpu;
    v["cpu"]["note"] = json!("generator_cpu_* is this harness (idle here); the peer's own CPU is client_cpu_secs; postgres = every postgres process, schema install included");
    v["pip_freeze"] = json!(pip_freeze(&py).await.unwrap_or_default());
    Ok(v)
}

async fn pip_freeze(py: &Path) -> Result<Vec<String>> {
    let out = run_ok(
        tokio::process::Command::new(py).args([
            "-m",
            "pip",
            "freeze",
            "--disable-pip-version-check",
        ]),
        "pip freeze",
    )
    .await?;
    Ok(out.lines().map(str::to_owned).collect())
}
