//! SendMessage: the native send's gates and audit rows, the A2A idempotency key mapped onto the
//! task id, and the bounded wait for an answer.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use super::rpc::*;
use crate::common::*;

/// The `capability_check` rows of sends to bob, oldest first.
async fn send_checks(api: &Api) -> Vec<Value> {
    let r = api
        .get("/audit/recent?limit=1000&kind=capability_check", &api.ops())
        .await;
    let mut rows: Vec<Value> = r.expect(200)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"]["scope_id"] == "a2a-send:bob")
        .cloned()
        .collect();
    rows.reverse();
    rows
}

both_engines!(a_sender_without_the_capability_is_refused_and_nothing_is_queued);
async fn a_sender_without_the_capability_is_refused_and_nothing_is_queued(app: TestApp) {
    let carol = app.carol();
    let r = rpc(&app, "bob", &carol, "SendMessage", send_now(message("x"))).await;
    assert_error(&r, 403, "capability_missing");
    let body = send_now(message("x"));
    let r = rest(
        &app,
        Method::POST,
        "bob",
        "/message:send",
        &carol,
        Some(body),
    )
    .await;
    assert_error(&r, 403, "capability_missing");
    app.assert_empty("a refused send queues nothing").await;
    let checks = send_checks(&app).await;
    assert_eq!(checks.len(), 2, "both refusals were audited: {checks:?}");
    assert!(checks
        .iter()
        .all(|c| c["kind"]["passed"] == false && c["issuer"] == "carol"));
}

both_engines!(the_facade_writes_the_audit_rows_of_a_native_send);
async fn the_facade_writes_the_audit_rows_of_a_native_send(app: TestApp) {
    let alice = app.alice();
    app.send_ok(&alice, &task("alice", "bob")).await;
    send_task(&app, "bob", &alice, "the same through A2A").await;
    let checks = send_checks(&app).await;
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert_eq!(
        checks[0]["kind"], checks[1]["kind"],
        "the same capability_check row"
    );
    assert_eq!(checks[0]["issuer"], checks[1]["issuer"]);
}

both_engines!(a_retried_message_lands_on_the_same_task);
async fn a_retried_message_lands_on_the_same_task(app: TestApp) {
    let alice = app.alice();
    let send = |params: Value, headers: Vec<(&'static str, String)>| {
        let (api, alice) = (&app.api, alice.clone());
        async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            rpc_with(api, "bob", &alice, "SendMessage", params, &h).await
        }
    };
    // The messageId is the key by default: the same message twice is one task, answered in its
    // current state, with the context id it was given.
    let m = message("refund order 1234");
    let first = rpc_result(&send(send_now(m.clone()), vec![]).await)["task"].clone();
    let (_, lease) = app.lease_some(&app.bob()).await;
    let again = rpc_result(&send(send_now(m.clone()), vec![]).await)["task"].clone();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(
        again["contextId"], first["contextId"],
        "a generated context id is stable"
    );
    assert_eq!(
        again["status"]["state"], "TASK_STATE_WORKING",
        "its current state"
    );
    assert!(lease["lease_id"].is_string());
    // The header key wins over the metadata key and the messageId: other messageIds, one task.
    let key = uuid::Uuid::new_v4().to_string();
    let mut a = message("ship parcel 7");
    a["metadata"] = json!({"urn:a2a-mailbox:v1": {"idempotencyKey": "ignored-1"}, "ticket": 7});
    let mut b = message("ship parcel 7");
    b["metadata"] = json!({"urn:a2a-mailbox:v1": {"idempotencyKey": "ignored-2"}, "ticket": 7});
    let h = || vec![("Idempotency-Key", key.clone())];
    let ta = rpc_result(&send(send_now(a), h()).await)["task"]["id"].clone();
    let tb = rpc_result(&send(send_now(b), h()).await)["task"]["id"].clone();
    assert_eq!(ta, tb, "same header key, same message: the same task");
    // The metadata key, without a header.
    let mut c = message("count stock");
    c["metadata"] = json!({"urn:a2a-mailbox:v1": {"idempotencyKey": "stock-1"}});
    let mut d = c.clone();
    d["messageId"] = json!("another-message-id");
    let tc = rpc_result(&send(send_now(c), vec![]).await)["task"]["id"].clone();
    let td = rpc_result(&send(send_now(d), vec![]).await)["task"]["id"].clone();
    assert_eq!(tc, td, "same metadata key, same message: the same task");
    // Another message under a used key: refused with the reason, never 422; nothing queued.
    let before = app.get("/a2a/tasks", &app.ops()).await.body["tasks"]
        .as_array()
        .unwrap()
        .len();
    let other = message("ship parcel 8");
    let e = rpc_error(
        &send(send_now(other.clone()), h()).await,
        -32602,
        "INVALID_PARAMS",
    );
    assert_eq!(
        e["data"][0]["metadata"],
        json!({"mailboxError": "IDEMPOTENCY_CONFLICT"})
    );
    let r = app
        .raw_with(
            Method::POST,
            "/a2a/agents/bob/message:send",
            Some(&format!("Bearer {alice}")),
            Some("application/json"),
            Some(serde_json::to_vec(&send_now(other)).unwrap()),
            &[("A2A-Version", "1.0"), ("Idempotency-Key", &key)],
        )
        .await;
    let e = rest_error(&r, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    assert_eq!(
        e["details"][0]["metadata"]["mailboxError"],
        "IDEMPOTENCY_CONFLICT"
    );
    let after = app.get("/a2a/tasks", &app.ops()).await.body["tasks"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after, "a conflict queues nothing");
    // Keys belong to their sender: carol's message with alice's messageId is another task.
    let carol = app.token("carol", json!(["a2a.send.bob"]));
    let tcarol =
        rpc_result(&rpc(&app, "bob", &carol, "SendMessage", send_now(m)).await)["task"].clone();
    assert_ne!(tcarol["id"], first["id"]);
}

