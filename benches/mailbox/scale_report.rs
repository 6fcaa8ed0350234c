//! The scale phases' targets and Markdown tables (waiting agents, hand-off, parked long-polls,
//! open loop, instances).

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::report::{num, pp, target};

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// The scale phases' target rows of one engine.
pub fn targets(name: &str, e: &Value, caveat: &str, out: &mut Vec<Value>) {
    let w = &e["waiting"];
    if w.is_object() {
        out.push(target(
            "waiting agents: tasks/s of the waiting agents ÷ tasks/s of the closed loop >= 1",
            name,
            f(&w["over_lifecycle"]),
            Some(1.0),
            false,
            "ratio",
            format!(
                "{} agents ({} pairs) vs the {}-pair closed loop of this run; bound of this harness (no slower than the closed loop){caveat}",
                w["agents"], w["pairs"], w["lifecycle_pairs"]
            ),
        ));
    }
    let h = &e["handoff"];
    if h.is_object() {
        out.push(target(
            "hand-off p50 <= 2 x one raw commit's p50",
            name,
            f(&h["handoff"]["p50_ms"]),
            f(&h["raw_commit"]["p50_ms"]).map(|p| 2.0 * p),
            true,
            "ms",
            format!(
                "send's 201 to the waiting worker's lease, {} agents parked, {} serial samples{caveat}",
                h["parked_agents"], h["handoff"]["n"]
            ),
        ));
        out.push(target(
            "hand-off p99 <= 10 ms",
            name,
            f(&h["handoff"]["p99_ms"]),
            Some(10.0),
            true,
            "ms",
            format!("{} agents parked{caveat}", h["parked_agents"]),
        ));
    }
    let p = &e["parked"];
    if p.is_object() {
        let note = format!(
            "{} parked long-polls from {} callers{caveat}",
            p["polls"], p["callers"]
        );
        out.push(target(
            "parked long-polls: server RSS while parked <= 200 MiB",
            name,
            f(&p["rss_parked_mib"]),
            Some(200.0),
            true,
            "MiB",
            note.clone(),
        ));
        out.push(target(
            "parked long-polls: server CPU while they wait <= 2 % of one core",
            name,
            f(&p["cpu_pct_of_one_core"]),
            Some(2.0),
            true,
            "%",
            format!("over {} s; {note}", p["cpu_window_secs"]),
        ));
        out.push(target(
            "parked long-polls: wake-ups per send <= 1.05",
            name,
            f(&p["wakeups_per_send"]),
            Some(1.05),
            true,
            "wake-ups",
            format!("a2a_wakeups_total delta over {} sends to distinct callers (– when the server does not export it); {note}", p["sends"]),
        ));
        out.push(target(
            "parked long-polls: server RSS after the waits ended <= 1.2 x idle RSS",
            name,
            f(&p["rss_after_mib"]),
            f(&p["rss_idle_mib"]).map(|x| 1.2 * x),
            true,
            "MiB",
            format!(
                "{} s after the polls were closed; {note}",
                p["cpu_window_secs"]
            ),
        ));
    }
    if let Some(rows) = e["openloop"]["rates"].as_array() {
        if let Some(r) = rows.iter().find(|r| f(&r["fraction"]) == Some(0.8)) {
            out.push(target(
                "open loop at 80 % of the closed-loop rate: task life p99 <= 3 x p50",
                name,
                f(&r["life"]["p99_ms"]),
                f(&r["life"]["p50_ms"]).map(|x| 3.0 * x),
                true,
                "ms",
                format!("{} Poisson arrivals at {} tasks/s, life from the scheduled arrival to the drain{caveat}", r["tasks"], r["rate_per_s"]),
            ));
            // A p99 within 3 x a p50 can also be a queue that grows all run long, every life
            // waiting alike: the tasks must also be served as fast as they arrive.
            out.push(target(
                "open loop at 80 % of the closed-loop rate: tasks served/s >= 0.95 x the arrival rate (no queueing collapse)",
                name,
                f(&r["achieved_per_s"]),
                f(&r["rate_per_s"]).map(|x| 0.95 * x),
                false,
                "tasks/s",
                format!("from the first scheduled arrival to the last drain{caveat}"),
            ));
        }
    }
    let i = &e["instances"];
    if i.is_object() {
        out.push(target(
            "instances: tasks lost or drained twice = 0",
            name,
            f(&i["lost_or_duplicated"]),
            Some(0.5),
            true,
            "tasks",
            format!(
                "{} and {} tasks sent through 3 and 1 instances{caveat}",
                i["three"]["sent"], i["one"]["sent"]
            ),
        ));
        out.push(target(
            "instances: 3-instance tasks/s >= 0.9 x 1-instance tasks/s",
            name,
            f(&i["three_tasks_per_s"]),
            f(&i["one_tasks_per_s"]).map(|x| 0.9 * x),
            false,
            "tasks/s",
            format!(
                "{} pairs (the waiting agents), every hand-off across instances, one database; the mean of two rounds each, alternated{caveat}",
                i["three"]["pairs"]
            ),
        ));
        out.push(target(
            "instances: hand-off p99 across instances <= 2 x within one",
            name,
            f(&i["handoff_cross"]["from_send_start"]["p99_ms"]),
            f(&i["handoff_within"]["from_send_start"]["p99_ms"]).map(|x| 2.0 * x),
            true,
            "ms",
            format!(
                "from the send's start to the worker's lease (within one instance the lease is often answered before the send), {} samples, {} agents parked{caveat}",
                i["handoff_cross"]["n"], i["handoff_cross"]["parked_agents"]
            ),
        ));
    }
}

