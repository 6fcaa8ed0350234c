//! POST /a2a/results, GET /a2a/results/next and /recent (docs/contract.md#endpoints, docs/contract.md#errors, docs/contract.md#details).

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

/// The `message` with every occurrence of `id` blanked, so that two 404s can be compared.
fn without_id(body: &Value, id: &str) -> Value {
    let mut b = body.clone();
    if let Some(m) = b["message"].as_str() {
        b["message"] = json!(m.replace(id, "<id>"));
    }
    b
}

both_engines!(result_for_an_unknown_task_is_404_before_any_capability_check);
async fn result_for_an_unknown_task_is_404_before_any_capability_check(app: TestApp) {
    let unknown = Uuid::new_v4().to_string();
    for caps in [
        json!([]),
        json!(["a2a.respond.*"]),
        json!(["a2a.respond.alice"]),
    ] {
        let nobody = app.token("nobody", caps.clone());
        let r = app.post_result(&nobody, &result(&unknown, "ok", "x")).await;
        assert_eq!(r.status, 404, "caps {caps}: {}", r.text);
        assert_error(&r, 404, "unknown_task");
    }
    app.assert_empty("after results for unknown tasks").await;
}

both_engines!(result_for_an_invisible_task_is_404_like_an_unknown_one);
async fn result_for_an_invisible_task_is_404_like_an_unknown_one(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&app.bob()).await;
    let unknown = Uuid::new_v4().to_string();
    for caps in [
        json!([]),
        json!(["a2a.respond.*"]),
        json!(["a2a.respond.alice"]),
    ] {
        let carol = app.token("carol", caps.clone());
        let mut res = result(&id, "ok", "hijack");
        res["lease_id"] = lease["lease_id"].clone();
        let invisible = app.post_result(&carol, &res).await;
        assert_error(&invisible, 404, "unknown_task");
        let missing = app.post_result(&carol, &result(&unknown, "ok", "x")).await;
        assert_eq!(
            without_id(&invisible.body, &id),
            without_id(&missing.body, &unknown),
            "invisible and unknown tasks must answer identically (caps {caps})"
        );
    }
    let s = app.status_ok(&id).await;
    assert_eq!(s["state"], "in_flight");
    assert_eq!(s["lease"], lease);
}

both_engines!(lessee_without_the_respond_capability_is_403_capability_missing);
async fn lessee_without_the_respond_capability_is_403_capability_missing(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    for caps in [
        json!([]),
        json!(["a2a.respond.carol"]),
        json!(["a2a.send.alice"]),
    ] {
        let bob = app.token("bob", caps.clone());
        if app.status(&bob, &id).await.expect(200)["state"] == "queued" {
            app.lease_some(&bob).await;
        }
        let r = app.post_result(&bob, &result(&id, "ok", "x")).await;
        assert_eq!(r.status, 403, "caps {caps}: {}", r.text);
        assert_error(&r, 403, "capability_missing");
    }
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");
}

both_engines!(a_visible_caller_that_does_not_hold_the_lease_is_403_not_lessee);
async fn a_visible_caller_that_does_not_hold_the_lease_is_403_not_lessee(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let worker = app.token("worker", json!(["a2a.lease.bob", "a2a.respond.alice"]));
    let r = app.next(&worker, "?recipient=bob").await;
    assert_eq!(r.expect(200)["task"]["id"], json!(id));

    let bob = app.bob(); // the recipient, with a2a.respond.alice
    assert_error(
        &app.post_result(&bob, &result(&id, "ok", "x")).await,
        403,
        "not_lessee",
    );
    let alice = app.token("alice", json!(["a2a.respond.alice"])); // the sender
    assert_error(
        &app.post_result(&alice, &result(&id, "ok", "x")).await,
        403,
        "not_lessee",
    );
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");

    app.post_result(&worker, &result(&id, "ok", "x"))
        .await
        .expect(201);
}

both_engines!(result_for_a_queued_task_is_409_not_in_flight);
async fn result_for_a_queued_task_is_409_not_in_flight(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    assert_error(
        &app.post_result(&app.bob(), &result(&id, "ok", "x")).await,
        409,
        "not_in_flight",
    );
    let s = app.status_ok(&id).await;
    assert_eq!(s["state"], "queued");
    assert!(s["result"].is_null());
    assert_eq!(app.lease_some(&app.bob()).await.0, id, "still leasable");
}

both_engines!(result_with_a_stale_lease_id_is_409_lease_mismatch);
async fn result_with_a_stale_lease_id_is_409_lease_mismatch(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let bob = app.bob();
    let (_, lease) = app.lease_some(&bob).await;
    let mut res = result(&id, "ok", "x");
    res["lease_id"] = json!(Uuid::new_v4().to_string());
    assert_error(&app.post_result(&bob, &res).await, 409, "lease_mismatch");
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");

    res["lease_id"] = lease["lease_id"].clone();
    let r = app.post_result(&bob, &res).await;
    r.expect(201);
}

