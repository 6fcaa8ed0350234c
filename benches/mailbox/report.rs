//! The machine description, ratios to the same-run baselines, the targets and the
//! Markdown table.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::stats::round3;
use crate::Settings;

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn first_line_with(path: &str, key: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default()
}

fn cmd_out(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

pub async fn machine(s: &Settings) -> Value {
    let server = s.server_bin.display().to_string();
    let df = cmd_out("df", &["-hT", &s.out.display().to_string()]);
    json!({
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "cpu_model": first_line_with("/proc/cpuinfo", "model name"),
        "mem_total": first_line_with("/proc/meminfo", "MemTotal"),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        "filesystem": df.lines().last().unwrap_or_default(),
        "loadavg_start": loadavg(),
        "server_binary": server,
        "server_profile": if server.contains("/release/") {
            "release"
        } else if server.contains("/debug/") {
            "debug"
        } else {
            "unknown (a --server binary outside target/)"
        },
        "harness_profile": if cfg!(debug_assertions) { "debug" } else { "release" },
        "rustc": cmd_out("rustc", &["--version"]),
        // What was measured: the commit, and the files that differed from it (a shared work
        // tree may carry other people's uncommitted changes into the server binary).
        "git_commit": cmd_out("git", &["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short", "HEAD"]),
        "git_dirty": cmd_out("git", &["-C", env!("CARGO_MANIFEST_DIR"), "status", "--porcelain", "--untracked-files=no", "--", "src", "migrations", "Cargo.toml", "Cargo.lock"])
            .lines().map(str::to_owned).collect::<Vec<_>>(),
    })
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn div(a: Option<f64>, b: Option<f64>) -> Value {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => json!(round3(a / b)),
        _ => Value::Null,
    }
}

/// Raw commits per second at the service's concurrency: the mean of the loops before and after
/// the lifecycle when both ran, else the one before.
pub fn raw_cn(e: &Value) -> Option<f64> {
    let rc = &e["baselines"]["raw_commits"];
    let before = f(&rc["cn"]["per_s"])?;
    Some(f(&rc["cn_after"]["per_s"]).map_or(before, |after| (before + after) / 2.0))
}

/// The closed loop's target: 0.7 x (raw commits/s at the service's concurrency ÷ 4, a task life
/// being four writes).
pub fn loop_target(e: &Value) -> Option<f64> {
    raw_cn(e).map(|c| 0.7 * c / 4.0)
}

/// " → N" for the raw commits' loop after the lifecycle, when it ran.
fn after(again: &Value) -> String {
    match again["per_s"].as_f64() {
        Some(_) => format!(" → {}", num(&again["per_s"])),
        None => String::new(),
    }
}

/// Adds ratios to the same-run baselines to an engine's results.
pub fn ratios(e: &mut Value) {
    let raw1 = e["baselines"]["raw_commits"]["c1"].clone();
    let rawn = raw_cn(e);
    let hz = e["baselines"]["healthz"].clone();
    if e["lifecycle"].is_object() {
        let l = e["lifecycle"].clone();
        let tps = f(&l["tasks_per_s"]);
        let target = loop_target(e);
        let mut r = json!({
            "raw_commits_cn_per_s": rawn.map(round3),
            "tasks_per_s_over_raw_commits_cn": div(tps, rawn),
            "tasks_per_s_over_raw_commits_c1": div(tps, f(&raw1["per_s"])),
            "target_tasks_per_s": target.map(round3),
            "tasks_per_s_over_target": div(tps, target),
            "requests_per_s_over_healthz": div(f(&l["requests_per_s"]), f(&hz["per_s"])),
        });
        for op in ["send", "lease", "result", "drain", "task"] {
            r[format!("{op}_p50_over_commit_p50")] =
                div(f(&l["ops"][op]["p50_ms"]), f(&raw1["p50_ms"]));
            r[format!("{op}_p50_over_healthz_p50")] =
                div(f(&l["ops"][op]["p50_ms"]), f(&hz["p50_ms"]));
        }
        e["lifecycle"]["ratios"] = r;
    }
    if e["lifecycle_agents"].is_object() {
        let tps = f(&e["lifecycle_agents"]["tasks_per_s"]);
        let target = loop_target(e);
        e["lifecycle_agents"]["ratios"] = json!({
            "tasks_per_s_over_raw_commits_cn": div(tps, rawn),
            "tasks_per_s_over_target": div(tps, target),
            "tasks_per_s_over_chain_lifecycle": div(tps, f(&e["lifecycle"]["tasks_per_s"])),
        });
    }
    if let Some(rows) = e["depth"].as_array_mut() {
        let first_lease_p99 = rows.first().and_then(|r| f(&r["lease"]["p99_ms"]));
        let first_send_p99 = rows.first().and_then(|r| f(&r["send"]["p99_ms"]));
        for row in rows.iter_mut() {
            let mut r = json!({
                "lease_p99_over_first_depth": div(f(&row["lease"]["p99_ms"]), first_lease_p99),
                "send_p99_over_first_depth": div(f(&row["send"]["p99_ms"]), first_send_p99),
            });
            for op in ["send", "lease"] {
                for p in ["p50_ms", "p99_ms"] {
                    let k = p.trim_end_matches("_ms");
                    r[format!("{op}_{k}_over_commit_{k}")] = div(f(&row[op][p]), f(&raw1[p]));
                    r[format!("{op}_{k}_over_healthz_{k}")] = div(f(&row[op][p]), f(&hz[p]));
                }
            }
            row["ratios"] = r;
        }
    }
}

pub(crate) fn target(
    name: &str,
    engine: &str,
    value: Option<f64>,
    threshold: Option<f64>,
    lower_is_better: bool,
    unit: &str,
    note: String,
) -> Value {
    let met = match (value, threshold) {
        (Some(v), Some(t)) => json!(if lower_is_better { v < t } else { v >= t }),
        _ => Value::Null,
    };
    json!({
        "target": name,
        "engine": engine,
        "value": value.map(round3),
        "threshold": threshold.map(round3),
        "unit": unit,
        "rule": if lower_is_better { "value < threshold" } else { "value >= threshold" },
        "met": met,
        "note": note,
    })
}

/// The four targets of the harness, evaluated on this run.
pub fn targets(sum: &Value) -> Value {
    let mut out = Vec::new();
    let smoke = sum["smoke"].as_bool() == Some(true);
    let caveat = if smoke {
        " (smoke run: small numbers, debug build; not a measurement)"
    } else {
        ""
    };
    let engines = sum["engines"].as_object().cloned().unwrap_or_default();
    for (name, e) in &engines {
        let rc = &e["baselines"]["raw_commits"];
        if e["lifecycle"].is_object() {
            let when = if rc["cn_after"].is_object() {
                ", the mean of the loops before and after the lifecycle"
            } else {
                ""
            };
            out.push(target(
                "lifecycle throughput >= 0.7 x (raw commits/s / 4)",
                name,
                f(&e["lifecycle"]["tasks_per_s"]),
                loop_target(e),
                false,
                "tasks/s",
                format!(
                    "raw commits at concurrency {}{when}{caveat}",
                    rc["cn"]["concurrency"]
                ),
            ));
        }
        let a = &e["authflood"];
        if a.is_object() {
            out.push(target(
                "authenticated send p99 during a bad-token burst < 1.5 x its quiet p99",
                name,
                f(&a["loaded"]["p99_ms"]),
                f(&a["quiet"]["p99_ms"]).map(|p| 1.5 * p),
                true,
                "ms",
                format!(
                    "{} bad tokens from another client, 16 connections{caveat}",
                    a["bad_tokens"]
                ),
            ));
            out.push(target(
                "authentication_failed audit rows written by the burst <= 5",
                name,
                f(&a["audit_rows"]),
                Some(5.5),
                true,
                "rows",
                format!("counting {} failures{caveat}", a["audited_failures"]),
            ));
        }
        if let Some(rows) = e["depth"].as_array() {
            if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
                out.push(target(
                    "lease-claim p99 at the deepest queue < 1.5 x p99 at the shallowest, 16 clients",
                    name,
                    f(&last["lease"]["p99_ms"]),
                    f(&first["lease"]["p99_ms"]).map(|p| 1.5 * p),
                    true,
                    "ms",
                    format!("depth {} vs {}{caveat}", last["depth"], first["depth"]),
                ));
                out.push(target(
                    "lease-claim p99 at the deepest queue < 1.5 x p99 at the shallowest, one client",
                    name,
                    f(&last["serial"]["lease"]["p99_ms"]),
                    f(&first["serial"]["lease"]["p99_ms"]).map(|p| 1.5 * p),
                    true,
                    "ms",
                    format!("depth {} vs {}, one client alone (diagnostic: the claim's own cost){caveat}", last["depth"], first["depth"]),
                ));
                out.push(target(
                    "lease by a recipient with one task at the deepest queue: max < 1.5 x max at the shallowest",
                    name,
                    f(&last["lonely_lease"]["max_ms"]),
                    f(&first["lonely_lease"]["max_ms"]).map(|p| 1.5 * p),
                    true,
                    "ms",
                    format!("depth {} vs {}, {} claims by recipients whose only task is at the end of the queue (diagnostic){caveat}", last["depth"], first["depth"], last["lonely_lease"]["n"]),
                ));
                out.push(target(
                    "server peak RSS at the deepest queue < 150 MiB",
                    name,
                    last["server_vmhwm_kib"].as_f64().map(|k| k / 1024.0),
                    Some(150.0),
                    true,
                    "MiB",
                    format!(
                        "VmHWM of the server process at depth {}{caveat}",
                        last["depth"]
                    ),
                ));
            }
        }
        crate::batches_report::targets(name, e, caveat, &mut out);
        crate::scale_report::targets(name, e, caveat, &mut out);
        crate::streams::targets(name, e, caveat, &mut out);
        crate::dashboard::targets(name, e, caveat, &mut out);
    }
    if sum["peer"].is_object() {
        let ours = f(&sum["engines"]["postgres"]["lifecycle"]["tasks_per_s"]);
        out.push(target(
            "a2a-mailbox tasks/s / pgqueuer jobs/s >= 1 (PostgreSQL)",
            "postgres",
            div(ours, f(&sum["peer"]["jobs_per_s"])).as_f64(),
            Some(1.0),
            false,
            "ratio",
            format!("a task life is 4 HTTP requests and 4 write transactions; a pgqueuer job is enqueue + batched dequeue + buffered ack{caveat}"),
        ));
    }
    Value::Array(out)
}

