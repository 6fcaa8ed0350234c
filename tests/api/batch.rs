//! Batch send (docs/contract.md#batch): one transaction, all or nothing, the failing item's `index`, per-item
//! replays and result-cache hits, array order for leases, and 500 tasks with every field set.

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

async fn batch(api: &Api, token: &str, tasks: &[Value]) -> Resp {
    api.post("/a2a/tasks/batch", token, &json!({ "tasks": tasks }))
        .await
}

/// A refusal of item `index`: the status, the code and `index` in the error body.
#[track_caller]
fn assert_refused_at(r: &Resp, status: u16, code: &str, index: usize) {
    assert_eq!(
        (r.status, r.body["code"].as_str(), r.body["index"].as_u64()),
        (status, Some(code), Some(index as u64)),
        "{}: {}",
        r.what,
        r.text
    );
    assert_keys(
        &r.body,
        &["kind", "code", "message", "retriable", "index"],
        "batch error",
    );
}

/// Every task the operator can list.
async fn all_tasks(api: &Api) -> Vec<Value> {
    let r = api.get("/a2a/tasks?limit=1000", &api.ops()).await;
    r.expect(200)["tasks"].as_array().unwrap().clone()
}

/// The kinds of every audit row, newest first.
async fn audit_kinds(api: &Api) -> Vec<String> {
    let r = api.get("/audit/recent?limit=1000", &api.ops()).await;
    let rows = r.expect(200)["events"].as_array().unwrap().clone();
    rows.iter()
        .map(|e| e["kind"]["type"].as_str().unwrap().to_owned())
        .collect()
}

/// A task with every field of the contract set.
fn full_task(sender: &str, recipient: &str, i: usize) -> Value {
    let mut t = task(sender, recipient);
    t["task_kind"] = json!("translate");
    t["content"] = json!([
        {"type": "text", "text": format!("part {i}")},
        {"type": "json", "value": {"i": i}}
    ]);
    t["parent"] = json!(Uuid::new_v4().to_string());
    t["context_id"] = json!(format!("conversation-{i}"));
    t["deadline_ms"] = json!(now_ms() + 3_600_000);
    t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": format!("key-{i}")});
    t
}

both_engines!(a_batch_is_queued_in_order_and_leased_in_array_order);
async fn a_batch_is_queued_in_order_and_leased_in_array_order(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.bob", "a2a.send.dave"]));
    let tasks = [
        task("alice", "bob"),
        task("alice", "dave"),
        task("alice", "bob"),
        task("alice", "bob"),
    ];
    let r = batch(&app, &alice, &tasks).await;
    let b = r.expect(201).clone();
    assert!(!r.replayed());
    assert_keys(&b, &["kind", "tasks"], "batch answer");
    assert_eq!(b["kind"], "a2a_tasks_queued");
    let items = b["tasks"].as_array().unwrap();
    for (item, t) in items.iter().zip(&tasks) {
        assert_eq!(item, &json!({"task_id": t["id"], "replayed": false}));
    }
    let bob = app.bob();
    for i in [0, 2, 3] {
        let (id, _) = app.lease_some(&bob).await;
        assert_eq!(
            json!(id),
            tasks[i]["id"],
            "bob leases the batch in array order"
        );
    }
}

both_engines!(items_with_and_without_a_cache_key_are_leased_in_array_order);
async fn items_with_and_without_a_cache_key_are_leased_in_array_order(app: TestApp) {
    let alice = app.alice();
    let idempotent = |key: &str| {
        let mut t = task("alice", "bob");
        t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": key});
        t
    };
    app.send_ok(&alice, &task("alice", "bob")).await;
    let tasks = [
        task("alice", "bob"),
        idempotent("k1"),
        task("alice", "bob"),
        task("alice", "bob"),
        idempotent("k2"),
        idempotent("k3"),
        task("alice", "bob"),
    ];
    batch(&app, &alice, &tasks).await.expect(201);
    let bob = app.bob();
    app.lease_some(&bob).await; // the task sent before the batch
    for t in &tasks {
        let (id, _) = app.lease_some(&bob).await;
        assert_eq!(json!(id), t["id"], "bob leases the batch in array order");
    }
}

