//! `POST /a2a/compact` (docs/contract.md#compaction) and `/metrics`.

use serde_json::json;

use super::{audit_rows, full_ops, idem_task, send_and_lease};
use crate::common::{assert_error, clock_tick, result, task, AppConfig, TestApp};

async fn compaction_drops_only_resolved_tasks(app: TestApp) {
    let ops = full_ops(&app);
    let (resolved, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    let mut r = result(&resolved, "ok", "done");
    r["lease_id"] = json!(lease);
    app.post_result(&app.bob(), &r).await.expect(201);
    app.drain(&app.alice()).await.expect("drained");
    let (pending, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    let mut r = result(&pending, "ok", "waiting");
    r["lease_id"] = json!(lease);
    app.post_result(&app.bob(), &r).await.expect(201);
    let (_in_flight, _) = send_and_lease(&app, &task("alice", "bob")).await;
    app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let in_flight_before = app.queue(&app.ops(), "?limit=1000").await;

    assert_error(
        &app.post("/a2a/compact", &app.ops(), &json!({})).await,
        403,
        "capability_missing",
    );
    let r = app.post("/a2a/compact", &ops, &json!({})).await;
    let b = r.expect(200);
    assert_eq!(
        b,
        &json!({"kind": "a2a_compacted", "dropped": 1}),
        "{}",
        r.text
    );
    assert_error(&app.status(&app.ops(), &resolved).await, 404, "not_found");
    assert_eq!(app.status_ok(&pending).await["state"], "result_pending");
    assert_eq!(
        app.queue(&app.ops(), "?limit=1000").await,
        in_flight_before,
        "compaction touched live work"
    );
    let rows = audit_rows(&app, "a2a_compacted").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["kind"]["dropped"], 1);
    // Nothing left to drop.
    let b = app.post("/a2a/compact", &ops, &json!({})).await;
    assert_eq!(b.expect(200)["dropped"], 0);
}
both_engines!(compaction_drops_only_resolved_tasks);

/// Sends `t`, has bob answer it with `text` and alice drain it: the task is resolved.
async fn resolved(app: &TestApp, t: &serde_json::Value, text: &str) -> String {
    let (id, lease) = send_and_lease(app, t).await;
    let mut r = result(&id, "ok", text);
    r["lease_id"] = json!(lease);
    app.post_result(&app.bob(), &r).await.expect(201);
    app.drain(&app.alice()).await.expect("drained");
    id
}

/// Alice's list: every task id of it, in order (one page holds them all here).
async fn listed(app: &TestApp) -> Vec<String> {
    let r = app.get("/a2a/tasks?limit=100", &app.alice()).await;
    let b = r.expect(200);
    assert_eq!(b["next_cursor"], json!(null), "{}", r.text);
    b["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task"]["id"].as_str().unwrap().to_owned())
        .collect()
}

/// However a task is stored (a send, a batch, a replay from the result cache), it is listed
/// once; a compacted task leaves the list, and its id sent again is listed once, as the new
/// task it is.
async fn the_list_follows_every_way_in_and_compaction(app: TestApp) {
    let ops = full_ops(&app);
    let first = resolved(&app, &idem_task("listed-1"), "done").await;
    clock_tick().await;
    let items = [task("alice", "bob"), task("alice", "bob")];
    app.post("/a2a/tasks/batch", &app.alice(), &json!({ "tasks": items }))
        .await
        .expect(201);
    clock_tick().await;
    let replay = app.send(&app.alice(), &idem_task("listed-1")).await;
    let replayed = replay.expect(201)["task_id"].as_str().unwrap().to_owned();
    // The batch's tasks share their creation time: the larger id comes first.
    let mut batch: Vec<String> = items
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    batch.sort_by(|a, b| b.cmp(a));
    let mut expected = vec![replayed];
    expected.extend(batch);
    expected.push(first.clone());
    assert_eq!(listed(&app).await, expected, "newest first, each once");

    // The first task is resolved; the replay's result waits to be drained.
    let b = app.post("/a2a/compact", &ops, &json!({})).await;
    assert_eq!(b.expect(200)["dropped"], 1);
    assert_eq!(
        listed(&app).await,
        expected[..3],
        "the compacted task is gone"
    );

    let mut again = task("alice", "bob");
    again["id"] = json!(first);
    clock_tick().await;
    assert_eq!(app.send_ok(&app.alice(), &again).await, first);
    let now = listed(&app).await;
    assert_eq!(now[0], first, "sent again, it is the newest");
    assert_eq!(now.iter().filter(|id| **id == first).count(), 1);
    assert_eq!(app.status_ok(&first).await["state"], "queued");
}
both_engines!(the_list_follows_every_way_in_and_compaction);

async fn live_cache_entries_survive_compaction(app: TestApp) {
    let ops = full_ops(&app);
    let id = resolved(&app, &idem_task("work-1"), "done once").await;
    app.post("/a2a/compact", &ops, &json!({})).await.expect(200);
    let again = app.send(&app.alice(), &idem_task("work-1")).await;
    let b = again.expect(201).clone();
    assert_eq!(
        b["replayed_from"],
        id.as_str(),
        "the cache survived compaction: {}",
        again.text
    );
    let replay = app.drain(&app.alice()).await.expect("the replayed result");
    assert_eq!(replay["task_id"], b["task_id"]);
    assert_eq!(
        replay["content"],
        json!([{"type": "text", "text": "done once"}])
    );
    assert!(
        app.lease(&app.bob()).await.is_none(),
        "a replayed task is never leased"
    );
}
both_engines!(live_cache_entries_survive_compaction);

