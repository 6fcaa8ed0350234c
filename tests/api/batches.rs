//! Leasing, answering, heartbeating and draining in batches (docs/contract.md#batches): each item
//! as its single form, one transaction each, the whole-request refusals, attempt ids and
//! deadlines. Concurrent batch leases and the batch body limit: `batch_races.rs`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

/// Sends `n` tasks from alice to `recipient` in batches of up to 500; answers their ids in order.
pub(crate) async fn queue_tasks(api: &Api, recipient: &str, n: usize) -> Vec<String> {
    let alice = api.token("alice", json!(["a2a.send.*"]));
    let tasks: Vec<Value> = (0..n).map(|_| task("alice", recipient)).collect();
    for chunk in tasks.chunks(500) {
        let r = api
            .post("/a2a/tasks/batch", &alice, &json!({"tasks": chunk}))
            .await;
        r.expect(201);
    }
    tasks
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

/// `GET /a2a/tasks/next{query}` as a batch: its `(task id, lease)` pairs.
pub(crate) async fn lease_batch(api: &Api, token: &str, query: &str) -> Vec<(String, Value)> {
    let r = api.next(token, query).await;
    let b = r.expect(200);
    assert_eq!(b["kind"], "a2a_task_batch", "{}", r.text);
    assert_keys(b, &["kind", "leases"], "batch lease");
    b["leases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["task"]["id"].as_str().unwrap().to_owned(),
                l["lease"].clone(),
            )
        })
        .collect()
}

/// A whole-request refusal naming item `index`.
#[track_caller]
fn assert_refused_at(r: &Resp, index: u64) {
    assert_eq!(
        (r.status, r.body["code"].as_str(), r.body["index"].as_u64()),
        (400, Some("invalid_request"), Some(index)),
        "{}: {}",
        r.what,
        r.text
    );
}

pub(crate) fn answer(id: &str, lease: &Value, text: &str) -> Value {
    let mut r = result(id, "ok", text);
    r["lease_id"] = lease["lease_id"].clone();
    r
}

both_engines!(a_batch_lease_takes_the_oldest_each_with_its_own_lease);
async fn a_batch_lease_takes_the_oldest_each_with_its_own_lease(app: TestApp) {
    let ids = queue_tasks(&app, "bob", 5).await;
    let bob = app.bob();
    let leased = lease_batch(&app, &bob, "?max=3").await;
    let got: Vec<&str> = leased.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(got, ids[..3].iter().map(String::as_str).collect::<Vec<_>>());
    let leases: HashSet<&str> = leased
        .iter()
        .map(|(_, l)| l["lease_id"].as_str().unwrap())
        .collect();
    assert_eq!(leases.len(), 3, "each task has its own lease id");
    for (id, lease) in &leased {
        assert_eq!(lease["attempt"], 1);
        assert_eq!(lease["leased_to"], "bob");
        let s = app.status_ok(id).await;
        assert_eq!(
            (s["state"].as_str(), &s["lease"]),
            (Some("in_flight"), lease)
        );
    }
    let rest = lease_batch(&app, &bob, "?max=100").await;
    assert_eq!(rest.len(), 2);
    assert!(lease_batch(&app, &bob, "?max=100").await.is_empty());
    // Without max, the single answer is unchanged.
    assert!(app.lease(&bob).await.is_none());
    for bad in [
        "?max=0",
        "?max=101",
        "?max=-1",
        "?max=many",
        "?max=3&attempt_id=nope",
    ] {
        assert_error(&app.next(&bob, bad).await, 400, "invalid_request");
    }
    // Leasing another recipient's queue in a batch needs the same grant as a single lease.
    queue_tasks(&app, "dave", 1).await;
    let r = app.next(&bob, "?recipient=dave&max=5").await;
    assert_error(&r, 403, "capability_missing");
    assert_eq!(
        app.status_ok(&queue_tasks(&app, "dave", 1).await[0]).await["state"],
        "queued"
    );
}

both_engines!(a_batch_long_poll_answers_at_the_first_task);
async fn a_batch_long_poll_answers_at_the_first_task(app: TestApp) {
    let bob = app.bob();
    let api = app.api.clone();
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        let leased = lease_batch(&api, &bob, "?max=16&wait_ms=20000").await;
        (leased, started.elapsed())
    });
    // Parked before the task is sent (the metric counts waiting requests).
    app.until_metric("a2a_waiters", 1.0).await;
    let ids = queue_tasks(&app, "bob", 1).await;
    let (leased, took) = waiting.await.unwrap();
    assert_eq!(
        leased.len(),
        1,
        "answered with the one task, not held to fill 16"
    );
    assert_eq!(leased[0].0, ids[0]);
    assert!(
        took < Duration::from_secs(15),
        "answered at the first task, took {took:?}"
    );
}