/// The scale phases' tables, when any ran.
pub fn markdown(m: &mut String, engines: &Map<String, Value>) {
    crate::streams::markdown(m, engines);
    let has = |k: &str| engines.values().any(|e| e[k].is_object());
    if has("waiting") {
        let _ = writeln!(
            m,
            "\n### Waiting agents (every worker and sender waits in a long-poll)\n"
        );
        let _ = writeln!(m, "| engine | agents | tasks/s | closed loop tasks/s (pairs) | ratio | wake-ups per task | whole task p50 / p99 ms |");
        let _ = writeln!(m, "|---|---|---|---|---|---|---|");
        for (name, e) in engines {
            let w = &e["waiting"];
            if w.is_object() {
                let _ = writeln!(
                    m,
                    "| {name} | {} | {} | {} ({}) | {} | {} | {} |",
                    w["agents"],
                    num(&w["tasks_per_s"]),
                    num(&w["lifecycle_tasks_per_s"]),
                    w["lifecycle_pairs"],
                    num(&w["over_lifecycle"]),
                    num(&w["wakeups_per_task"]),
                    pp(&w["run"]["ops"]["task"])
                );
            }
        }
    }
    if has("handoff") {
        let _ = writeln!(
            m,
            "\n### Hand-off (send's 201 → waiting worker's lease, serial)\n"
        );
        let _ = writeln!(m, "| engine | agents parked | samples | hand-off p50 / p99 ms | raw commit p50 / p99 ms | p50 ÷ commit p50 | lease before the send's answer | wake-ups per hand-off |");
        let _ = writeln!(m, "|---|---|---|---|---|---|---|---|");
        for (name, e) in engines {
            let h = &e["handoff"];
            if h.is_object() {
                let _ = writeln!(
                    m,
                    "| {name} | {} | {} | {} | {} | {} | {} | {} |",
                    h["parked_agents"],
                    h["handoff"]["n"],
                    pp(&h["handoff"]),
                    pp(&h["raw_commit"]),
                    num(&h["p50_over_raw_commit_p50"]),
                    h["handoff"]["lease_before_send_answer"],
                    num(&h["handoff"]["wakeups_per_handoff"])
                );
            }
        }
    }
    if has("parked") {
        let _ = writeln!(m, "\n### Parked long-polls\n");
        let _ = writeln!(m, "| engine | polls (callers) | parked in s | RSS idle / parked / after MiB | CPU % of a core while parked | sends | leased | wake-ups per send | 429 / 503 | connections closed |");
        let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|");
        for (name, e) in engines {
            let p = &e["parked"];
            if p.is_object() {
                let _ = writeln!(
                    m,
                    "| {name} | {} ({}) | {} | {} / {} / {} | {} | {} | {} | {} | {} / {} | {} |",
                    p["polls"],
                    p["callers"],
                    num(&p["park_secs"]),
                    num(&p["rss_idle_mib"]),
                    num(&p["rss_parked_mib"]),
                    num(&p["rss_after_mib"]),
                    num(&p["cpu_pct_of_one_core"]),
                    p["sends"],
                    p["leased"],
                    num(&p["wakeups_per_send"]),
                    p["status_429_too_many_waiting"],
                    p["status_503_overloaded"],
                    p["connections_closed"]
                );
            }
        }
    }
    if has("openloop") {
        let _ = writeln!(
            m,
            "\n### Open loop (Poisson arrivals; life from the scheduled arrival to the drain)\n"
        );
        let _ = writeln!(m, "| engine | closed loop tasks/s | fraction | rate /s | achieved /s | life p50 / p99 ms | p99 ÷ p50 | slowest 1 % of lives, median ms from the arrival to: the send's start / its answer / the lease; lease → drain |");
        let _ = writeln!(m, "|---|---|---|---|---|---|---|---|");
        for (name, e) in engines {
            let o = &e["openloop"];
            for r in o["rates"].as_array().cloned().unwrap_or_default() {
                let _ = writeln!(
                    m,
                    "| {name} | {} | {} | {} | {} | {} | {} | {} |",
                    num(&o["closed_loop_tasks_per_s"]),
                    r["fraction"],
                    num(&r["rate_per_s"]),
                    num(&r["achieved_per_s"]),
                    pp(&r["life"]),
                    num(&r["p99_over_p50"]),
                    ["send_start", "send", "to_lease", "lease_to_drain"]
                        .map(|k| num(&r["stages"][k]["slowest_1pct_p50_ms"]))
                        .join(" / ")
                );
            }
        }
    }
    if has("instances") {
        let _ = writeln!(
            m,
            "\n### Instances (3 servers on one PostgreSQL database)\n"
        );
        let _ = writeln!(m, "| engine | 1 instance tasks/s (mean of 2 rounds) | 3 instances tasks/s (mean of 2) | ratio | 3 instances, pairs within one: tasks/s (÷ 1) | few pairs: 1 / 3 instances tasks/s (ratio) | sent / drained / lost / twice (3 inst.) | hand-off within p50 / p99 ms | across p50 / p99 ms | across p99 ÷ within p99 |");
        let _ = writeln!(m, "|---|---|---|---|---|---|---|---|---|---|");
        for (name, e) in engines {
            let i = &e["instances"];
            if i.is_object() {
                let (t, few) = (&i["three"], &i["few_pairs"]);
                let _ = writeln!(
                    m,
                    "| {name} | {} | {} | {} | {} ({}) | {} / {} ({}) | {} / {} / {} / {} | {} | {} | {} |",
                    num(&i["one_tasks_per_s"]),
                    num(&i["three_tasks_per_s"]),
                    num(&i["three_over_one"]),
                    num(&i["three_pairs_within"]["tasks_per_s"]),
                    num(&i["three_pairs_within_over_one"]),
                    num(&few["one"]["tasks_per_s"]),
                    num(&few["three"]["tasks_per_s"]),
                    num(&few["three_over_one"]),
                    t["sent"],
                    t["drained"],
                    t["lost"],
                    t["duplicates"],
                    pp(&i["handoff_within"]),
                    pp(&i["handoff_cross"]),
                    num(&i["cross_p99_over_within_p99"])
                );
            }
        }
    }
}