both_engines!(posting_and_draining_a_result);
async fn posting_and_draining_a_result(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&bob).await;

    let mut res = json!({
        "task_id": id,
        "status": "partial",
        "content": [{"type": "text", "text": "half"}, {"type": "json", "value": {"n": 1}}],
        "error_message": "ran out of time",
        "lease_id": lease["lease_id"],
    });
    let r = app.post_result(&bob, &res).await;
    let body = r.expect(201);
    assert_keys(body, &["kind", "task_id"], "a2a_result_posted");
    assert_eq!(body, &json!({"kind": "a2a_result_posted", "task_id": id}));
    assert!(!r.replayed());

    let s = app.status_ok(&id).await;
    assert_eq!(s["state"], "result_pending");
    assert_eq!(s["result"]["status"], "partial");
    assert!(
        s["result"].get("lease_id").is_none(),
        "a result never echoes lease_id: {s}"
    );

    // Only the sender drains it.
    assert!(app.drain(&bob).await.is_none(), "bob is not the sender");
    assert!(app.drain(&app.carol()).await.is_none());

    let r = app.get("/a2a/results/next", &alice).await;
    let body = r.expect(200);
    assert_keys(body, &["kind", "result"], "a2a_result_opt");
    let drained = &body["result"];
    res.as_object_mut().unwrap().remove("lease_id");
    assert_eq!(
        drained, &res,
        "the drained result is the posted one, without lease_id"
    );

    assert_eq!(app.status_ok(&id).await["state"], "resolved");
    let r = app.get("/a2a/results/next", &alice).await;
    assert_eq!(
        r.expect(200),
        &json!({"kind": "a2a_result_opt", "result": null}),
        "a result is drained once"
    );
}

both_engines!(result_content_defaults_to_an_empty_list);
async fn result_content_defaults_to_an_empty_list(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    app.lease_some(&bob).await;
    app.post_result(&bob, &json!({"task_id": id, "status": "ok"}))
        .await
        .expect(201);
    let drained = app.drain(&alice).await.expect("a result");
    assert_eq!(drained["content"], json!([]), "content is always emitted");
    assert_eq!(drained["status"], "ok");
    let keys: Vec<&String> = drained.as_object().unwrap().keys().collect();
    for k in &keys {
        assert!(
            ["task_id", "status", "content", "error_message"].contains(&k.as_str()),
            "unexpected key `{k}` in a drained result: {drained}"
        );
    }
    assert!(
        drained.get("error_message").is_none_or(|m| m.is_null()),
        "no error_message was posted: {drained}"
    );
}

both_engines!(posting_the_same_result_again_is_a_200_replay);
async fn posting_the_same_result_again_is_a_200_replay(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&bob).await;
    let mut res = result(&id, "ok", "done");
    res["lease_id"] = lease["lease_id"].clone();
    let first = app.post_result(&bob, &res).await;
    first.expect(201);

    let again = app.post_result(&bob, &res).await;
    assert_eq!(
        again.expect(200),
        &first.body,
        "a replay answers the first answer"
    );
    assert!(
        again.replayed(),
        "Idempotent-Replayed: true expected: {:?}",
        again.headers
    );
    assert_eq!(app.status_ok(&id).await["state"], "result_pending");

    let drained = app.drain(&alice).await.expect("the result");
    assert_eq!(drained["content"], res["content"]);
    let after_drain = app.post_result(&bob, &res).await;
    assert_eq!(
        after_drain.expect(200),
        &first.body,
        "still a replay after the drain"
    );
    assert!(after_drain.replayed());
    assert_eq!(
        app.status_ok(&id).await["state"],
        "resolved",
        "still resolved"
    );
    assert!(
        app.drain(&alice).await.is_none(),
        "a replay queues no second result"
    );
}

both_engines!(posting_a_different_result_is_409_result_conflict);
async fn posting_a_different_result_is_409_result_conflict(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    app.lease_some(&bob).await;
    let res = result(&id, "ok", "done");
    app.post_result(&bob, &res).await.expect(201);

    let mut other_status = res.clone();
    other_status["status"] = json!("error");
    other_status["error_message"] = json!("changed my mind");
    assert_error(
        &app.post_result(&bob, &other_status).await,
        409,
        "result_conflict",
    );
    let other_content = result(&id, "ok", "something else");
    assert_error(
        &app.post_result(&bob, &other_content).await,
        409,
        "result_conflict",
    );

    let drained = app.drain(&alice).await.expect("the first result");
    assert_eq!(drained["status"], "ok");
    assert_eq!(drained["content"], res["content"]);
    assert_error(
        &app.post_result(&bob, &other_content).await,
        409,
        "result_conflict",
    );
}

