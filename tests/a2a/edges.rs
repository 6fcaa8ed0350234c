//! The facade at its edges: every configured duration at its largest allowed value still
//! streams, waits and answers, and `ListTasks` counts `totalSize` only up to its cap.

use serde_json::{json, Value};

use super::rpc::*;
use super::sse::{update_state, Sse};
use crate::common::*;

/// The largest value of every `_MS` setting (docs/configuration.md): 100 years of 365 days.
const MAX_MS: &str = "3153600000000";

/// Every `_MS` setting at its maximum (the keep-alive's own is 15 s).
fn durations_at_their_maximum() -> AppConfig {
    [
        "A2A_MAILBOX_A2A_STREAM_MS",
        "A2A_MAILBOX_A2A_BLOCK_MS",
        "A2A_MAILBOX_DB_ACQUIRE_TIMEOUT_MS",
        "A2A_MAILBOX_RESULT_CACHE_WINDOW_MS",
        "A2A_MAILBOX_IDEMPOTENCY_WINDOW_MS",
        "A2A_MAILBOX_IDEMPOTENCY_PENDING_TTL_MS",
        "A2A_MAILBOX_AUDIT_RETENTION_MS",
        "A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS",
        "A2A_MAILBOX_AUTO_RETRY_INTERVAL_MS",
        "A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS",
    ]
    .into_iter()
    .fold(AppConfig::default(), |c, name| c.env(name, MAX_MS))
    .env(
        "A2A_MAILBOX_RESULT_CACHE_WINDOWS",
        &format!("refund={MAX_MS}"),
    )
    .env("A2A_MAILBOX_A2A_KEEP_ALIVE_MS", "15000")
}

fn done() -> Value {
    json!({"status": "ok", "content": [{"type": "text", "text": "done"}]})
}

both_engines!(
    every_duration_at_its_maximum_still_streams_waits_and_answers,
    config = durations_at_their_maximum
);
async fn every_duration_at_its_maximum_still_streams_waits_and_answers(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    // A stream follows its task to the end.
    let params = json!({"message": message("streamed")});
    let mut s = Sse::rpc(&app, "bob", &alice, "SendStreamingMessage", params).await;
    assert_eq!(
        s.result().await["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    answer(&app, &bob, done()).await;
    loop {
        let e = s.result().await;
        if e.get("statusUpdate").is_some() && update_state(&e) == "TASK_STATE_COMPLETED" {
            break;
        }
    }
    s.ends().await;
    // A blocking SendMessage waits for its answer.
    let waiting = {
        let (app, alice) = ((*app).clone(), alice.clone());
        tokio::spawn(async move {
            let params = json!({"message": message("blocking")});
            rpc_result(&rpc(&app, "bob", &alice, "SendMessage", params).await)
        })
    };
    // Its task is leased as soon as it is queued (a long-poll), and answered.
    let r = app.next(&bob, "?wait_ms=15000").await;
    let leased = r.expect(200);
    let mut result = done();
    result["task_id"] = leased["task"]["id"].clone();
    result["lease_id"] = leased["lease"]["lease_id"].clone();
    app.post_result(&bob, &result).await.expect(201);
    let task = waiting.await.unwrap();
    assert_eq!(task["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    // Idempotency records, the retry gate and compaction take their windows from now.
    let r = app
        .post_with(
            "/a2a/tasks",
            &alice,
            &task_to("bob"),
            &[("Idempotency-Key", "k-1")],
        )
        .await;
    r.expect(201);
    let tick = app
        .post("/a2a/scheduler/tick", &app.ops(), &json!({}))
        .await;
    tick.expect(200);
    let compact = app.post("/a2a/compact", &full_ops(&app), &json!({})).await;
    compact.expect(200);
}

fn task_to(recipient: &str) -> Value {
    task("alice", recipient)
}

/// Above it `totalSize` says this many (docs/a2a.md).
const TOTAL_SIZE_CAP: u64 = 10_000;

both_engines!(list_tasks_counts_its_total_size_up_to_the_cap);
async fn list_tasks_counts_its_total_size_up_to_the_cap(app: TestApp) {
    let alice = app.alice();
    let total = |page: &Value| page["totalSize"].as_u64().unwrap();
    let list = || rpc(&app, "bob", &alice, "ListTasks", json!({"pageSize": 1}));
    // Below the cap the count is exact (every list of `tests/a2a/read.rs` holds it too).
    send_task(&app, "bob", &alice, "one").await;
    assert_eq!(total(&rpc_result(&list().await)), 1);
    // 10,001 tasks in all: the count stops at the cap; the pages go on.
    let mut left = TOTAL_SIZE_CAP;
    while left > 0 {
        let n = left.min(500);
        let tasks: Vec<Value> = (0..n).map(|_| task_to("bob")).collect();
        app.post("/a2a/tasks/batch", &alice, &json!({ "tasks": tasks }))
            .await
            .expect(201);
        left -= n;
    }
    let page = rpc_result(&list().await);
    assert_eq!(total(&page), TOTAL_SIZE_CAP, "{page}");
    assert_ne!(page["nextPageToken"], "", "{page}");
    // A filter below the cap still counts exactly.
    let params = json!({"status": "TASK_STATE_COMPLETED"});
    let none = rpc_result(&rpc(&app, "bob", &alice, "ListTasks", params).await);
    assert_eq!(total(&none), 0);
}