fn short_cache_window() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_RESULT_CACHE_WINDOW_MS", "1")
}

async fn expired_cache_entries_no_longer_replay_and_are_purged(app: TestApp) {
    let ops = full_ops(&app);
    let (id, lease) = send_and_lease(&app, &idem_task("work-2")).await;
    let mut r = result(&id, "ok", "done");
    r["lease_id"] = json!(lease);
    app.post_result(&app.bob(), &r).await.expect(201);
    crate::common::clock_tick().await;
    let again = app.send(&app.alice(), &idem_task("work-2")).await;
    let b = again.expect(201).clone();
    assert!(
        b.get("replayed_from").is_none(),
        "an expired entry replayed: {}",
        again.text
    );
    let (leased, _) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, b["task_id"].as_str().unwrap());
    let compacted = app.post("/a2a/compact", &ops, &json!({})).await;
    let rows = audit_rows(&app, "a2a_compacted").await;
    assert_eq!(
        rows[0]["kind"]["result_cache_entries"], 1,
        "{}",
        compacted.text
    );
}
both_engines!(
    expired_cache_entries_no_longer_replay_and_are_purged,
    config = short_cache_window
);

const RETENTION_MS: u64 = 1500;

fn short_audit_retention() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_AUDIT_RETENTION_MS", &RETENTION_MS.to_string())
}

/// The `capability_check` row of alice's latest send.
async fn newest_send_check(app: &TestApp) -> Option<serde_json::Value> {
    checks_of(app, "a2a-send:bob")
        .await
        .into_iter()
        .find(|e| e["issuer"] == "alice")
}

async fn compaction_drops_audit_rows_older_than_the_retention(app: TestApp) {
    let ops = full_ops(&app);
    app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let old_row = newest_send_check(&app).await.expect("the old send's row");
    let old_at = old_row["timestamp_ms"].as_u64().unwrap();
    // Wait until that row is older than the retention.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while crate::common::now_ms() <= old_at + RETENTION_MS + 5 {
        assert!(
            std::time::Instant::now() < deadline,
            "the clock stood still"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let young_row = newest_send_check(&app).await.expect("the young send's row");
    assert_ne!(young_row["id"], old_row["id"]);
    let r = app.post("/a2a/compact", &ops, &json!({})).await;
    let dropped = r.expect(200)["dropped"].as_u64().unwrap();
    let feed = app.get("/audit/recent?limit=1000", &app.ops()).await;
    let ids: Vec<serde_json::Value> = feed.expect(200)["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    assert!(!ids.contains(&old_row["id"]), "an old row was kept");
    assert!(ids.contains(&young_row["id"]), "a young row was dropped");
    let rows = audit_rows(&app, "a2a_compacted").await;
    let k = &rows[0]["kind"];
    assert!(k["audit_rows"].as_u64().unwrap() >= 1, "{k}");
    assert_eq!(k["dropped"], dropped);
    assert_eq!(k["audit_rows"], dropped, "no task was resolved: {k}");
    // The compaction's own rows are young.
    assert!(!checks_of(&app, "a2a:compact").await.is_empty());
}
both_engines!(
    compaction_drops_audit_rows_older_than_the_retention,
    config = short_audit_retention
);

async fn checks_of(app: &TestApp, scope_id: &str) -> Vec<serde_json::Value> {
    audit_rows(app, "capability_check")
        .await
        .into_iter()
        .filter(|r| r["kind"]["scope_id"] == scope_id)
        .collect()
}

async fn metrics_report_depths_ages_and_counters(app: TestApp) {
    let (_id, _lease) = send_and_lease(&app, &task("alice", "bob")).await;
    app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let r = app.get_anon("/metrics").await;
    assert_eq!(r.status, 200, "{}", r.text);
    for line in [
        "a2a_queue_depth{state=\"queued\"} 1",
        "a2a_queue_depth{state=\"in_flight\"} 1",
        "a2a_queue_depth{state=\"result_pending\"} 0",
        "a2a_leases_total 1",
        "a2a_tasks_sent_total 2",
    ] {
        assert!(
            r.text.lines().any(|l| l == line),
            "missing `{line}` in\n{}",
            r.text
        );
    }
    for name in [
        "a2a_oldest_queued_age_seconds",
        "a2a_oldest_lease_age_seconds",
        "a2a_requeues_manual_total",
        "a2a_requeues_auto_total",
        "a2a_result_cache_hits_total",
        "a2a_idempotency_key_replays_total",
        "a2a_http_request_duration_seconds_bucket{method=\"POST\",route=\"/a2a/tasks\",status=\"201\",le=\"+Inf\"} 2",
    ] {
        assert!(r.text.contains(name), "missing {name} in\n{}", r.text);
    }
}
both_engines!(metrics_report_depths_ages_and_counters);
