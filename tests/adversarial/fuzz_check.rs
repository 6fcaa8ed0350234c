//! The fuzzer's checks after each batch: every listing (native as operator, sender and
//! recipient; the queue snapshot; recent tasks and results; A2A ListTasks on both bindings; the
//! dashboard's leases) still answers 2xx with JSON (or its page), a lease of a task planted for
//! the recipient still answers and parses, the mailbox's tasks keep the state machine's
//! invariants, and now and then a case of the property test runs beside the fuzz, against its
//! model.

use std::collections::BTreeMap;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

use super::facade::{a2a_request, Binding};
use super::fuzz_gen::Rng;
use super::fuzz_world::World;
use super::kit::{call, short, Req};
use super::model::St;
use super::prop::{run_case, step, Step};
use super::world::{try_snapshot, Snap};
use crate::common::{result, task};

/// Every listing and a lease; each failure as one line.
pub async fn health(w: &mut World) -> Vec<String> {
    let mut bad = Vec::new();
    let f = &w.fix;
    let bearer = |t: &str| Some(format!("Bearer {t}"));
    let (ops, st, rt) = (
        bearer(&w.ops),
        bearer(&f.sender_token),
        bearer(&f.recipient_token),
    );
    let wild = w.jwt("wildcard").and_then(|t| bearer(&t));
    let mut reads: Vec<(String, Req, Option<String>)> = Vec::new();
    for (who, auth) in [("operator", &ops), ("sender", &st), ("recipient", &rt)] {
        let req = Req::get("/a2a/tasks?limit=1000");
        reads.push((format!("GET /a2a/tasks as {who}"), req, auth.clone()));
    }
    for path in [
        "/a2a/queue?limit=1000",
        "/a2a/tasks/recent",
        "/a2a/results/recent",
    ] {
        reads.push((format!("GET {path}"), Req::get(path), ops.clone()));
    }
    for (who, auth) in [("sender", &st), ("wildcard", &wild), ("operator", &ops)] {
        for b in [Binding::JsonRpc, Binding::HttpJson] {
            let req = a2a_request(b, &f.recipient, "ListTasks", json!({}));
            reads.push((format!("A2A ListTasks {b:?} as {who}"), req, auth.clone()));
        }
    }
    for (what, req, auth) in reads {
        let r = call(&w.app, &req, auth.as_deref()).await;
        let listed = r.body.is_object() && r.body.get("error").is_none_or(Value::is_null);
        if !(200..300).contains(&r.status) || !listed {
            bad.push(w.with_panic(format!("{what}: {} {}", r.status, short(&r.text))));
        }
    }
    let cookie = format!("a2a_dashboard={}", w.ops);
    let req = Req::get("/dashboard/leases?min_age_ms=0").header("Cookie", &cookie);
    let r = call(&w.app, &req, None).await;
    if r.status != 200 {
        let what = "GET /dashboard/leases with a session";
        bad.push(w.with_panic(format!("{what}: {} {}", r.status, short(&r.text))));
    }
    if let Err(e) = lease_all(w).await {
        bad.push(w.with_panic(e));
    }
    bad
}

/// Plants a task for the recipient, then leases (and answers) until it comes out or the queue
/// is empty: every lease on the way answers 200 with JSON a typed client parses. The sender
/// then drains its results the same way.
async fn lease_all(w: &World) -> Result<(), String> {
    let f = &w.fix;
    let (st, rt) = (
        format!("Bearer {}", f.sender_token),
        format!("Bearer {}", f.recipient_token),
    );
    let planted = task(&f.sender, &f.recipient);
    let r = call(&w.app, &Req::post("/a2a/tasks", &planted), Some(&st)).await;
    if r.status != 201 {
        return Err(format!("planting a task: {} {}", r.status, short(&r.text)));
    }
    for _ in 0..50 {
        let r = call(&w.app, &Req::get("/a2a/tasks/next"), Some(&rt)).await;
        if r.status != 200 || r.body["kind"] != "a2a_task_opt" {
            return Err(format!("a lease: {} {}", r.status, short(&r.text)));
        }
        let Some(id) = r.body["task"]["id"].as_str() else {
            return Err("the planted task never came out of the queue".into());
        };
        let mut answer = result(id, "ok", "fuzz");
        answer["lease_id"] = r.body["lease"]["lease_id"].clone();
        let a = call(&w.app, &Req::post("/a2a/results", &answer), Some(&rt)).await;
        if a.status >= 500 || a.status == 0 {
            return Err(format!(
                "answering a lease: {} {}",
                a.status,
                short(&a.text)
            ));
        }
        if id == planted["id"] {
            break;
        }
    }
    for _ in 0..50 {
        let r = call(&w.app, &Req::get("/a2a/results/next"), Some(&st)).await;
        if r.status != 200 || r.body["kind"] != "a2a_result_opt" {
            return Err(format!("a drain: {} {}", r.status, short(&r.text)));
        }
        if r.body["result"].is_null() {
            break;
        }
    }
    Ok(())
}

