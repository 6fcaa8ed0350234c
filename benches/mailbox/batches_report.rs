//! The batches phase in the summary: its ratio to the same run's raw commits, its target, its
//! table beside the lifecycle's, and its smoke checks.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::report::{num, pp};
use crate::stats::round3;
use crate::Settings;

fn div(a: Option<f64>, b: Option<f64>) -> Value {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => json!(round3(a / b)),
        _ => Value::Null,
    }
}

/// Raw commits per second at the service's concurrency around the batches phase: the mean of
/// the last loop before it (after the lifecycle when that ran, else the first) and the loop
/// after it; the one before alone when no loop ran after it.
pub fn raw_around(e: &Value) -> Option<f64> {
    let rc = &e["baselines"]["raw_commits"];
    let before = rc["cn_after"]["per_s"]
        .as_f64()
        .or_else(|| rc["cn"]["per_s"].as_f64())?;
    Some(
        rc["cn_after_batches"]["per_s"]
            .as_f64()
            .map_or(before, |after| (before + after) / 2.0),
    )
}

/// CPU milliseconds per task of each side.
fn cpu_per_task(c: &Value) -> Value {
    json!({
        "server": c["server_cpu_ms_per_unit"],
        "postgres": c["postgres_cpu_ms_per_unit"],
        "generator": c["generator_cpu_ms_per_unit"],
    })
}

/// Adds the phase's ratios to an engine's results: to the raw commits around it, and to the
/// lifecycle of the same run (throughput, requests and CPU per task).
pub fn ratios(e: &mut Value) {
    if !e["batches"].is_object() {
        return;
    }
    let b = e["batches"].clone();
    let l = e["lifecycle"].clone();
    let raw = raw_around(e);
    let tps = b["tasks_per_s"].as_f64();
    let l_requests_per_task = div(l["requests_per_s"].as_f64(), l["tasks_per_s"].as_f64());
    e["batches"]["ratios"] = json!({
        "raw_commits_cn_per_s": raw.map(round3),
        "raw_commits_cn_note": "the mean of the raw-commit loops just before and just after this phase, at the service's concurrency",
        "tasks_per_s_over_raw_commits_cn": div(tps, raw),
        "target_tasks_per_s_over_raw_commits_cn": 1.0,
        "tasks_per_s_over_lifecycle": div(tps, l["tasks_per_s"].as_f64()),
        "requests_per_task": {"batches": b["requests_per_task"], "lifecycle": l_requests_per_task},
        "cpu_ms_per_task": {"batches": cpu_per_task(&b["cpu"]), "lifecycle": cpu_per_task(&l["cpu"])},
    });
}

/// The phase's target: tasks/s at least the raw commits/s at the service's concurrency.
pub fn targets(name: &str, e: &Value, caveat: &str, out: &mut Vec<Value>) {
    let b = &e["batches"];
    if !b.is_object() {
        return;
    }
    out.push(crate::report::target(
        "batches throughput >= 1.0 x raw commits/s",
        name,
        b["tasks_per_s"].as_f64(),
        raw_around(e),
        false,
        "tasks/s",
        format!(
            "batches of {}, raw commits at concurrency {}, the mean of the loops just before and after the phase{caveat}",
            b["batch_size"],
            e["baselines"]["raw_commits"]["cn"]["concurrency"]
        ),
    ));
}

/// A row of the table: one phase of one engine.
fn row(m: &mut String, name: &str, phase: &str, p: &Value, over_raw: &Value, requests: &Value) {
    let c = &p["cpu"];
    let o = &p["ops"];
    let whole = if o["batch"].is_object() {
        &o["batch"]
    } else {
        &o["task"]
    };
    let _ = writeln!(
        m,
        "| {name} | {phase} | {} | {} | {} | {} / {} / {} | {} / {} | {} | {} | {} | {} | {} |",
        num(&p["tasks_per_s"]),
        num(over_raw),
        num(requests),
        num(&c["server_cpu_ms_per_unit"]),
        num(&c["postgres_cpu_ms_per_unit"]),
        num(&c["generator_cpu_ms_per_unit"]),
        num(&c["cores_busy"]),
        num(&c["other_cores_busy"]),
        pp(&o["send"]),
        pp(&o["lease"]),
        pp(&o["result"]),
        pp(&o["drain"]),
        pp(whole),
    );
}

