//! The receiver-side result cache and the `Idempotency-Key` header (docs/contract.md#endpoints send row, docs/contract.md#idempotency, docs/contract.md#details).

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

/// An idempotent task alice → `recipient` with a task_kind and a key.
fn idempotent(recipient: &str, kind: &str, key: &str) -> Value {
    let mut t = task("alice", recipient);
    t["task_kind"] = json!(kind);
    t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": key});
    t
}

/// Sends `t`, has bob lease it and answer `status`; returns the posted result.
async fn answer(app: &TestApp, t: &Value, status: &str) -> Value {
    let id = app.send_ok(&app.alice(), t).await;
    let (leased, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, id);
    let mut res = result(&id, status, &format!("answer of {id}"));
    if status == "error" {
        res["error_message"] = json!("it failed");
    }
    res["lease_id"] = lease["lease_id"].clone();
    app.post_result(&app.bob(), &res).await.expect(201);
    res.as_object_mut().unwrap().remove("lease_id");
    res
}

both_engines!(a_cached_result_answers_a_repeated_idempotent_task_without_a_lease);
async fn a_cached_result_answers_a_repeated_idempotent_task_without_a_lease(app: TestApp) {
    let alice = app.alice();
    let first = idempotent("bob", "lookup", "k-1");
    let posted = answer(&app, &first, "ok").await;
    app.drain(&alice).await.expect("the first result");

    let second = idempotent("bob", "lookup", "k-1");
    let r = app.send(&alice, &second).await;
    let body = r.expect(201);
    assert_keys(
        body,
        &["kind", "task_id", "replayed_from"],
        "a result-cache hit",
    );
    assert_eq!(body["kind"], "a2a_task_queued");
    assert_eq!(body["task_id"], second["id"]);
    assert_eq!(
        body["replayed_from"], first["id"],
        "replayed_from is the source task"
    );
    let second_id = second["id"].as_str().unwrap();

    assert!(
        app.lease(&app.bob()).await.is_none(),
        "a cache hit is never leased"
    );
    let s = app.status_ok(second_id).await;
    assert_eq!(s["state"], "result_pending", "{s}");
    assert!(s["lease"].is_null());

    let copy = app.drain(&alice).await.expect("the cached copy");
    assert_eq!(
        copy["task_id"], second["id"],
        "the copy is stamped with the new id"
    );
    assert_eq!(copy["status"], posted["status"]);
    assert_eq!(copy["content"], posted["content"]);
    assert_eq!(app.status_ok(second_id).await["state"], "resolved");

    // Replaying the second send answers the first answer, replayed_from included.
    let again = app.send(&alice, &second).await;
    assert_eq!(again.expect(200), body);
}

both_engines!(error_and_partial_results_are_cached_too);
async fn error_and_partial_results_are_cached_too(app: TestApp) {
    let alice = app.alice();
    for (status, key) in [("error", "k-err"), ("partial", "k-part")] {
        let first = idempotent("bob", "lookup", key);
        let posted = answer(&app, &first, status).await;
        let again = idempotent("bob", "lookup", key);
        let r = app.send(&alice, &again).await;
        assert_eq!(
            r.expect(201)["replayed_from"],
            first["id"],
            "{status} is cached"
        );
        let mut drained = [
            app.drain(&alice).await.expect("first"),
            app.drain(&alice).await.expect("copy"),
        ];
        drained.sort_by_key(|r| r["task_id"] != first["id"]);
        assert_eq!(drained[1]["task_id"], again["id"]);
        assert_eq!(drained[1]["status"], posted["status"]);
        assert_eq!(drained[1]["error_message"], posted["error_message"]);
    }
}

