//! A task's page shows its audit rows however many newer rows other tasks wrote since.

use serde_json::json;

use super::web::*;
use crate::common::*;

/// The rows of the audit table of task `id`'s page.
async fn audit_table(app: &TestApp, ops: &str, id: &str) -> String {
    let r = page(app, &format!("/dashboard/tasks/{id}"), ops).await;
    r.expect(200);
    let (_, rows) = r
        .text
        .split_once("id=\"task-audit\"")
        .expect("the audit table");
    rows.to_owned()
}

both_engines!(a_tasks_page_keeps_its_audit_rows_under_newer_ones);
async fn a_tasks_page_keeps_its_audit_rows_under_newer_ones(app: TestApp) {
    let ops = operator(&app);
    // A repair and a cancel (each a check and a row naming the task) ...
    let (id, _) = in_flight(&app).await;
    let body = json!({"task_id": id, "reason": "worker died",
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}});
    app.post("/a2a/repair", &ops, &body).await.expect(200);
    let cancel = json!({"reason": "no longer needed"});
    let r = app
        .post(&format!("/a2a/tasks/{id}/cancel"), &app.alice(), &cancel)
        .await;
    r.expect(200);
    // ... and a result, which takes each engine's fast path.
    let (answered, _) = in_flight(&app).await;
    let r = app
        .post_result(&app.bob(), &result(&answered, "ok", "done"))
        .await;
    r.expect(201);
    // 1,200 newer audit rows: three batches that fan out to 400 recipients each write one
    // capability check per recipient.
    for _ in 0..3 {
        fan_out(&app, 400).await;
    }
    let feed = app.get("/audit/recent?limit=1000", &ops).await;
    let newest = feed.expect(200)["events"].to_string();
    assert!(
        !newest.contains(&id) && !newest.contains(&answered),
        "the tasks' rows are older than the newest 1,000"
    );
    let rows = audit_table(&app, &ops, &id).await;
    for what in [
        "a2a_repair_applied",
        "a2a_task_canceled",
        &format!("a2a-repair:{id}"),
        &format!("a2a-cancel:{id}"),
    ] {
        assert!(rows.contains(what), "{what} is missing: {rows}");
    }
    assert_eq!(
        rows.matches("<tr>").count(),
        5,
        "its rows only, and a header: {rows}"
    );
    let rows = audit_table(&app, &ops, &answered).await;
    assert!(rows.contains(&format!("a2a-respond:{answered}")), "{rows}");
    assert_eq!(
        rows.matches("<tr>").count(),
        2,
        "its check, and a header: {rows}"
    );
}

both_engines!(refusals_naming_a_task_their_caller_cannot_see_stay_out_of_its_history);
async fn refusals_naming_a_task_their_caller_cannot_see_stay_out_of_its_history(app: TestApp) {
    let ops = operator(&app);
    // Alice's task, which she cancels: her check and her cancel are its history.
    let (id, lease) = in_flight(&app).await;
    let cancel = json!({"reason": "no longer needed"});
    let r = app
        .post(&format!("/a2a/tasks/{id}/cancel"), &app.alice(), &cancel)
        .await;
    r.expect(200);
    // A token with no capability claims it, more times than the page shows rows: sends under
    // alice's name with its id, results, repairs, a heartbeat, a cancel and a status of it.
    let mallory = app.token("mallory", json!([]));
    let claim = json!({"id": id, "sender": "alice", "recipient": "bob", "intent_text": "x"});
    for _ in 0..510 {
        let r = app.post("/a2a/tasks", &mallory, &claim).await;
        assert_error(&r, 403, "sender_mismatch");
    }
    let r = app
        .post("/a2a/tasks/batch", &mallory, &json!({"tasks": [claim]}))
        .await;
    assert_eq!(
        (r.status, &r.body["code"]),
        (403, &json!("sender_mismatch")),
        "{}",
        r.text
    );
    let answer = json!({"task_id": id, "lease_id": lease, "status": "ok", "content": []});
    let r = app.post("/a2a/results", &mallory, &answer).await;
    assert_error(&r, 404, "unknown_task");
    let repair = json!({"task_id": id, "reason": "mine now",
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}});
    let r = app.post("/a2a/repair", &mallory, &repair).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let beat = json!({"lease_id": lease});
    let r = app
        .post(&format!("/a2a/tasks/{id}/heartbeat"), &mallory, &beat)
        .await;
    assert!(r.status >= 400 && r.status < 500, "{}", r.text);
    let r = app
        .post(&format!("/a2a/tasks/{id}/cancel"), &mallory, &cancel)
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    let r = app.get(&format!("/a2a/tasks/{id}"), &mallory).await;
    assert_eq!(r.status, 404, "{}", r.text);

    let rows = audit_table(&app, &ops, &id).await;
    assert!(
        rows.contains("a2a_task_canceled") && rows.contains(&format!("a2a-cancel:{id}")),
        "alice's own rows are missing: {}",
        &rows[..rows.len().min(4000)]
    );
    assert!(
        !rows.contains("mallory"),
        "a refusal by a caller who cannot see the task is in its history: {}",
        &rows[..rows.len().min(4000)]
    );
    assert_eq!(
        rows.matches("<tr>").count(),
        3,
        "alice's two rows, and a header"
    );

    // The refusals are still in the audit feed, each with the id it claimed in its body.
    let feed = app.get("/audit/recent?limit=1000", &ops).await;
    let events = feed.expect(200)["events"].as_array().unwrap().clone();
    let mine: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["issuer"] == "mallory").collect();
    let count = |kind: &str| mine.iter().filter(|e| e["kind"]["type"] == kind).count();
    assert_eq!(count("a2a_sender_mismatch"), 511);
    assert_eq!(count("a2a_result_rejected"), 1);
    assert_eq!(count("capability_check"), 1, "the refused repair's check");
    for e in &mine {
        let k = &e["kind"];
        let claimed = k["task_id"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| k["scope_id"].as_str().map(|s| s.replace("a2a-repair:", "")));
        assert_eq!(claimed.as_deref(), Some(id.as_str()), "{e}");
    }
}