both_engines!(the_first_refusal_in_array_order_decides);
async fn the_first_refusal_in_array_order_decides(app: TestApp) {
    let alice = app.alice();
    let existing = task("alice", "bob");
    app.send_ok(&alice, &existing).await;
    let mut conflicting = existing.clone();
    conflicting["intent_text"] = json!("another body under the same id");
    let mut mallory = task("alice", "bob");
    mallory["sender"] = json!("mallory");
    // A conflicting id before a refused sender: the conflict decides.
    let (new1, new2) = (task("alice", "bob"), task("alice", "bob"));
    let r = batch(
        &app,
        &alice,
        &[new1.clone(), conflicting.clone(), new2, mallory.clone()],
    )
    .await;
    assert_refused_at(&r, 409, "task_id_conflict", 1);
    // A refused sender before a conflicting id: the sender decides.
    let new3 = task("alice", "bob");
    let r = batch(&app, &alice, &[new3.clone(), mallory, conflicting]).await;
    assert_refused_at(&r, 403, "sender_mismatch", 1);
    assert_eq!(
        all_tasks(&app).await.len(),
        1,
        "a refused batch stored tasks"
    );
    // Each refusal left the audit rows of its refused item alone: the conflicting item's passed
    // check, then the sender mismatch; the send before them wrote the first row.
    let kinds = audit_kinds(&app).await;
    assert_eq!(
        kinds,
        vec![
            "a2a_sender_mismatch",
            "capability_check",
            "capability_check"
        ],
    );
}

both_engines!(five_hundred_tasks_with_every_field_set_are_one_batch);
async fn five_hundred_tasks_with_every_field_set_are_one_batch(app: TestApp) {
    let alice = app.alice();
    let tasks: Vec<Value> = (0..500).map(|i| full_task("alice", "bob", i)).collect();
    let r = batch(&app, &alice, &tasks).await;
    assert_eq!(r.expect(201)["tasks"].as_array().unwrap().len(), 500);
    let stored = all_tasks(&app).await;
    assert_eq!(stored.len(), 500);
    let s = app.status_ok(tasks[499]["id"].as_str().unwrap()).await;
    assert_eq!(s["task"], tasks[499], "stored exactly as sent");
    // 501 is too many, none too few, and neither changes anything.
    let mut more: Vec<Value> = (0..501).map(|_| task("alice", "bob")).collect();
    assert_error(&batch(&app, &alice, &more).await, 400, "invalid_request");
    more.clear();
    assert_error(&batch(&app, &alice, &more).await, 400, "invalid_request");
    for body in [json!({}), json!({"tasks": {}}), json!([])] {
        let r = app.post("/a2a/tasks/batch", &alice, &body).await;
        assert_error(&r, 400, "invalid_request");
    }
    assert_eq!(all_tasks(&app).await.len(), 500);
}

both_engines!(a_batch_that_fails_at_item_250_stores_nothing);
async fn a_batch_that_fails_at_item_250_stores_nothing(app: TestApp) {
    let alice = app.alice();
    let mut tasks: Vec<Value> = (0..400).map(|_| task("alice", "bob")).collect();
    tasks[250]["sender"] = json!("mallory");
    let r = batch(&app, &alice, &tasks).await;
    assert_refused_at(&r, 403, "sender_mismatch", 250);
    assert!(
        all_tasks(&app).await.is_empty(),
        "a refused batch stored tasks"
    );
    // The refusal itself is audited as a single send's would be; the accepted items are not.
    let kinds = audit_kinds(&app).await;
    assert_eq!(kinds, vec!["a2a_sender_mismatch"]);
    // Invalid items and capabilities are named the same way.
    let mut tasks: Vec<Value> = (0..3).map(|_| task("alice", "bob")).collect();
    tasks[1]["intent_text"] = json!(5);
    assert_refused_at(
        &batch(&app, &alice, &tasks).await,
        400,
        "invalid_request",
        1,
    );
    tasks[1] = task("alice", "carol");
    assert_refused_at(
        &batch(&app, &alice, &tasks).await,
        403,
        "capability_missing",
        1,
    );
    assert!(all_tasks(&app).await.is_empty());
}

