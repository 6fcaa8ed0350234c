//! W3C trace context travels with a task (docs/contract.md#trace-context): from the send's
//! `traceparent`/`tracestate` headers or its `trace` field (the body wins) to the leased task and
//! the single lease's `traceparent` header; a malformed one is dropped, never refused; and it is
//! never part of the task's identity: a retry with another trace replays, keeping the first.

use serde_json::{json, Value};

use crate::common::*;

const T1: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const T2: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const T3: &str = "00-11111111111111111111111111111111-2222222222222222-00";

/// Sends `task` as alice with `headers`: the answer.
async fn send(app: &Api, task: &Value, headers: &[(&str, &str)]) -> Resp {
    app.post_with("/a2a/tasks", &app.alice(), task, headers)
        .await
}

/// bob leases his next task: the answer (a task must come).
async fn lease(app: &Api) -> Resp {
    let r = app.next(&app.bob(), "").await;
    assert!(r.expect(200)["task"].is_object(), "{}", r.text);
    r
}

both_engines!(a_senders_trace_reaches_the_worker_and_the_body_wins);
async fn a_senders_trace_reaches_the_worker_and_the_body_wins(app: TestApp) {
    // From the headers.
    let t = task("alice", "bob");
    let headers = [("traceparent", T1), ("tracestate", "congo=t61rcWkgMzE")];
    send(&app, &t, &headers).await.expect(201);
    let r = lease(&app).await;
    assert_eq!(
        r.body["task"]["trace"],
        json!({"traceparent": T1, "tracestate": "congo=t61rcWkgMzE"})
    );
    assert_eq!(
        r.header("traceparent"),
        Some(T1),
        "the single lease's header"
    );
    assert_eq!(r.header("tracestate"), Some("congo=t61rcWkgMzE"));

    // The body's own wins over the headers'.
    let mut t = task("alice", "bob");
    t["trace"] = json!({"traceparent": T2});
    send(&app, &t, &[("traceparent", T1)]).await.expect(201);
    let r = lease(&app).await;
    assert_eq!(r.body["task"]["trace"], json!({"traceparent": T2}));
    assert_eq!(r.header("traceparent"), Some(T2));

    // A malformed one is dropped, never refused: in the body (the header's then carried) ...
    let mut t = task("alice", "bob");
    t["trace"] = json!({"traceparent": "00-nope"});
    send(&app, &t, &[("traceparent", T3)]).await.expect(201);
    assert_eq!(lease(&app).await.body["task"]["trace"]["traceparent"], T3);
    // ... as a header, and as a body of the wrong type.
    for (body_trace, header) in [(None, "garbage"), (Some(json!(7)), "00-x")] {
        let mut t = task("alice", "bob");
        if let Some(bt) = body_trace {
            t["trace"] = bt;
        }
        send(&app, &t, &[("traceparent", header)]).await.expect(201);
        let r = lease(&app).await;
        assert!(r.body["task"].get("trace").is_none(), "{}", r.text);
        assert_eq!(r.header("traceparent"), None);
    }

    // Untraced: no field, no header.
    send(&app, &task("alice", "bob"), &[]).await.expect(201);
    let r = lease(&app).await;
    assert!(r.body["task"].get("trace").is_none(), "{}", r.text);
    assert_eq!(r.header("traceparent"), None);
}

both_engines!(a_retry_with_another_trace_is_a_replay_that_keeps_the_first);
async fn a_retry_with_another_trace_is_a_replay_that_keeps_the_first(app: TestApp) {
    // The same task id and body, each attempt under a span of its own.
    let t = task("alice", "bob");
    let first = send(&app, &t, &[("traceparent", T1)]).await;
    first.expect(201);
    let again = send(&app, &t, &[("traceparent", T2)]).await;
    assert_eq!(again.status, 200, "a replay: {}", again.text);
    assert_eq!(again.body, first.body);
    let mut in_body = t.clone();
    in_body["trace"] = json!({"traceparent": T3, "tracestate": "k=v"});
    assert_eq!(send(&app, &in_body, &[]).await.status, 200);
    assert_eq!(send(&app, &t, &[]).await.status, 200, "untraced too");
    // Anything else that differs is still a conflict.
    let mut other = in_body.clone();
    other["intent_text"] = json!("something else");
    assert_error(&send(&app, &other, &[]).await, 409, "task_id_conflict");
    let id = t["id"].as_str().unwrap();
    let status = app.status_ok(id).await;
    assert_eq!(
        status["task"]["trace"],
        json!({"traceparent": T1}),
        "the first kept"
    );

    // Under an Idempotency-Key: the same key with another trace replays the first answer.
    let t = task("alice", "bob");
    let key = [("Idempotency-Key", "retry-1"), ("traceparent", T1)];
    let first = send(&app, &t, &key).await;
    first.expect(201);
    let mut traced = t.clone();
    traced["trace"] = json!({"traceparent": T2});
    let key2 = [("Idempotency-Key", "retry-1"), ("traceparent", T3)];
    let again = send(&app, &traced, &key2).await;
    assert!(again.replayed(), "{}", again.text);
    assert_eq!((again.status, &again.body), (201, &first.body));
}