fn state(wire: &Value) -> Option<St> {
    [
        St::Queued,
        St::InFlight,
        St::ResultPending,
        St::Resolved,
        St::Canceled,
    ]
    .into_iter()
    .find(|s| *wire == s.wire())
}

/// The property test's invariants over the whole mailbox between two snapshots: a lease exactly
/// when in flight, attempts never go down, a resolved or canceled task never changes again
/// (`frozen`: each as first seen terminal) and disappears only by compaction, after which its
/// id is free again (docs/operations.md#compaction): a task sent again under it is a new task.
pub fn invariants(
    before: &Snap,
    after: &Snap,
    frozen: &mut BTreeMap<String, Value>,
) -> Vec<String> {
    let mut bad = Vec::new();
    for (id, t) in after {
        let Some(st) = state(&t["state"]) else {
            bad.push(format!("task {id} in an unknown state: {t}"));
            continue;
        };
        if (st == St::InFlight) != t["lease"].is_string() {
            bad.push(format!("task {id}: {t}"));
        }
        if let Some(b) = before.get(id) {
            if t["attempt"].as_u64() < b["attempt"].as_u64() {
                bad.push(format!("task {id}: attempt went down: {b} -> {t}"));
            }
        }
        if st.terminal() {
            let first = frozen.entry(id.clone()).or_insert_with(|| t.clone());
            if first != t {
                bad.push(format!("terminal task {id} changed: {first} -> {t}"));
            }
        }
    }
    for (id, b) in before {
        let terminal = state(&b["state"]).is_some_and(St::terminal);
        if after.contains_key(id) {
            continue;
        }
        if terminal {
            frozen.remove(id);
        } else {
            bad.push(format!("task {id} vanished: {b}"));
        }
    }
    bad
}

/// The operator's snapshot and the invariants since the last one.
pub async fn invariants_hold(w: &mut World) -> Vec<String> {
    match try_snapshot(&w.app).await {
        Ok(now) => {
            let bad = invariants(&w.last, &now, &mut w.frozen);
            w.last = now;
            bad
        }
        Err(e) => vec![w.with_panic(e)],
    }
}

/// A case of the property test (steps drawn from `rng`; no retry scans, which would requeue
/// the fuzzer's own in-flight tasks and break the case's model), run beside the fuzz on its own
/// agents and checked against its model after every step.
pub async fn model_case(w: &World, rng: &mut Rng, n: usize) -> Option<String> {
    let mut seed = [0u8; 32];
    for chunk in seed.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes());
    }
    let runner_rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
    let mut runner = TestRunner::new_with_rng(Config::default(), runner_rng);
    let steps = proptest::collection::vec(step(), 4..=16)
        .new_tree(&mut runner)
        .expect("steps")
        .current();
    let steps: Vec<Step> = steps
        .into_iter()
        .filter(|s| !matches!(s, Step::Scan { .. }))
        .collect();
    let api = w.app.api.clone();
    let tag = format!("fuzzmodel{n}");
    let what = format!("the property test's case {tag} ({steps:?})");
    let run = tokio::spawn(async move { run_case(&api, tag, &steps).await });
    match run.await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(w.with_panic(format!("{what}: {e}"))),
        Err(e) => {
            let msg = e
                .try_into_panic()
                .ok()
                .and_then(|p| p.downcast::<String>().ok().map(|s| *s))
                .unwrap_or_else(|| "a panic".into());
            Some(w.with_panic(format!("{what}: panicked: {}", short(&msg))))
        }
    }
}
