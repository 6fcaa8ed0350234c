//! The dashboard phase: every page of the operator's dashboard with a million tasks in the
//! database (1 % of them queued, the rest resolved), a few hundred leases at work, and an audit
//! table of over a million rows, served to a signed-in operator one request after another.
//!
//! The tasks are loaded in bulk; the leases, results and repairs are made through the API, so
//! their audit rows are the server's own; those rows are then copied until the audit table holds
//! a million (the copies keep their kinds and bodies: the mix of real traffic).

use std::time::Instant;

use anyhow::{ensure, Result};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::db::Store;
use crate::load::{mint, Agent};
use crate::server::{Engine, Server};
use crate::stats::round3;
use crate::Settings;

/// Every task but one in a hundred is resolved, as if answered and drained when it was created.
const RESOLVE_MOST: &str = "UPDATE tasks SET state = 'resolved', result_status = 'ok', \
     result_content = '[]', result_at_ms = created_at_ms WHERE queue_seq % 100 <> 0";

/// One more copy of every audit row.
const DOUBLE_AUDIT: &str = "INSERT INTO audit (timestamp_ms, issuer, kind, body, task_id) \
     SELECT timestamp_ms, issuer, kind, body, task_id FROM audit";

/// Leases made through the API, and how many of them are answered (the rest stay in flight).
const LEASES: usize = 300;
const ANSWERED: usize = 100;

/// Real traffic on `worker-1` (whose bulk tasks are all resolved): leases, answers (one in ten
/// an error), and one task requeued by an operator, leased again and answered: the task page's
/// subject. Returns its id.
async fn traffic(server: &Server, leases: usize, answered: usize) -> Result<String> {
    let sender = Agent::new(server, "alice-1", &["a2a.send.worker-1"])?;
    let worker = Agent::new(server, "worker-1", &["a2a.respond.alice-1"])?;
    let ops = Agent::new(
        server,
        "bench-operator",
        &["a2a.operator", "a2a.repair.requeue"],
    )?;
    let mut leased = Vec::new();
    for i in 0..leases {
        let id = Uuid::new_v4().to_string();
        let mut t = json!({"id": id, "sender": "alice-1", "recipient": "worker-1",
            "intent_text": "reconcile the ledger and answer with the differences",
            "task_kind": if i % 2 == 0 { "reconcile" } else { "report" }});
        if i % 3 == 0 {
            t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": format!("k-{i}")});
        }
        sender.post("/a2a/tasks", &t, 201).await?;
        leased.push(worker.get("/a2a/tasks/next?wait_ms=1000", 200).await?);
    }
    let subject = leased[0]["task"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let repair = json!({"task_id": subject, "reason": "worker host lost",
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}});
    ops.post("/a2a/repair", &repair, 200).await?;
    let again = worker.get("/a2a/tasks/next?wait_ms=1000", 200).await?;
    ensure!(
        again["task"]["id"] == subject,
        "the requeued task came back"
    );
    leased[0] = again;
    for (i, l) in leased.iter().take(answered).enumerate() {
        let status = if i % 10 == 0 { "error" } else { "ok" };
        let result = json!({"task_id": l["task"]["id"], "status": status,
            "lease_id": l["lease"]["lease_id"], "error_message": (status == "error").then_some("the ledger is locked"),
            "content": [{"type": "text", "text": "done"}]});
        worker.post("/a2a/results", &result, 201).await?;
    }
    Ok(subject)
}

