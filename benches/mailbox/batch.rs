//! The batch phase: 500 tasks sent one request at a time against the same 500 as one
//! `POST /a2a/tasks/batch`, alternating round by round on one server and database.

use std::time::Instant;

use anyhow::Result;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::db::Store;
use crate::load::Agent;
use crate::server::{Engine, Server};
use crate::stats::round3;
use crate::Settings;

/// `n` tasks for one recipient, or with `fan_out` each for another (`bench-worker-<i>`).
fn tasks_to(n: usize, fan_out: bool) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let recipient = if fan_out {
                format!("bench-worker-{i}")
            } else {
                "bench-worker".to_owned()
            };
            json!({
                "id": Uuid::new_v4(),
                "sender": "bench-sender",
                "recipient": recipient,
                "intent_text": "summarise the attached report and answer with three bullet points",
            })
        })
        .collect()
}

fn tasks(n: usize) -> Vec<Value> {
    tasks_to(n, false)
}

pub async fn batch(s: &Settings, engine: Engine) -> Result<Value> {
    let (size, rounds) = if s.smoke { (20, 2) } else { (500, 5) };
    let store = Store::fresh(s, engine, "batch").await?;
    let server = Server::start(s, engine, &store, "batch").await?;
    let sender = Agent::new(&server, "bench-sender", &["a2a.send.*"])?;
    // Warm-up: one of each.
    sender.post("/a2a/tasks", &tasks(1)[0], 201).await?;
    sender
        .post("/a2a/tasks/batch", &json!({"tasks": tasks(size)}), 201)
        .await?;
    let (mut single_secs, mut batch_secs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    // A batch that fans out to as many recipients as it has tasks (one audit row per item).
    let mut fan_out_secs = Vec::new();
    for r in 0..rounds {
        let mut one = 0.0;
        let mut many = 0.0;
        for which in if r % 2 == 0 { [0, 1] } else { [1, 0] } {
            let ts = tasks(size);
            let t = Instant::now();
            if which == 0 {
                for task in &ts {
                    sender.post("/a2a/tasks", task, 201).await?;
                }
                one = t.elapsed().as_secs_f64();
            } else {
                let answer = sender
                    .post("/a2a/tasks/batch", &json!({"tasks": ts}), 201)
                    .await?;
                many = t.elapsed().as_secs_f64();
                anyhow::ensure!(
                    answer["tasks"].as_array().map(Vec::len) == Some(size),
                    "the batch answered another number of tasks"
                );
            }
        }
        let t = Instant::now();
        let body = json!({"tasks": tasks_to(size, true)});
        sender.post("/a2a/tasks/batch", &body, 201).await?;
        fan_out_secs.push(t.elapsed().as_secs_f64());
        eprintln!(
            "  {} batch round {}/{rounds}: {size} single sends {:.3} s, one batch {:.3} s, \
             one batch to {size} recipients {:.3} s",
            engine.name(),
            r + 1,
            one,
            many,
            fan_out_secs[r]
        );
        single_secs.push(one);
        batch_secs.push(many);
        ratios.push(one / many);
    }
    let queued = store.queued().await?;
    drop(sender);
    server.stop().await?;
    store.drop_it(s).await?;
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok(json!({
        "tasks_per_round": size,
        "rounds": rounds,
        "single_secs": single_secs.iter().map(|x| round3(*x)).collect::<Vec<_>>(),
        "batch_secs": batch_secs.iter().map(|x| round3(*x)).collect::<Vec<_>>(),
        "single_tasks_per_s": round3(size as f64 / median(&single_secs)),
        "batch_tasks_per_s": round3(size as f64 / median(&batch_secs)),
        "batch_over_single_median": round3(median(&ratios)),
        "batch_over_single_min": round3(ratios.iter().cloned().fold(f64::INFINITY, f64::min)),
        "fan_out_batch_secs": fan_out_secs.iter().map(|x| round3(*x)).collect::<Vec<_>>(),
        "fan_out_over_single_median": round3(median(&single_secs) / median(&fan_out_secs)),
        "queued_after": queued,
    }))
}