fn ms(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
        None => "–".into(),
    }
}

pub(crate) fn num(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "–".into(),
    }
}

pub(crate) fn pp(s: &Value) -> String {
    format!("{} / {}", ms(&s["p50_ms"]), ms(&s["p99_ms"]))
}

pub fn markdown(sum: &Value) -> String {
    let mut m = String::new();
    let mach = &sum["machine"];
    let _ = writeln!(
        m,
        "## a2a-mailbox benchmark{}\n",
        if sum["smoke"].as_bool() == Some(true) {
            " (SMOKE: not a measurement)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        m,
        "Machine: {} cpus, {}, {}, kernel {}; fs `{}`; load average {} at start, {} at end. Server build: {}, harness build: {}. Generator: {}.\n",
        mach["cpus"], mach["cpu_model"].as_str().unwrap_or(""), mach["mem_total"].as_str().unwrap_or(""),
        mach["kernel"].as_str().unwrap_or(""), mach["filesystem"].as_str().unwrap_or(""),
        mach["loadavg_start"].as_str().unwrap_or(""), mach["loadavg_end"].as_str().unwrap_or(""),
        mach["server_profile"].as_str().unwrap_or(""), mach["harness_profile"].as_str().unwrap_or(""),
        sum["settings"]["generator"].as_str().unwrap_or(""),
    );
    let dirty = mach["git_dirty"].as_array().map_or(0, Vec::len);
    let _ = writeln!(
        m,
        "Code: commit {}{}.\n",
        mach["git_commit"].as_str().unwrap_or("?"),
        if dirty > 0 {
            format!(" plus {dirty} uncommitted server file(s) (listed in the JSON)")
        } else {
            String::new()
        }
    );
    let engines = sum["engines"].as_object().cloned().unwrap_or_default();
    for (name, e) in &engines {
        let d = &e["database"];
        match name.as_str() {
            "sqlite" => {
                let _ = writeln!(
                    m,
                    "- **sqlite** {}: {}; {}.",
                    d["version"].as_str().unwrap_or(""),
                    d["durability"].as_str().unwrap_or(""),
                    d["server_pools"].as_str().unwrap_or("")
                );
            }
            _ => {
                let st = &d["settings"];
                let _ = writeln!(
                    m,
                    "- **postgres** {}: synchronous_commit={}, fsync={}, wal_sync_method={}, full_page_writes={}, commit_delay={}, shared_buffers={}; {}.",
                    d["version"].as_str().unwrap_or("").split(" on ").next().unwrap_or(""),
                    st["synchronous_commit"].as_str().unwrap_or("?"), st["fsync"].as_str().unwrap_or("?"),
                    st["wal_sync_method"].as_str().unwrap_or("?"), st["full_page_writes"].as_str().unwrap_or("?"),
                    st["commit_delay"].as_str().unwrap_or("?"), st["shared_buffers"].as_str().unwrap_or("?"),
                    d["server_pools"].as_str().unwrap_or(""),
                );
            }
        }
    }

    let _ = writeln!(m, "\n### Same-run baselines\n");
    let _ = writeln!(m, "| engine | raw commits/s, 1 conn | raw commits/s, c={} (→ after the lifecycle) | commit p50 / p99 ms (1 conn) | commits+NOTIFY/s, c={} | /healthz req/s, c={} | /healthz p50 / p99 ms |", sum["settings"]["pairs"], sum["settings"]["pairs"], sum["settings"]["pairs"]);
    let _ = writeln!(m, "|---|---|---|---|---|---|---|");
    for (name, e) in &engines {
        let b = &e["baselines"];
        let rc = &b["raw_commits"];
        let _ = writeln!(
            m,
            "| {name} | {} | {}{} | {} | {} | {} | {} |",
            num(&rc["c1"]["per_s"]),
            num(&rc["cn"]["per_s"]),
            after(&rc["cn_after"]),
            pp(&rc["c1"]),
            num(&rc["cn_notify"]["per_s"]),
            num(&b["healthz"]["per_s"]),
            pp(&b["healthz"])
        );
    }

    let _ = writeln!(
        m,
        "\n### Lifecycle (send → lease → result → drain, {} pairs, {} tasks)\n",
        sum["settings"]["pairs"], sum["settings"]["tasks"]
    );
    let _ = writeln!(m, "| engine | tasks/s | req/s | ÷ raw commits/s (c=n) | target 0.7×commits/4 | send p50/p99 ms | lease | result | drain | whole task | CPU ms/task server / postgres / generator | cores busy: ours / others |");
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, e) in &engines {
        let l = &e["lifecycle"];
        if !l.is_object() {
            continue;
        }
        let o = &l["ops"];
        let c = &l["cpu"];
        let _ = writeln!(
            m,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} / {} | {} / {} |",
            num(&l["tasks_per_s"]),
            num(&l["requests_per_s"]),
            num(&l["ratios"]["tasks_per_s_over_raw_commits_cn"]),
            num(&l["ratios"]["target_tasks_per_s"]),
            pp(&o["send"]),
            pp(&o["lease"]),
            pp(&o["result"]),
            pp(&o["drain"]),
            pp(&o["task"]),
            num(&c["server_cpu_ms_per_unit"]),
            num(&c["postgres_cpu_ms_per_unit"]),
            num(&c["generator_cpu_ms_per_unit"]),
            num(&c["cores_busy"]),
            num(&c["other_cores_busy"]),
        );
    }
    for (name, e) in &engines {
        let r = &e["lifecycle"]["ratios"];
        if r.is_object() {
            let _ = writeln!(
                m,
                "\n{name}: each operation's p50 in units of one raw commit's p50 (1 conn): send {}×, lease {}×, result {}×, drain {}×; in units of a /healthz p50: send {}×, lease {}×, result {}×, drain {}×; request rate ÷ /healthz rate {}.",
                num(&r["send_p50_over_commit_p50"]), num(&r["lease_p50_over_commit_p50"]), num(&r["result_p50_over_commit_p50"]), num(&r["drain_p50_over_commit_p50"]),
                num(&r["send_p50_over_healthz_p50"]), num(&r["lease_p50_over_healthz_p50"]), num(&r["result_p50_over_healthz_p50"]), num(&r["drain_p50_over_healthz_p50"]),
                num(&r["requests_per_s_over_healthz"]),
            );
        }
        let pg = &e["lifecycle"]["postgres"];
        if pg.is_object() {
            let _ = writeln!(
                m,
                "\n{name} counters per task: {} committed transactions (this database, reads included), {} write transactions (xids, cluster-wide), {} WAL bytes, {} WAL fsyncs, {} rows inserted, {} rows updated.",
                num(&pg["xact_commit_per_unit"]), num(&pg["next_xid_per_unit"]), num(&pg["wal_bytes_per_unit"]), num(&pg["wal_sync_per_unit"]),
                num(&pg["tup_inserted_per_unit"]), num(&pg["tup_updated_per_unit"]),
            );
        }
    }

    crate::batches_report::markdown(&mut m, &engines);

    if engines
        .iter()
        .any(|(_, e)| e["lifecycle_agents"].is_object())
    {
        let _ = writeln!(
            m,
            "\n### Lifecycle with waiting agents ({} pairs, {} tasks: each worker waits in a long-poll for its next task, each sender in a long-poll for its result)\n",
            sum["settings"]["pairs"], sum["settings"]["tasks"]
        );
        let _ = writeln!(m, "| engine | tasks/s | ÷ raw commits/s (c=n) | ÷ target 0.7×commits/4 | ÷ the lifecycle above | send p50/p99 ms | result p50/p99 ms | whole task p50/p99 ms | batch transactions per task | hand-offs per task: claim / drain | CPU ms/task server / postgres / generator | cores busy: ours / others |");
        let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (name, e) in &engines {
            let l = &e["lifecycle_agents"];
            if !l.is_object() {
                continue;
            }
            let (o, c, r, sm) = (
                &l["ops"],
                &l["cpu"],
                &l["ratios"],
                &l["server_metrics_per_task"],
            );
            let _ = writeln!(
                m,
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} / {} | {} / {} |",
                num(&l["tasks_per_s"]),
                num(&r["tasks_per_s_over_raw_commits_cn"]),
                num(&r["tasks_per_s_over_target"]),
                num(&r["tasks_per_s_over_chain_lifecycle"]),
                pp(&o["send"]),
                pp(&o["result"]),
                pp(&o["task"]),
                num(&sm["a2a_pg_batch_transactions_total"]),
                num(&sm["a2a_handoffs_total{kind=\"claim\"}"]),
                num(&sm["a2a_handoffs_total{kind=\"drain\"}"]),
                num(&c["server_cpu_ms_per_unit"]),
                num(&c["postgres_cpu_ms_per_unit"]),
                num(&c["generator_cpu_ms_per_unit"]),
                num(&c["cores_busy"]),
                num(&c["other_cores_busy"]),
            );
        }
    }

    let _ = writeln!(m, "\n### Depth (queued tasks loaded in bulk; {} sends + {} lease claims measured at each depth)\n", sum["settings"]["depth_ops"], sum["settings"]["depth_ops"]);
    let _ = writeln!(m, "| engine | depth | bulk load s | send p50 / p99 ms | lease p50 / p99 ms | lease p99 ÷ first depth | 1 client: send p50 / p99 ms | 1 client: lease p50 / p99 ms | lease by a recipient with 1 task p50 / max ms | /metrics p50 ms | /a2a/queue p50 ms | server VmHWM MiB | VmRSS MiB |");
    let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, e) in &engines {
        for row in e["depth"].as_array().cloned().unwrap_or_default() {
            let lonely = format!(
                "{} / {}",
                ms(&row["lonely_lease"]["p50_ms"]),
                ms(&row["lonely_lease"]["max_ms"])
            );
            let _ = writeln!(
                m,
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} |",
                row["depth"],
                num(&row["load"]["secs"]),
                pp(&row["send"]),
                pp(&row["lease"]),
                num(&row["ratios"]["lease_p99_over_first_depth"]),
                pp(&row["serial"]["send"]),
                pp(&row["serial"]["lease"]),
                lonely,
                ms(&row["metrics_scrape"]["p50_ms"]),
                ms(&row["queue_view_limit_10"]["p50_ms"]),
                row["server_vmhwm_kib"].as_f64().unwrap_or(0.0) / 1024.0,
                row["server_vmrss_kib"].as_f64().unwrap_or(0.0) / 1024.0,
            );
        }
    }

    let p = &sum["peer"];
    if p.is_object() {
        let l = &sum["engines"]["postgres"]["lifecycle"];
        let _ = writeln!(m, "\n### Peer: pgqueuer {} on the same PostgreSQL ({} jobs, {} producers, {} consumer(s), batch {})\n", p["pgqueuer_version"].as_str().unwrap_or(""), p["jobs"], p["producers"], p["consumers"], p["batch_size"]);
        let _ = writeln!(m, "| | a2a-mailbox (postgres) | pgqueuer |");
        let _ = writeln!(m, "|---|---|---|");
        let _ = writeln!(
            m,
            "| tasks or jobs per s | {} | {} |",
            num(&l["tasks_per_s"]),
            num(&p["jobs_per_s"])
        );
        let _ = writeln!(
            m,
            "| ratio a2a ÷ pgqueuer | {} | |",
            num(&div(f(&l["tasks_per_s"]), f(&p["jobs_per_s"])))
        );
        let _ = writeln!(
            m,
            "| enqueue (send) p50 / p99 ms | {} | {} |",
            pp(&l["ops"]["send"]),
            pp(&p["enqueue"])
        );
        let _ = writeln!(
            m,
            "| committed transactions per task/job | {} | {} |",
            num(&l["postgres"]["xact_commit_per_unit"]),
            num(&p["postgres"]["xact_commit_per_unit"])
        );
        let _ = writeln!(
            m,
            "| WAL bytes per task/job | {} | {} |",
            num(&l["postgres"]["wal_bytes_per_unit"]),
            num(&p["postgres"]["wal_bytes_per_unit"])
        );
        let _ = writeln!(
            m,
            "| WAL fsyncs per task/job | {} | {} |",
            num(&l["postgres"]["wal_sync_per_unit"]),
            num(&p["postgres"]["wal_sync_per_unit"])
        );
        let _ = writeln!(
            m,
            "| postgres CPU ms per task/job | {} | {} |",
            num(&l["cpu"]["postgres_cpu_ms_per_unit"]),
            num(&p["cpu"]["postgres_cpu_ms_per_unit"])
        );
        let _ = writeln!(
            m,
            "| client/server CPU ms per task/job | server {} + generator {} | python {} |",
            num(&l["cpu"]["server_cpu_ms_per_unit"]),
            num(&l["cpu"]["generator_cpu_ms_per_unit"]),
            num(&json!(
                p["client_cpu_secs"].as_f64().unwrap_or(0.0) * 1000.0
                    / p["jobs"].as_f64().unwrap_or(1.0)
            ))
        );
    }

    crate::scale_report::markdown(&mut m, &engines);

    let _ = writeln!(m, "\n### Targets\n");
    let _ = writeln!(m, "| target | engine | value | threshold | met |");
    let _ = writeln!(m, "|---|---|---|---|---|");
    for t in sum["targets"].as_array().cloned().unwrap_or_default() {
        let met = match t["met"].as_bool() {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "–",
        };
        let _ = writeln!(
            m,
            "| {} ({}) | {} | {} {} | {} | {met} |",
            t["target"].as_str().unwrap_or(""),
            t["note"].as_str().unwrap_or(""),
            t["engine"].as_str().unwrap_or(""),
            num(&t["value"]),
            t["unit"].as_str().unwrap_or(""),
            num(&t["threshold"])
        );
    }
    m
}