/// The phase's table, each engine's batches beside its lifecycle.
pub fn markdown(m: &mut String, engines: &Map<String, Value>) {
    let Some(first) = engines.values().find(|e| e["batches"].is_object()) else {
        return;
    };
    let b = &first["batches"];
    let _ = writeln!(
        m,
        "\n### Task lives in batches of {} ({} pairs, {} tasks), beside the lifecycle\n",
        b["batch_size"], b["pairs"], b["tasks"]
    );
    let _ = writeln!(m, "Latencies: the lifecycle's per request (one task), the batches' per step of one batch (a lease or a drain step may take several requests). ÷ raw commits/s: the lifecycle's by the mean of the loops before and after it; the batches' by the mean of the loops just before and after them (target ≥ 1.0).\n");
    let _ = writeln!(m, "| engine | phase | tasks/s | ÷ raw commits/s (c=n) | requests/task | CPU ms/task server / postgres / generator | cores busy: ours / others | send p50/p99 ms | lease | result | drain | whole task or batch |");
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, e) in engines {
        let l = &e["lifecycle"];
        if l.is_object() {
            let requests = div(l["requests_per_s"].as_f64(), l["tasks_per_s"].as_f64());
            let over = &l["ratios"]["tasks_per_s_over_raw_commits_cn"];
            row(m, name, "lifecycle", l, over, &requests);
        }
        let b = &e["batches"];
        if b.is_object() {
            let over = &b["ratios"]["tasks_per_s_over_raw_commits_cn"];
            row(m, name, "batches", b, over, &b["requests_per_task"]);
        }
    }
    for (name, e) in engines {
        let (b, l) = (&e["batches"], &e["lifecycle"]);
        if b.is_object() && l.is_object() {
            let rc = &e["baselines"]["raw_commits"];
            let _ = writeln!(
                m,
                "\n{name}: batches ÷ lifecycle, tasks/s {}×; raw commits/s (c=n) just before and after the batches: {} → {}.",
                num(&b["ratios"]["tasks_per_s_over_lifecycle"]),
                num(&rc["cn_after"]["per_s"]),
                num(&rc["cn_after_batches"]["per_s"]),
            );
        }
        let pg = &b["postgres"];
        if pg.is_object() {
            let _ = writeln!(
                m,
                "\n{name} batches, counters per task: {} committed transactions (this database, reads included), {} write transactions (xids, cluster-wide), {} WAL bytes, {} WAL fsyncs (the lifecycle: {} / {} / {} / {}).",
                num(&pg["xact_commit_per_unit"]), num(&pg["next_xid_per_unit"]), num(&pg["wal_bytes_per_unit"]), num(&pg["wal_sync_per_unit"]),
                num(&l["postgres"]["xact_commit_per_unit"]), num(&l["postgres"]["next_xid_per_unit"]), num(&l["postgres"]["wal_bytes_per_unit"]), num(&l["postgres"]["wal_sync_per_unit"]),
            );
        }
    }
}

/// The smoke run's checks: every task's life ran and was checked, its requests were counted.
pub fn smoke_check(s: &Settings, e: &str, r: &Value, check: &mut dyn FnMut(bool, String)) {
    if !s.phase("batches") {
        return;
    }
    let b = &r["batches"];
    let tasks = Some(s.tasks as u64);
    let batches = b["batches"].as_u64();
    check(
        b["tasks"].as_u64() == tasks && b["checked_tasks"].as_u64() == tasks,
        format!("{e}: batches leased and drained every task, each checked"),
    );
    check(
        b["tasks_per_s"].as_f64() > Some(0.0) && b["cpu"]["server_cpu_ms_per_unit"].is_number(),
        format!("{e}: batches throughput and CPU measured"),
    );
    check(
        batches > Some(0)
            && ["send", "lease", "result", "drain", "batch"]
                .iter()
                .all(|op| b["ops"][op]["n"].as_u64() == batches)
            && b["requests"]["send"].as_u64() == batches
            && b["requests"]["result"].as_u64() == batches
            && b["requests"]["lease"].as_u64() >= batches
            && b["requests"]["drain"].as_u64() >= batches,
        format!("{e}: batches recorded each batch's steps and requests"),
    );
    if s.phase("baselines") {
        check(
            b["ratios"]["tasks_per_s_over_raw_commits_cn"].as_f64() > Some(0.0)
                && r["baselines"]["raw_commits"]["cn_after_batches"]["per_s"].as_f64() > Some(0.0),
            format!("{e}: batches divided by the raw commits around them"),
        );
    }
}