both_engines!(a_superseded_lease_in_a_batch_of_results_is_refused_alone);
async fn a_superseded_lease_in_a_batch_of_results_is_refused_alone(app: TestApp) {
    queue_tasks(&app, "bob", 3).await;
    let (bob, alice, ops) = (app.bob(), app.alice(), full_ops(&app));
    let leased = lease_batch(&app, &bob, "?max=3").await;
    let (stale_id, stale) = leased[0].clone();
    // An operator requeues the first; bob leases it again under a new lease.
    let r = app
        .post(
            "/a2a/repair",
            &ops,
            &json!({"task_id": stale_id, "reason": "stuck", "command":
                {"action": "requeue", "duplicate_risk": "operator_accepted"}}),
        )
        .await;
    r.expect(200);
    let again = lease_batch(&app, &bob, "?max=1").await;
    assert_eq!(again[0].0, stale_id);
    let results: Vec<Value> = leased
        .iter()
        .map(|(id, lease)| answer(id, lease, "done"))
        .collect();
    let r = app
        .post("/a2a/results/batch", &bob, &json!({"results": results}))
        .await;
    let b = r.expect(200);
    assert_eq!(b["kind"], "a2a_results_posted");
    let items = b["results"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["task_id"], json!(stale_id));
    assert_eq!(
        (items[0]["status"].as_u64(), items[0]["code"].as_str()),
        (Some(409), Some("lease_mismatch"))
    );
    assert!(items[0]["message"]
        .as_str()
        .unwrap()
        .contains("not the current lease"));
    for (item, (id, _)) in items[1..].iter().zip(&leased[1..]) {
        assert_eq!(item, &json!({"task_id": id, "status": 201}));
    }
    // The refused one is still bob's under its new lease; the others are the sender's to drain.
    let s = app.status_ok(&stale_id).await;
    assert_eq!(
        (s["state"].as_str(), &s["lease"]["lease_id"]),
        (Some("in_flight"), &again[0].1["lease_id"])
    );
    assert_ne!(stale["lease_id"], again[0].1["lease_id"]);
    let r = app.get("/a2a/results/next?max=10", &alice).await;
    let drained = r.expect(200);
    assert_eq!(drained["kind"], "a2a_result_batch");
    let got: Vec<&Value> = drained["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["task_id"])
        .collect();
    assert_eq!(
        got,
        vec![&json!(leased[1].0), &json!(leased[2].0)],
        "oldest first"
    );
    // Every item wrote its single form's capability check, filed under its task.
    let r = app
        .get("/audit/recent?limit=1000&kind=capability_check", &ops)
        .await;
    let rows = r.expect(200)["events"].as_array().unwrap().clone();
    for (id, _) in &leased {
        let scope = format!("a2a-respond:{id}");
        let n = rows
            .iter()
            .filter(|e| e["kind"]["scope_id"].as_str() == Some(scope.as_str()))
            .count();
        assert_eq!(n, 1, "one capability_check row for {scope}");
    }
    // The same results again are replays, item by item.
    let replay: Vec<Value> = leased[1..]
        .iter()
        .map(|(id, l)| answer(id, l, "done"))
        .collect();
    let r = app
        .post("/a2a/results/batch", &bob, &json!({"results": replay}))
        .await;
    for item in r.expect(200)["results"].as_array().unwrap() {
        assert_eq!(
            (item["status"].as_u64(), item["replayed"].as_bool()),
            (Some(200), Some(true))
        );
    }
}

both_engines!(a_malformed_batch_of_results_changes_nothing);
async fn a_malformed_batch_of_results_changes_nothing(app: TestApp) {
    queue_tasks(&app, "bob", 2).await;
    let bob = app.bob();
    let leased = lease_batch(&app, &bob, "?max=2").await;
    let (a, b) = (&leased[0], &leased[1]);
    let good = |(id, l): &(String, Value)| answer(id, l, "ok");
    let post = |body: Value| {
        let (app, bob) = (app.api.clone(), bob.clone());
        async move { app.post("/a2a/results/batch", &bob, &body).await }
    };
    let r = post(json!({"results": [good(a), good(b), good(a)]})).await;
    assert_refused_at(&r, 2);
    let r = post(json!({"results": [good(a), {"task_id": b.0, "status": "fine"}]})).await;
    assert_refused_at(&r, 1);
    for body in [
        json!({"results": []}),
        json!({"results": good(a)}),
        json!([good(a)]),
        json!({}),
    ] {
        assert_error(&post(body).await, 400, "invalid_request");
    }
    let many: Vec<Value> = (0..501)
        .map(|_| result(&Uuid::new_v4().to_string(), "ok", "x"))
        .collect();
    assert_error(
        &post(json!({"results": many})).await,
        400,
        "invalid_request",
    );
    for (id, _) in &leased {
        assert_eq!(
            app.status_ok(id).await["state"],
            "in_flight",
            "nothing was stored"
        );
    }
}

both_engines!(heartbeats_in_a_batch_answer_each_lease);
async fn heartbeats_in_a_batch_answer_each_lease(app: TestApp) {
    queue_tasks(&app, "bob", 2).await;
    let bob = app.bob();
    let leased = lease_batch(&app, &bob, "?max=2").await;
    let unknown = Uuid::new_v4().to_string();
    let body = json!({"leases": [
        {"task_id": leased[0].0, "lease_id": leased[0].1["lease_id"]},
        {"task_id": leased[1].0, "lease_id": Uuid::new_v4().to_string()},
        {"task_id": unknown, "lease_id": Uuid::new_v4().to_string()},
    ]});
    clock_tick().await;
    let r = app.post("/a2a/tasks/heartbeat", &bob, &body).await;
    let b = r.expect(200);
    assert_eq!(b["kind"], "a2a_leases_extended");
    let items = b["leases"].as_array().unwrap();
    assert_eq!(items[0]["status"], 200);
    assert!(
        items[0]["lease"]["heartbeat_at_ms"].as_u64() > leased[0].1["heartbeat_at_ms"].as_u64()
    );
    assert_eq!(
        (items[1]["status"].as_u64(), items[1]["code"].as_str()),
        (Some(409), Some("lease_mismatch"))
    );
    assert_eq!(
        (items[2]["status"].as_u64(), items[2]["code"].as_str()),
        (Some(404), Some("not_found"))
    );
    let twice = json!({"leases": [body["leases"][0], body["leases"][0]]});
    let r = app.post("/a2a/tasks/heartbeat", &bob, &twice).await;
    assert_refused_at(&r, 1);
    assert_error(
        &app.post("/a2a/tasks/heartbeat", &bob, &json!({"leases": []}))
            .await,
        400,
        "invalid_request",
    );
}

both_engines!(a_retry_with_the_same_attempt_id_answers_the_same_leases_and_results);
async fn a_retry_with_the_same_attempt_id_answers_the_same_leases_and_results(app: TestApp) {
    queue_tasks(&app, "bob", 6).await;
    let (bob, alice) = (app.bob(), app.alice());
    let attempt = Uuid::new_v4();
    let q = format!("?max=4&attempt_id={attempt}");
    let first = lease_batch(&app, &bob, &q).await;
    assert_eq!(first.len(), 4);
    let again = lease_batch(&app, &bob, &q).await;
    assert_eq!(again, first, "the lost answer again, nothing more taken");
    // Answered ones are no longer held: a retry answers the rest.
    let (id, lease) = &first[0];
    app.post_result(&bob, &answer(id, lease, "done"))
        .await
        .expect(201);
    assert_eq!(lease_batch(&app, &bob, &q).await, first[1..].to_vec());
    // The same id for another request is refused; another id takes the two left.
    for other in [
        format!("?max=5&attempt_id={attempt}"),
        format!("?attempt_id={attempt}"),
    ] {
        assert_error(&app.next(&bob, &other).await, 422, "idempotency_key_reused");
    }
    let r = app
        .get(
            &format!("/a2a/results/next?attempt_id={attempt}"),
            &app.carol(),
        )
        .await;
    assert_eq!(
        r.expect(200)["kind"],
        "a2a_result_opt",
        "another caller's attempt ids are its own"
    );
    assert_eq!(
        lease_batch(&app, &bob, &format!("?max=4&attempt_id={}", Uuid::new_v4()))
            .await
            .len(),
        2
    );
    // A single lease with an attempt id answers its lease again too.
    queue_tasks(&app, "bob", 1).await;
    let single = format!("?attempt_id={}", Uuid::new_v4());
    let one = app.next(&bob, &single).await.expect(200).clone();
    assert_eq!(one["kind"], "a2a_task_opt");
    assert!(one["task"].is_object());
    assert_eq!(app.next(&bob, &single).await.expect(200), &one);
    // Drains: the results the first drain took, again.
    let drain = format!("/a2a/results/next?max=10&attempt_id={}", Uuid::new_v4());
    let first = app.get(&drain, &alice).await.expect(200).clone();
    assert_eq!(first["results"].as_array().unwrap().len(), 1);
    assert_eq!(app.get(&drain, &alice).await.expect(200), &first);
}

both_engines!(a_batch_lease_never_takes_an_expired_task);
async fn a_batch_lease_never_takes_an_expired_task(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let due = |at: u64| {
        let mut t = task("alice", "bob");
        t["deadline_ms"] = json!(at);
        t
    };
    // An expired head, a live task, an expired one behind it, another live one.
    let head = app.send_ok(&alice, &due(now_ms() - 5_000)).await;
    let live = app.send_ok(&alice, &due(now_ms() + 3_600_000)).await;
    let behind = app.send_ok(&alice, &due(now_ms() - 5_000)).await;
    let last = app.send_ok(&alice, &task("alice", "bob")).await;
    let leased = lease_batch(&app, &bob, "?max=10").await;
    let got: Vec<&str> = leased.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        got,
        vec![live.as_str(), last.as_str()],
        "expired tasks are never leased"
    );
    // The expired head was answered with the deadline error; the one behind stays queued until
    // it reaches the head, and is never leased.
    let drained = app.drain(&alice).await.expect("the deadline error");
    assert_eq!(
        (
            drained["task_id"].as_str(),
            drained["error_message"].as_str()
        ),
        (Some(head.as_str()), Some("deadline exceeded"))
    );
    assert!(lease_batch(&app, &bob, "?max=10").await.is_empty());
    assert_eq!(app.status_ok(&behind).await["state"], "result_pending");
}