both_engines!(a_batch_keeps_each_tasks_own_trace);
async fn a_batch_keeps_each_tasks_own_trace(app: TestApp) {
    let (a, mut b, c) = (
        task("alice", "bob"),
        task("alice", "bob"),
        task("alice", "bob"),
    );
    b["trace"] = json!({"traceparent": T2});
    let batch = json!({"tasks": [a, b, c]});
    app.post_with(
        "/a2a/tasks/batch",
        &app.alice(),
        &batch,
        &[("traceparent", T1)],
    )
    .await
    .expect(201);
    let r = app.next(&app.bob(), "?max=3").await;
    let traces: Vec<&Value> = r.expect(200)["leases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["task"]["trace"]["traceparent"])
        .collect();
    assert_eq!(
        traces,
        [T1, T2, T1],
        "the header's for those without their own"
    );
    // The batch again under other traces: every item a replay.
    let mut again = batch.clone();
    again["tasks"][1]["trace"] = json!({"traceparent": T3});
    let r = app
        .post_with(
            "/a2a/tasks/batch",
            &app.alice(),
            &again,
            &[("traceparent", T3)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

both_engines!(a_results_own_trace_reaches_the_sender_and_is_no_part_of_its_identity);
async fn a_results_own_trace_reaches_the_sender_and_is_no_part_of_its_identity(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    // Three tasks, leased; answered under the header's trace, the body's, and none.
    for _ in 0..3 {
        send(&app, &task("alice", "bob"), &[("traceparent", T1)])
            .await
            .expect(201);
    }
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(app.lease_some(&bob).await.0);
    }
    let post = |r: Value, headers: Vec<(&'static str, &'static str)>| {
        let (app, bob) = (&app, &bob);
        async move { app.post_with("/a2a/results", bob, &r, &headers).await }
    };
    let first = result(&ids[0], "ok", "done");
    post(
        first.clone(),
        vec![("traceparent", T2), ("tracestate", "k=v")],
    )
    .await
    .expect(201);
    let mut own = result(&ids[1], "ok", "done");
    own["trace"] = json!({"traceparent": T3});
    post(own, vec![("traceparent", T2)]).await.expect(201);
    post(result(&ids[2], "ok", "done"), vec![])
        .await
        .expect(201);
    // The same result again under another trace: a replay, not a conflict.
    let r = post(first, vec![("traceparent", T3)]).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let drained = app.drain(&alice).await.unwrap();
    assert_eq!(
        drained["trace"],
        json!({"traceparent": T2, "tracestate": "k=v"})
    );
    let r = app.get("/a2a/results/next?max=5", &alice).await;
    let rest = r.expect(200)["results"].as_array().unwrap().clone();
    assert_eq!(rest.len(), 2, "{}", r.text);
    assert_eq!(
        rest[0]["trace"],
        json!({"traceparent": T3}),
        "the body's own"
    );
    assert!(rest[1].get("trace").is_none(), "untraced: {}", r.text);
}

both_engines!(a_batch_of_results_keeps_each_results_own_trace);
async fn a_batch_of_results_keeps_each_results_own_trace(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    for _ in 0..2 {
        send(&app, &task("alice", "bob"), &[]).await.expect(201);
    }
    let a = app.lease_some(&bob).await.0;
    let b = app.lease_some(&bob).await.0;
    let mut rb = result(&b, "ok", "done");
    rb["trace"] = json!({"traceparent": T3});
    let batch = json!({"results": [result(&a, "ok", "done"), rb]});
    let r = app
        .post_with("/a2a/results/batch", &bob, &batch, &[("traceparent", T1)])
        .await;
    for item in r.expect(200)["results"].as_array().unwrap() {
        assert_eq!(item["status"], 201, "{}", r.text);
    }
    let r = app.get("/a2a/results/next?max=5", &alice).await;
    let traces: Vec<&Value> = r.expect(200)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| &x["trace"]["traceparent"])
        .collect();
    assert_eq!(traces, [T1, T3]);
}
