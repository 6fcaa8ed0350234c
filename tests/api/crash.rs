//! Crash safety with a real process (docs/operations.md#the-storage-engines): kill -9 the server,
//! restart it on the same database, and find every acknowledged task, lease, attempt counter and
//! result unchanged.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::common::*;

async fn snapshot(app: &TestApp, ids: &[String]) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    for id in ids {
        out.insert(id.clone(), app.status_ok(id).await);
    }
    out
}

both_engines!(kill_9_and_restart_keeps_every_task_lease_attempt_and_result);
async fn kill_9_and_restart_keeps_every_task_lease_attempt_and_result(mut app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let mut tasks = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..6 {
        let t = task("alice", "bob");
        ids.push(app.send_ok(&alice, &t).await);
        tasks.push(t);
    }
    let mut leases = Vec::new();
    for id in &ids[..4] {
        let (leased, lease) = app.lease_some(&bob).await;
        assert_eq!(&leased, id);
        leases.push(lease);
    }
    let resolved_result = result(&ids[0], "ok", "resolved before the crash");
    app.post_result(&bob, &resolved_result).await.expect(201);
    app.drain(&alice).await.expect("drain before the crash");
    let mut pending_result = result(&ids[1], "partial", "pending across the crash");
    pending_result["lease_id"] = leases[1]["lease_id"].clone();
    app.post_result(&bob, &pending_result).await.expect(201);

    let before = snapshot(&app, &ids).await;
    let states: Vec<&str> = ids
        .iter()
        .map(|id| before[id]["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "resolved",
            "result_pending",
            "in_flight",
            "in_flight",
            "queued",
            "queued"
        ]
    );
    let old_address = app.address.clone();

    app.restart().await;
    assert_ne!(app.address, old_address, "a new process on a new port");

    let after = snapshot(&app, &ids).await;
    for id in &ids {
        assert_eq!(
            after[id], before[id],
            "task {id} changed across kill -9 + restart"
        );
    }

    // Replays still answer the first answers.
    let replay = app.send(&alice, &tasks[0]).await;
    assert_eq!(
        replay.expect(200),
        &json!({"kind": "a2a_task_queued", "task_id": ids[0]})
    );
    assert!(replay.replayed());
    let replay = app.post_result(&bob, &pending_result).await;
    assert_eq!(
        replay.expect(200),
        &json!({"kind": "a2a_result_posted", "task_id": ids[1]})
    );

    // Leasing never hands out an already leased task; the queued ones come in order.
    assert_eq!(app.lease_some(&bob).await.0, ids[4]);
    assert_eq!(app.lease_some(&bob).await.0, ids[5]);
    assert!(app.lease(&bob).await.is_none());

    // The pending result survives and drains once.
    let drained = app
        .drain(&alice)
        .await
        .expect("the pending result survives");
    assert_eq!(drained["task_id"], json!(ids[1]));
    assert_eq!(drained["status"], "partial");
    assert_eq!(drained["content"], pending_result["content"]);
    assert!(app.drain(&alice).await.is_none());

    // The in-flight leases are still valid for their holder.
    let mut res = result(&ids[2], "ok", "after the crash");
    res["lease_id"] = leases[2]["lease_id"].clone();
    app.post_result(&bob, &res).await.expect(201);
}

both_engines!(kill_9_under_load_loses_no_acknowledged_task_and_delivers_none_twice);
async fn kill_9_under_load_loses_no_acknowledged_task_and_delivers_none_twice(mut app: TestApp) {
    let alice = app.alice();
    let bob = app.bob();
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let leased: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut set = JoinSet::new();

    for _ in 0..3 {
        let (api, alice, acked, stop) =
            (app.api.clone(), alice.clone(), acked.clone(), stop.clone());
        set.spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let t = task("alice", "bob");
                let Ok(r) = api
                    .client
                    .post(api.url("/a2a/tasks"))
                    .bearer_auth(&alice)
                    .json(&t)
                    .send()
                    .await
                else {
                    break; // the server died under us: the outcome of this send is unknown
                };
                match r.status().as_u16() {
                    201 => acked
                        .lock()
                        .unwrap()
                        .push(t["id"].as_str().unwrap().to_owned()),
                    s => panic!("send answered {s} under load"),
                }
            }
        });
    }
    for _ in 0..2 {
        let (api, bob, leased, stop) = (app.api.clone(), bob.clone(), leased.clone(), stop.clone());
        set.spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let Ok(r) = api
                    .client
                    .get(api.url("/a2a/tasks/next"))
                    .bearer_auth(&bob)
                    .send()
                    .await
                else {
                    break;
                };
                assert_eq!(r.status().as_u16(), 200, "lease under load");
                let Ok(b) = r.json::<Value>().await else {
                    break;
                };
                if let Some(id) = b["task"]["id"].as_str() {
                    let lease_id = b["lease"]["lease_id"].as_str().unwrap().to_owned();
                    leased.lock().unwrap().push((id.to_owned(), lease_id));
                } else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        });
    }

    // Kill once enough work has been acknowledged (a condition, polled).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while acked.lock().unwrap().len() < 150 || leased.lock().unwrap().len() < 30 {
        assert!(
            std::time::Instant::now() < deadline,
            "no progress under load"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    app.kill();
    stop.store(true, Ordering::SeqCst);
    while let Some(r) = set.join_next().await {
        r.expect("a load client panicked");
    }
    let acked = acked.lock().unwrap().clone();
    let leased = leased.lock().unwrap().clone();

    app.start().await;
    let leased_before: HashMap<&String, &String> = leased.iter().map(|(i, l)| (i, l)).collect();
    assert_eq!(
        leased_before.len(),
        leased.len(),
        "a task was leased twice before the crash"
    );
    let mut queued_after = HashSet::new();
    for id in &acked {
        let s = app.status_ok(id).await;
        match leased_before.get(id) {
            Some(lease_id) => {
                assert_eq!(s["state"], "in_flight", "leased task {id}: {s}");
                assert_eq!(
                    s["lease"]["lease_id"],
                    json!(lease_id),
                    "lease of {id}: {s}"
                );
                assert_eq!(s["attempt"], 1);
            }
            None => {
                let state = s["state"].as_str().unwrap();
                // in_flight: its lease answer was lost in the crash; still never redelivered.
                assert!(
                    state == "queued" || state == "in_flight",
                    "acknowledged task {id} is {state}"
                );
                if state == "queued" {
                    queued_after.insert(id.clone());
                }
            }
        }
    }

    let mut leased_after = HashSet::new();
    while let Some((t, lease)) = app.lease(&bob).await {
        let id = t["id"].as_str().unwrap().to_owned();
        assert!(
            !leased_before.contains_key(&id),
            "task {id} was delivered again after the restart"
        );
        assert_eq!(lease["attempt"], 1, "{id} had never been leased");
        assert!(
            leased_after.insert(id.clone()),
            "{id} leased twice after the restart"
        );
    }
    assert!(
        queued_after.is_subset(&leased_after),
        "every acknowledged queued task is leasable after the restart"
    );
}
