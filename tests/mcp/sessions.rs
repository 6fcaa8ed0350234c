//! MCP tasks outlive sessions and instances, and `tasks/result` waits as a stream of events.

use serde_json::{json, Value};

use super::wire::{rpc, Mcp};
use crate::common::*;

both_engines!(a_session_and_its_tasks_are_good_on_another_instance);
async fn a_session_and_its_tasks_are_good_on_another_instance(mut app: TestApp) {
    let other = app.second_instance().await;
    let (on_a, _) = Mcp::init(&app, &app.alice(), "2025-11-25").await;
    let created = on_a
        .result(
            "tools/call",
            json!({"name": "send_task", "task": {"ttl": 60000},
                "arguments": {"recipient": "bob", "intent_text": "across"}}),
        )
        .await;
    let task_id = created["task"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(created["task"]["status"], "working");
    assert_eq!(created["task"]["ttl"], 60000);
    // The same session id, through the other instance.
    let on_b = Mcp {
        api: &other,
        token: on_a.token.clone(),
        session: on_a.session.clone(),
    };
    let got = on_b.result("tasks/get", json!({"taskId": task_id})).await;
    assert_eq!(got["taskId"], task_id.as_str());
    assert_eq!(got["status"], "working");
}

/// Reads `response` as events until the one carrying `id`: every event's data, in order.
async fn events_until_response(mut response: reqwest::Response) -> Vec<Value> {
    let (mut buffer, mut events) = (String::new(), Vec::new());
    loop {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(20), response.chunk())
            .await
            .expect("an event within 20 s")
            .expect("the stream reads")
            .expect("the stream ended before the response");
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            if let Some(data) = frame.trim_end().strip_prefix("data: ") {
                let event: Value = serde_json::from_str(data).unwrap();
                let last = event.get("id").is_some();
                events.push(event);
                if last {
                    return events;
                }
            }
        }
    }
}

both_engines!(tasks_result_waits_as_a_stream_and_answers_what_the_worker_posted);
async fn tasks_result_waits_as_a_stream_and_answers_what_the_worker_posted(app: TestApp) {
    let (alice, _) = Mcp::init(&app, &app.alice(), "2025-11-25").await;
    let created = alice
        .result(
            "tools/call",
            json!({"name": "send_task", "task": {},
                "arguments": {"recipient": "bob", "intent_text": "stream it"}}),
        )
        .await;
    let task_id = created["task"]["taskId"].as_str().unwrap().to_owned();
    let response = app
        .client
        .post(app.url("/mcp"))
        .bearer_auth(app.alice())
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", alice.session.clone().unwrap())
        .json(&rpc("tasks/result", json!({"taskId": task_id})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    app.until_metric("a2a_waiters", 1.0).await;

    let (id, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(id, task_id);
    let answer = json!({"task_id": id, "lease_id": lease["lease_id"], "status": "ok",
        "content": [{"type": "text", "text": "streamed"}, {"type": "json", "value": {"n": 2}}]});
    app.post_result(&app.bob(), &answer).await.expect(201);

    let events = events_until_response(response).await;
    let note = &events[0];
    assert_eq!(note["method"], "notifications/tasks/status", "{events:?}");
    assert_eq!(note["params"]["status"], "completed");
    let last = events.last().unwrap();
    assert_eq!(last["id"], 7);
    let result = &last["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["content"][0]["text"], "streamed");
    assert_eq!(result["content"][1]["text"], "{\"n\":2}");
    assert_eq!(result["structuredContent"]["status"], "ok");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str()
    );
    // Read this way, the result is delivered to its sender, as a drain would.
    assert_eq!(app.status_ok(&task_id).await["state"], "resolved");
    app.until_metric("a2a_waiters", 0.0).await;
}

both_engines!(a_result_stream_ends_with_its_token_and_delivers_nothing_after);
async fn a_result_stream_ends_with_its_token_and_delivers_nothing_after(app: TestApp) {
    let (alice, _) = Mcp::init(&app, &app.alice(), "2025-11-25").await;
    let created = alice
        .result(
            "tools/call",
            json!({"name": "send_task", "task": {},
                "arguments": {"recipient": "bob", "intent_text": "outlive me"}}),
        )
        .await;
    let task_id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // The same session, with a token the mailbox accepts for a second or two more.
    let short = app.expiring_token("alice", json!(["a2a.send.bob"]));
    let response = app
        .client
        .post(app.url("/mcp"))
        .bearer_auth(&short)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", alice.session.clone().unwrap())
        .json(&rpc("tasks/result", json!({"taskId": task_id})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    app.until_refused(&short).await;
    // Answered after the token expired: the stream must not carry it.
    let (id, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(id, task_id);
    let answer = json!({"task_id": id, "lease_id": lease["lease_id"], "status": "ok",
        "content": [{"type": "text", "text": "too late"}]});
    app.post_result(&app.bob(), &answer).await.expect(201);

    let events = events_until_response(response).await;
    let last = events.last().unwrap();
    assert!(last.get("result").is_none(), "no task data: {events:?}");
    assert_eq!(last["error"]["code"], -32603, "{events:?}");
    assert_eq!(
        last["error"]["data"]["mailboxError"], "unauthenticated",
        "{events:?}"
    );
    assert!(
        events.iter().all(|e| e["params"]["status"] != "completed"),
        "{events:?}"
    );
    // Not delivered: its sender still drains it.
    assert_eq!(app.status_ok(&task_id).await["state"], "result_pending");
    let drained = app.drain(&app.alice()).await.expect("the result");
    assert_eq!(drained["task_id"], task_id.as_str());
}