both_engines!(repeated_ids_replays_and_conflicts);
async fn repeated_ids_replays_and_conflicts(app: TestApp) {
    let alice = app.alice();
    let (a, b) = (task("alice", "bob"), task("alice", "bob"));
    // One id twice: 400 with the index of the second.
    let r = batch(&app, &alice, &[a.clone(), b.clone(), a.clone()]).await;
    assert_refused_at(&r, 400, "invalid_request", 2);
    assert!(all_tasks(&app).await.is_empty());
    // An item whose id exists with the same body is a replay of that item.
    app.send_ok(&alice, &a).await;
    let r = batch(&app, &alice, &[a.clone(), b.clone()]).await;
    assert_eq!(
        r.expect(201)["tasks"],
        json!([{"task_id": a["id"], "replayed": true}, {"task_id": b["id"], "replayed": false}])
    );
    // Every item a replay: 200, and the header says so.
    let r = batch(&app, &alice, &[b.clone(), a.clone()]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.replayed());
    // The same id with another body: 409 for the whole batch.
    let mut changed = a.clone();
    changed["intent_text"] = json!("something else");
    let c = task("alice", "bob");
    let r = batch(&app, &alice, &[c.clone(), changed]).await;
    assert_refused_at(&r, 409, "task_id_conflict", 1);
    assert_error(
        &app.status(&app.ops(), c["id"].as_str().unwrap()).await,
        404,
        "not_found",
    );
    assert_eq!(all_tasks(&app).await.len(), 2);
}

both_engines!(a_result_cache_hit_in_a_batch_is_answered_at_once);
async fn a_result_cache_hit_in_a_batch_is_answered_at_once(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let mut first = task("alice", "bob");
    first["idempotency"] = json!({"duplicate_safety": "idempotent", "key": "k1"});
    let id = app.send_ok(&alice, &first).await;
    app.lease_some(&bob).await;
    app.post_result(&bob, &result(&id, "ok", "cached"))
        .await
        .expect(201);
    let mut again = first.clone();
    again["id"] = json!(Uuid::new_v4().to_string());
    let other = task("alice", "bob");
    let r = batch(&app, &alice, &[other.clone(), again.clone()]).await;
    assert_eq!(
        r.expect(201)["tasks"],
        json!([{"task_id": other["id"], "replayed": false},
               {"task_id": again["id"], "replayed": false, "replayed_from": id}])
    );
    assert_eq!(
        app.status_ok(again["id"].as_str().unwrap()).await["state"],
        "result_pending"
    );
}

both_engines!(an_idempotency_key_covers_the_whole_batch);
async fn an_idempotency_key_covers_the_whole_batch(app: TestApp) {
    let alice = app.alice();
    let tasks = json!({"tasks": [task("alice", "bob"), task("alice", "bob")]});
    let key = [("Idempotency-Key", "batch-1")];
    let first = app
        .post_with("/a2a/tasks/batch", &alice, &tasks, &key)
        .await;
    let body = first.expect(201).clone();
    let again = app
        .post_with("/a2a/tasks/batch", &alice, &tasks, &key)
        .await;
    assert_eq!((again.status, &again.body), (201, &body));
    assert!(again.replayed());
    let other = json!({"tasks": [task("alice", "bob")]});
    let r = app
        .post_with("/a2a/tasks/batch", &alice, &other, &key)
        .await;
    assert_error(&r, 422, "idempotency_key_reused");
    assert_eq!(all_tasks(&app).await.len(), 2);
}

both_engines!(a_batch_records_each_distinct_check_once);
async fn a_batch_records_each_distinct_check_once(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.bob", "a2a.send.carol"]));
    let mut tasks: Vec<Value> = (0..4).map(|_| task("alice", "bob")).collect();
    tasks.insert(2, task("alice", "carol"));
    tasks.push(task("alice", "carol"));
    batch(&app, &alice, &tasks).await.expect(201);
    let r = app.get("/audit/recent?limit=1000", &app.ops()).await;
    let rows = r.expect(200)["events"].as_array().unwrap().clone();
    let scopes: Vec<&str> = rows
        .iter()
        .map(|e| e["kind"]["scope_id"].as_str().unwrap_or_default())
        .collect();
    // Newest first: one passed check per recipient, in the order the batch met them.
    assert_eq!(scopes, vec!["a2a-send:carol", "a2a-send:bob"], "{rows:?}");
    assert!(rows.iter().all(|e| e["kind"]["passed"] == true));
    assert_eq!(all_tasks(&app).await.len(), 6);
}