both_engines!(the_task_keeps_the_message_as_sent);
async fn the_task_keeps_the_message_as_sent(app: TestApp) {
    let alice = app.alice();
    let m = json!({"messageId": "m-1", "role": "ROLE_USER", "contextId": "conversation-9",
        "parts": [{"text": "refund"}, {"data": {"order": 1234}}]});
    let t = rpc_result(&rpc(&app, "bob", &alice, "SendMessage", send_now(m)).await)["task"].clone();
    assert_eq!(t["contextId"], "conversation-9");
    assert_eq!(t["history"][0]["parts"][1]["data"], json!({"order": 1234}));
    // The recipient sees a native task: text and JSON content, the intent, the context.
    let (task, _) = app.lease(&app.bob()).await.unwrap();
    assert_eq!(task["id"], t["id"]);
    assert_eq!(task["intent_text"], "refund");
    assert_eq!(task["context_id"], "conversation-9");
    assert_eq!(
        task["content"],
        json!([{"type": "text", "text": "refund"}, {"type": "json", "value": {"order": 1234}}])
    );
    assert_eq!(task["sender"], "alice");
}

fn short_block() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_A2A_BLOCK_MS", "400")
}

both_engines!(
    a_blocking_send_answers_the_task_as_it_is_when_the_wait_ends,
    config = short_block
);
async fn a_blocking_send_answers_the_task_as_it_is_when_the_wait_ends(app: TestApp) {
    let start = Instant::now();
    let r = rpc(
        &app,
        "bob",
        &app.alice(),
        "SendMessage",
        json!({"message": message("x")}),
    )
    .await;
    assert!(
        start.elapsed() >= Duration::from_millis(400),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        rpc_result(&r)["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
}

fn long_block() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_A2A_BLOCK_MS", "20000")
}

both_engines!(a_blocking_send_waits_for_the_answer, config = long_block);
async fn a_blocking_send_waits_for_the_answer(app: TestApp) {
    let alice = app.alice();
    let sending = rpc(
        &app,
        "bob",
        &alice,
        "SendMessage",
        json!({"message": message("add 2 and 3")}),
    );
    let working = async {
        let r = app.next(&app.bob(), "?wait_ms=10000").await;
        let b = r.expect(200).clone();
        let body = json!({"task_id": b["task"]["id"], "lease_id": b["lease"]["lease_id"],
            "status": "ok", "content": [{"type": "json", "value": 5}]});
        app.post_result(&app.bob(), &body).await.expect(201);
    };
    let (r, ()) = tokio::join!(sending, working);
    let task = rpc_result(&r)["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["parts"][0]["data"], 5);
    // Reading the answer delivered it: nothing is left to drain.
    assert!(app.drain(&alice).await.is_none());
}

both_engines!(a_senders_read_of_an_answer_delivers_it);
async fn a_senders_read_of_an_answer_delivers_it(app: TestApp) {
    let alice = app.alice();
    let t = send_task(&app, "bob", &alice, "x").await;
    let id = t["id"].as_str().unwrap();
    answer(&app, &app.bob(), json!({"status": "ok"})).await;
    // An operator's read delivers nothing.
    assert_eq!(
        state_of(&app, "bob", &app.ops(), id).await,
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(app.status_ok(id).await["state"], "result_pending");
    assert_eq!(
        state_of(&app, "bob", &alice, id).await,
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(app.status_ok(id).await["state"], "resolved");
    assert!(
        app.drain(&alice).await.is_none(),
        "the result was delivered through GetTask"
    );
}