/// The pages an operator opens, with the text each must hold.
fn pages(subject: &str) -> Vec<(String, String)> {
    let task = format!("/dashboard/tasks/{subject}");
    let prefix = format!("/dashboard/tasks?id={}", &subject[..6]);
    let pages = [
        ("/dashboard/live".into(), "count-queued"),
        ("/dashboard".into(), "count-queued"),
        ("/dashboard/leases".into(), "leases match"),
        (
            "/dashboard/leases?sort=attempts&safety=unsafe&kind=report".into(),
            "leases match",
        ),
        ("/dashboard/tasks".into(), "id=\"tasks\""),
        ("/dashboard/tasks?state=queued".into(), "id=\"tasks\""),
        (
            "/dashboard/tasks?kind=report&result=error".into(),
            "id=\"tasks\"",
        ),
        (prefix, subject),
        (task, "id=\"timeline\""),
        ("/dashboard/audit".into(), "id=\"audit\""),
        (
            "/dashboard/audit?kind=a2a_repair_applied".into(),
            "id=\"audit\"",
        ),
        ("/dashboard/retry".into(), "Retry gate"),
    ];
    pages
        .into_iter()
        .map(|(p, m): (String, &str)| (p, m.to_owned()))
        .collect()
}

pub async fn dashboard(s: &Settings, engine: Engine) -> Result<Value> {
    let (tasks, requests, leases, answered, audit_rows) = if s.smoke {
        (2_000, 5, 30, 10, 5_000)
    } else {
        (1_000_000, 20, LEASES, ANSWERED, 1_000_000)
    };
    let store = Store::fresh(s, engine, "dashboard").await?;
    // The server makes the schema; the tasks are loaded beside it.
    let server = Server::start(s, engine, &store, "dashboard").await?;
    let label = format!("{} bulk load to {tasks}", engine.name());
    let load = store.bulk_load(s, tasks, 100, &label).await?;
    let resolved = store.execute(RESOLVE_MOST).await?;
    let subject = traffic(&server, leases, answered).await?;
    // Each copy doubles the table: it then holds twice the rows the copy added.
    let mut audit = 0;
    while audit < audit_rows {
        audit = 2 * store.execute(DOUBLE_AUDIT).await?;
    }
    if engine == Engine::Postgres {
        store.execute("VACUUM ANALYZE tasks").await?;
        store.execute("VACUUM ANALYZE audit").await?;
    } else {
        store.execute("ANALYZE").await?;
    }
    let http = reqwest::Client::builder().no_proxy().build()?;
    let cookie = format!(
        "a2a_dashboard={}",
        mint("bench-operator", &["a2a.operator"])?
    );
    let mut out = json!({"tasks": tasks, "resolved": resolved, "load": load,
        "leases": leases, "answered": answered, "audit_rows": audit});
    let mut worst: f64 = 0.0;
    for (path, marker) in pages(&subject) {
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
                status == 200 && page.contains(&marker),
                "{path}: HTTP {status}, without {marker:?}"
            );
            if i >= 3 {
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| round3(ms[((ms.len() - 1) as f64 * q).round() as usize]);
        eprintln!(
            "  {} dashboard {path} with {tasks} tasks, {audit} audit rows: p50 {} ms, p95 {} ms, max {} ms",
            engine.name(),
            at(0.5),
            at(0.95),
            at(1.0)
        );
        worst = worst.max(at(1.0));
        out["pages"][&path] =
            json!({"requests": ms.len(), "p50_ms": at(0.5), "p95_ms": at(0.95), "max_ms": at(1.0)});
    }
    out["slowest_page_max_ms"] = json!(worst);
    server.stop().await?;
    store.drop_it(s).await?;
    Ok(out)
}

/// The phase's target in the summary: every page of the dashboard served within 300 ms.
pub fn targets(name: &str, e: &Value, caveat: &str, out: &mut Vec<Value>) {
    let d = &e["dashboard"];
    if !d.is_object() {
        return;
    }
    out.push(crate::report::target(
        "dashboard: every page served in <= 300 ms at 1M tasks (slowest request of any page)",
        name,
        d["slowest_page_max_ms"].as_f64(),
        Some(300.0),
        true,
        "ms",
        format!(
            "{} tasks, {} audit rows, {} leases; {} pages, {} requests each after 3 warm-ups{caveat}",
            d["tasks"],
            d["audit_rows"],
            d["leases"],
            d["pages"].as_object().map_or(0, |p| p.len()),
            d["pages"]["/dashboard"]["requests"]
        ),
    ));
}
