//! GetTask, CancelTask and ListTasks: the states as A2A spells them, who sees what, and the pages.

use reqwest::Method;
use serde_json::{json, Value};

use super::rpc::*;
use crate::common::*;

/// Whether a state is spelled the A2A way (an SDK parses anything else as UNSPECIFIED).
fn a2a_spelled(state: &Value) -> bool {
    state.as_str().is_some_and(|s| {
        s.starts_with("TASK_STATE_") && s.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

both_engines!(every_state_is_spelled_as_a2a_spells_it);
async fn every_state_is_spelled_as_a2a_spells_it(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let mut expected = Vec::new();
    // Answered ones first, each leased and answered in turn.
    for (status, state) in [
        ("ok", "COMPLETED"),
        ("partial", "COMPLETED"),
        ("error", "FAILED"),
    ] {
        let t = send_task(&app, "bob", &alice, status).await;
        let mut outcome = json!({"status": status, "content": [{"type": "text", "text": status}]});
        if status == "error" {
            outcome["error_message"] = json!("it broke");
        }
        answer(&app, &bob, outcome).await;
        expected.push((t["id"].clone(), format!("TASK_STATE_{state}")));
    }
    let working = send_task(&app, "bob", &alice, "working").await;
    app.lease_some(&bob).await;
    expected.push((working["id"].clone(), "TASK_STATE_WORKING".into()));
    let canceled = send_task(&app, "bob", &alice, "canceled").await;
    rpc(
        &app,
        "bob",
        &alice,
        "CancelTask",
        json!({"id": canceled["id"]}),
    )
    .await;
    expected.push((canceled["id"].clone(), "TASK_STATE_CANCELED".into()));
    let queued = send_task(&app, "bob", &alice, "queued").await;
    expected.push((queued["id"].clone(), "TASK_STATE_SUBMITTED".into()));
    for (id, state) in &expected {
        let t = rpc_result(&rpc(&app, "bob", &alice, "GetTask", json!({"id": id})).await);
        assert_eq!(t["status"]["state"], json!(state), "{t}");
        assert!(
            t["status"]["timestamp"]
                .as_str()
                .is_some_and(|s| s.ends_with('Z')),
            "{t}"
        );
        let answered = state.ends_with("COMPLETED");
        assert_eq!(
            t["artifacts"].is_array(),
            answered,
            "artifacts only when completed: {t}"
        );
    }
    let failed =
        rpc_result(&rpc(&app, "bob", &alice, "GetTask", json!({"id": expected[2].0})).await);
    assert_eq!(failed["status"]["message"]["parts"][0]["text"], "it broke");
    assert_eq!(failed["status"]["message"]["role"], "ROLE_AGENT");
    let partial =
        rpc_result(&rpc(&app, "bob", &alice, "GetTask", json!({"id": expected[1].0})).await);
    assert_eq!(
        partial["artifacts"][0]["metadata"]["urn:a2a-mailbox:v1"]["partial"],
        true
    );
    // Listed, every state is spelled the same way, whichever binding.
    let listed = rpc_result(&rpc(&app, "bob", &alice, "ListTasks", json!({})).await);
    let r = rest(&app, Method::GET, "bob", "/tasks", &alice, None).await;
    for page in [&listed, r.expect(200)] {
        let tasks = page["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), expected.len(), "{page}");
        assert!(
            tasks.iter().all(|t| a2a_spelled(&t["status"]["state"])),
            "{page}"
        );
    }
    // The state filters, including a state no mailbox task is ever in.
    for (filter, n) in [
        ("TASK_STATE_COMPLETED", 2),
        ("TASK_STATE_FAILED", 1),
        ("TASK_STATE_WORKING", 1),
        ("TASK_STATE_CANCELED", 1),
        ("TASK_STATE_SUBMITTED", 1),
        ("TASK_STATE_INPUT_REQUIRED", 0),
    ] {
        let page =
            rpc_result(&rpc(&app, "bob", &alice, "ListTasks", json!({"status": filter})).await);
        assert_eq!(
            page["tasks"].as_array().unwrap().len(),
            n,
            "{filter}: {page}"
        );
        assert_eq!(page["totalSize"], n, "{filter}");
        assert!(page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"]["state"] == filter));
    }
}

both_engines!(list_tasks_pages_newest_first_within_what_the_caller_sees);
async fn list_tasks_pages_newest_first_within_what_the_caller_sees(app: TestApp) {
    let alice = app.alice();
    let carol = app.token("carol", json!(["a2a.send.bob"]));
    let mut sent = Vec::new();
    for i in 0..5 {
        let mut m = message(&format!("task {i}"));
        m["contextId"] = json!(if i < 2 { "ctx-a" } else { "ctx-b" });
        let r = rpc(&app, "bob", &alice, "SendMessage", send_now(m)).await;
        sent.push(rpc_result(&r)["task"]["id"].clone());
        clock_tick().await;
    }
    send_task(&app, "bob", &carol, "carol's").await;
    // Two by two, newest first, until the empty token.
    let (mut seen, mut token) = (Vec::new(), String::new());
    loop {
        let params = json!({"pageSize": 2, "pageToken": token});
        let page = rpc_result(&rpc(&app, "bob", &alice, "ListTasks", params).await);
        assert_eq!(page["totalSize"], 5, "{page}");
        assert_eq!(page["pageSize"], 2);
        seen.extend(
            page["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].clone()),
        );
        token = page["nextPageToken"].as_str().unwrap().to_owned();
        if token.is_empty() {
            break;
        }
    }
    sent.reverse();
    assert_eq!(seen, sent, "alice sees her five tasks, newest first");
    // Over HTTP+JSON, by context.
    let r = rest(
        &app,
        Method::GET,
        "bob",
        "/tasks?contextId=ctx-a&historyLength=0",
        &alice,
        None,
    )
    .await;
    let page = r.expect(200);
    assert_eq!(page["tasks"].as_array().unwrap().len(), 2, "{page}");
    assert!(
        page["tasks"][0].get("history").is_none(),
        "historyLength=0: {page}"
    );
    // An operator sees every sender's tasks of this agent; nobody sees them under another agent.
    let all = rpc_result(&rpc(&app, "bob", &app.ops(), "ListTasks", json!({})).await);
    assert_eq!(all["totalSize"], 6);
    let none = rpc_result(&rpc(&app, "dave", &alice, "ListTasks", json!({})).await);
    assert_eq!(none["tasks"], json!([]));
    assert_eq!(none["nextPageToken"], "");
}

both_engines!(another_senders_task_is_not_found);
async fn another_senders_task_is_not_found(app: TestApp) {
    let alice = app.alice();
    let carol = app.token("carol", json!(["a2a.send.bob"]));
    let t = send_task(&app, "bob", &alice, "private").await;
    for method in ["GetTask", "CancelTask"] {
        let r = rpc(&app, "bob", &carol, method, json!({"id": t["id"]})).await;
        rpc_error(&r, -32001, "TASK_NOT_FOUND");
        // Under another agent's URL the task does not exist either, even for its sender.
        let r = rpc(&app, "dave", &alice, method, json!({"id": t["id"]})).await;
        rpc_error(&r, -32001, "TASK_NOT_FOUND");
    }
    let page = rpc_result(&rpc(&app, "bob", &carol, "ListTasks", json!({})).await);
    assert_eq!(page["tasks"], json!([]));
    assert_eq!(
        state_of(&app, "bob", &alice, t["id"].as_str().unwrap()).await,
        "TASK_STATE_SUBMITTED"
    );
}

both_engines!(a_cancel_is_the_native_cancel);
async fn a_cancel_is_the_native_cancel(app: TestApp) {
    let alice = app.alice();
    let t = send_task(&app, "bob", &alice, "stop me").await;
    let id = t["id"].as_str().unwrap();
    let (_, lease) = app.lease_some(&app.bob()).await;
    for _ in 0..2 {
        let c = rpc_result(&rpc(&app, "bob", &alice, "CancelTask", json!({"id": id})).await);
        assert_eq!(
            c["status"]["state"], "TASK_STATE_CANCELED",
            "a repeat answers the same: {c}"
        );
    }
    let native = app.status_ok(id).await;
    assert_eq!(native["state"], "canceled");
    assert_eq!(native["cancellation"]["canceled_by"], "alice");
    let hb = app
        .post(
            &format!("/a2a/tasks/{id}/heartbeat"),
            &app.bob(),
            &json!({"lease_id": lease["lease_id"]}),
        )
        .await;
    assert_error(&hb, 409, "task_canceled");
    // The recipient sees the task but may not cancel it: a refusal of its rights.
    let other = send_task(&app, "bob", &alice, "mine").await;
    let r = rpc(
        &app,
        "bob",
        &app.bob(),
        "CancelTask",
        json!({"id": other["id"]}),
    )
    .await;
    assert_error(&r, 403, "sender_mismatch");
}