both_engines!(an_operator_with_the_respond_capability_may_answer);
async fn an_operator_with_the_respond_capability_may_answer(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    app.lease_some(&bob).await;
    let op_without = app.ops();
    assert_error(
        &app.post_result(&op_without, &result(&id, "error", "x"))
            .await,
        403,
        "capability_missing",
    );
    let op = app.token("ops", json!(["a2a.operator", "a2a.respond.*"]));
    app.post_result(&op, &result(&id, "error", "stuck"))
        .await
        .expect(201);
    assert_eq!(app.drain(&alice).await.expect("result")["status"], "error");
}

both_engines!(scoped_respond_capabilities);
async fn scoped_respond_capabilities(app: TestApp) {
    let alice = app.alice();
    let one = app.send_ok(&alice, &task("alice", "bob")).await;
    let two = app.send_ok(&alice, &task("alice", "bob")).await;
    let lessee = app.bob();
    let (_, lease_one) = app.lease_some(&lessee).await;
    let (_, lease_two) = app.lease_some(&lessee).await;

    let by_task = app.token(
        "bob",
        json!([{"action": "a2a.respond.alice", "scope": {"task_id": one}}]),
    );
    assert_error(
        &app.post_result(&by_task, &result(&two, "ok", "x")).await,
        403,
        "capability_scope_mismatch",
    );
    app.post_result(&by_task, &result(&one, "ok", "x"))
        .await
        .expect(201);

    // A lease_id scope does not admit a result posted without a lease_id.
    let by_lease = app.token(
        "bob",
        json!([{"action": "a2a.respond.alice", "scope": {"lease_id": lease_two["lease_id"]}}]),
    );
    assert_error(
        &app.post_result(&by_lease, &result(&two, "ok", "x")).await,
        403,
        "capability_scope_mismatch",
    );
    let mut guarded = result(&two, "ok", "x");
    guarded["lease_id"] = lease_one["lease_id"].clone();
    let r = app.post_result(&by_lease, &guarded).await;
    assert_eq!(r.status, 403, "scope names another lease: {}", r.text);
    guarded["lease_id"] = lease_two["lease_id"].clone();
    app.post_result(&by_lease, &guarded).await.expect(201);
}

both_engines!(recent_results_lists_pending_results_without_consuming);
async fn recent_results_lists_pending_results_without_consuming(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(app.send_ok(&alice, &task("alice", "bob")).await);
    }
    for _ in 0..3 {
        app.lease_some(&bob).await;
    }
    for id in &ids[..2] {
        let mut res = result(id, "ok", id);
        res["lease_id"] = app.status_ok(id).await["lease"]["lease_id"].clone();
        app.post_result(&bob, &res).await.expect(201);
    }

    let listed = |b: &Value| -> Vec<String> {
        let mut v: Vec<String> = b["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["task_id"].as_str().unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    let mut expected = ids[..2].to_vec();
    expected.sort();
    for _ in 0..2 {
        let r = app.get("/a2a/results/recent", &alice).await;
        let b = r.expect(200);
        assert_eq!(b["kind"], "a2a_results");
        assert_eq!(listed(b), expected, "pending results of alice's tasks: {b}");
        for res in b["results"].as_array().unwrap() {
            assert!(res.get("lease_id").is_none(), "no lease_id in {res}");
            assert_eq!(res["status"], "ok");
        }
    }
    let r = app.get("/a2a/results/recent?limit=1", &alice).await;
    assert_eq!(r.expect(200)["results"].as_array().unwrap().len(), 1);

    let r = app.get("/a2a/results/recent", &bob).await;
    assert_eq!(
        listed(r.expect(200)),
        Vec::<String>::new(),
        "bob sent nothing"
    );
    let r = app.get("/a2a/results/recent", &app.carol()).await;
    assert_eq!(listed(r.expect(200)), Vec::<String>::new());

    // Both are still drainable, once each.
    let mut drained = vec![
        app.drain(&alice).await.expect("first")["task_id"]
            .as_str()
            .unwrap()
            .to_owned(),
        app.drain(&alice).await.expect("second")["task_id"]
            .as_str()
            .unwrap()
            .to_owned(),
    ];
    drained.sort();
    assert_eq!(drained, expected);
    assert!(app.drain(&alice).await.is_none());
    let r = app.get("/a2a/results/recent", &alice).await;
    assert_eq!(
        listed(r.expect(200)),
        Vec::<String>::new(),
        "drained results are gone"
    );
}