both_engines!(the_cache_key_is_sender_recipient_kind_and_key);
async fn the_cache_key_is_sender_recipient_kind_and_key(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    answer(&app, &idempotent("bob", "lookup", "k-1"), "ok").await;

    let mut unsafe_task = idempotent("bob", "lookup", "k-1");
    unsafe_task["idempotency"]["duplicate_safety"] = json!("unsafe");
    let mut no_idempotency = idempotent("bob", "lookup", "k-1");
    no_idempotency
        .as_object_mut()
        .unwrap()
        .remove("idempotency");
    let misses = [
        ("another key", idempotent("bob", "lookup", "k-2")),
        ("another task_kind", idempotent("bob", "search", "k-1")),
        ("another recipient", idempotent("carol", "lookup", "k-1")),
        ("duplicate_safety unsafe", unsafe_task),
        ("no idempotency", no_idempotency),
    ];
    for (what, t) in &misses {
        let r = app.send(&alice, t).await;
        let body = r.expect(201);
        assert!(
            body.get("replayed_from").is_none(),
            "{what}: must not be a cache hit: {body}"
        );
    }
    // All of them are queued normally.
    let q = app.queue(&app.ops(), "?state=queued").await;
    assert_eq!(q["tasks"].as_array().unwrap().len(), misses.len(), "{q}");
}

both_engines!(results_of_never_leased_tasks_are_not_cached);
async fn results_of_never_leased_tasks_are_not_cached(app: TestApp) {
    let alice = app.alice();
    let mut expired = idempotent("bob", "lookup", "k-1");
    expired["deadline_ms"] = json!(now_ms() - 1000);
    app.send_ok(&alice, &expired).await;
    assert!(
        app.lease(&app.bob()).await.is_none(),
        "expired at the lease attempt"
    );
    let err = app.drain(&alice).await.expect("the deadline error");
    assert_eq!(err["error_message"], "deadline exceeded");

    let again = idempotent("bob", "lookup", "k-1");
    let r = app.send(&alice, &again).await;
    assert!(
        r.expect(201).get("replayed_from").is_none(),
        "a deadline error (never leased) must not be cached: {}",
        r.text
    );
    assert_eq!(
        app.lease_some(&app.bob()).await.0,
        again["id"].as_str().unwrap()
    );
}

both_engines!(idempotency_key_header_replays_the_stored_send_response);
async fn idempotency_key_header_replays_the_stored_send_response(app: TestApp) {
    let alice = app.alice();
    let t = task("alice", "bob");
    let key = [("Idempotency-Key", "send-1")];
    let first = app.post_with("/a2a/tasks", &alice, &t, &key).await;
    first.expect(201);
    let again = app.post_with("/a2a/tasks", &alice, &t, &key).await;
    assert_eq!(
        again.status, 201,
        "the stored response keeps its status: {}",
        again.text
    );
    assert_eq!(again.body, first.body);
    assert!(
        again.replayed(),
        "Idempotent-Replayed: true: {:?}",
        again.headers
    );

    // Same key, another request: 422, and nothing is created.
    let other = task("alice", "bob");
    let r = app.post_with("/a2a/tasks", &alice, &other, &key).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_error(&r, 422, "idempotency_key_reused");
    assert_error(
        &app.status(&app.ops(), other["id"].as_str().unwrap()).await,
        404,
        "not_found",
    );

    // Keys are per caller.
    let dave = app.token("dave", json!(["a2a.send.bob"]));
    let mine = task("dave", "bob");
    app.post_with("/a2a/tasks", &dave, &mine, &key)
        .await
        .expect(201);
    let q = app.queue(&app.ops(), "").await;
    assert_eq!(q["tasks"].as_array().unwrap().len(), 2, "{q}");
}

both_engines!(idempotency_key_header_on_results);
async fn idempotency_key_header_on_results(app: TestApp) {
    let bob = app.bob();
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let other = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    app.lease_some(&bob).await;
    app.lease_some(&bob).await;
    let key = [("Idempotency-Key", format!("result-{}", Uuid::new_v4()))];
    let key = [(key[0].0, key[0].1.as_str())];
    let res = result(&id, "ok", "x");
    let first = app.post_with("/a2a/results", &bob, &res, &key).await;
    first.expect(201);
    let again = app.post_with("/a2a/results", &bob, &res, &key).await;
    assert_eq!(again.status, 201, "{}", again.text);
    assert_eq!(again.body, first.body);
    assert!(again.replayed());
    let r = app
        .post_with("/a2a/results", &bob, &result(&other, "ok", "x"), &key)
        .await;
    assert_error(&r, 422, "idempotency_key_reused");
    assert_eq!(app.status_ok(&other).await["state"], "in_flight");
}
