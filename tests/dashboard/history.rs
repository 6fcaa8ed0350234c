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
