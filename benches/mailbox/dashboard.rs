//! The dashboard phase: the operator's overview with a million tasks in the database (1 % of
//! them queued over 100 recipients, the rest resolved), served to a signed-in operator one
//! request after another.

use std::time::Instant;

use anyhow::{ensure, Result};
use serde_json::{json, Value};

use crate::db::Store;
use crate::load::mint;
use crate::server::{Engine, Server};
use crate::stats::round3;
use crate::Settings;

/// Every task but one in a hundred is resolved, as if answered and drained when it was created.
const RESOLVE_MOST: &str = "UPDATE tasks SET state = 'resolved', result_status = 'ok', \
     result_content = '[]', result_at_ms = created_at_ms WHERE queue_seq % 100 <> 0";

pub async fn dashboard(s: &Settings, engine: Engine) -> Result<Value> {
    let (tasks, requests) = if s.smoke { (2_000, 5) } else { (1_000_000, 40) };
    let store = Store::fresh(s, engine, "dashboard").await?;
    // The server makes the schema; the tasks are loaded beside it.
    let server = Server::start(s, engine, &store, "dashboard").await?;
    let label = format!("{} bulk load to {tasks}", engine.name());
    let load = store.bulk_load(s, tasks, 100, &label).await?;
    let resolved = store.execute(RESOLVE_MOST).await?;
    if engine == Engine::Postgres {
        store.execute("VACUUM ANALYZE tasks").await?;
    }
    let http = reqwest::Client::builder().no_proxy().build()?;
    let cookie = format!(
        "a2a_dashboard={}",
        mint("bench-operator", &["a2a.operator"])?
    );
    let mut out = json!({"tasks": tasks, "resolved": resolved, "load": load});
    for path in ["/dashboard/live", "/dashboard"] {
        let mut ms = Vec::new();
        for i in 0..requests + 3 {
            let t = Instant::now();
            let res = http
                .get(format!("{}{path}", server.base))
                .header("cookie", &cookie)
                .send()
                .await?;
            let status = res.status().as_u16();
            let page = res.text().await?;
            ensure!(
                status == 200 && page.contains("count-queued"),
                "{path}: HTTP {status}"
            );
            if i >= 3 {
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| round3(ms[((ms.len() - 1) as f64 * q).round() as usize]);
        eprintln!(
            "  {} dashboard {path} with {tasks} tasks: p50 {} ms, p95 {} ms, max {} ms",
            engine.name(),
            at(0.5),
            at(0.95),
            at(1.0)
        );
        out[path] =
            json!({"requests": ms.len(), "p50_ms": at(0.5), "p95_ms": at(0.95), "max_ms": at(1.0)});
    }
    server.stop().await?;
    store.drop_it(s).await?;
    Ok(out)
}
