//! A task's history on its page: oldest first, one block per attempt with its lease and how it
//! ended, and the task's audit rows as the audit page reads them.

use serde_json::json;

use super::unfolded;
use crate::common::*;
use crate::dashboard::web::*;

/// The markup of attempt `n` of a task page's history.
fn attempt(html: &str, n: u32) -> &str {
    let at = html
        .find(&format!("data-attempt=\"{n}\""))
        .unwrap_or_else(|| panic!("no attempt {n}: {html}"));
    let rest = &html[at..];
    let end = ["class=\"attempt\"", "class=\"after\"", "</section>"]
        .iter()
        .filter_map(|m| rest[1..].find(m))
        .min()
        .unwrap();
    &rest[..end]
}

both_engines!(a_tasks_history_shows_each_attempt_and_how_it_ended);
async fn a_tasks_history_shows_each_attempt_and_how_it_ended(app: TestApp) {
    let ops = operator(&app);
    let (id, first) = in_flight(&app).await;
    let url = format!("/dashboard/tasks/{id}");
    let html = page(&app, &url, &ops).await.text;
    assert!(html.contains("id=\"timeline\""), "{html}");
    let running = attempt(&html, 1);
    assert!(
        running.contains(&format!(
            "Leased by <strong>bob</strong>, lease <span class=\"mono\">{first}"
        )),
        "{running}"
    );
    assert!(running.contains("data-end=\"in_flight\""), "{running}");
    // Requeued with the page's own form, leased again, answered with an error.
    let fields = hidden_fields(&html, "repair-requeue");
    let mut form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    form.extend([
        ("duplicate_risk", "operator_accepted"),
        ("reason", "worker died"),
        ("action", "requeue"),
    ]);
    post_form(&app, "/dashboard/leases/act", &ops, &form)
        .await
        .expect(200);
    let (again, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(again, id);
    let mut answer = result(&id, "error", "");
    answer["lease_id"] = lease["lease_id"].clone();
    answer["error_message"] = json!("no stock");
    app.post_result(&app.bob(), &answer).await.expect(201);
    let html = page(&app, &url, &ops).await.text;
    let one = attempt(&html, 1);
    assert!(one.contains("data-end=\"requeued\""), "{one}");
    assert!(
        one.contains(&format!(
            "lease {first}, as operator_accepted): worker died"
        )),
        "{one}"
    );
    assert!(one.contains("by <strong>ops</strong>"), "{one}");
    // The requeue's row recorded the lease it ended: who held the attempt, and since when.
    assert!(
        one.contains(&format!(
            "Leased by <strong>bob</strong>, lease <span class=\"mono\">{first}"
        )),
        "{one}"
    );
    let two = attempt(&html, 2);
    assert!(
        two.contains("data-end=\"answered\" data-result=\"error\""),
        "{two}"
    );
    assert!(two.contains(": no stock, by <strong>bob</strong>"), "{two}");
    assert!(!html.contains("data-attempt=\"3\""), "two attempts: {html}");
    // The rows beneath read as the audit page's, the task's own id linked.
    let (_, rows) = html.split_once("id=\"task-audit\"").unwrap();
    assert!(
        rows.contains(&format!(
            "Requeued task <a class=\"task mono\" href=\"/dashboard/tasks/{id}\">"
        )),
        "{rows}"
    );
    assert!(!unfolded(rows).contains("&quot;"), "{rows}");
}

both_engines!(a_forced_error_a_cancel_and_a_queued_cancel_end_a_history);
async fn a_forced_error_a_cancel_and_a_queued_cancel_end_a_history(app: TestApp) {
    let ops = operator(&app);
    // Requeued through the API, then an error forced on its second attempt.
    let (forced, _) = in_flight(&app).await;
    let requeue = json!({"task_id": forced, "reason": "stuck",
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}});
    app.post("/a2a/repair", &ops, &requeue).await.expect(200);
    app.lease_some(&app.bob()).await;
    let force = json!({"task_id": forced, "reason": "gave up",
        "command": {"action": "force_error", "message": "out of retries"}});
    app.post("/a2a/repair", &ops, &force).await.expect(200);
    let html = page(&app, &format!("/dashboard/tasks/{forced}"), &ops)
        .await
        .text;
    assert!(
        attempt(&html, 1).contains("data-end=\"requeued\""),
        "{html}"
    );
    let two = attempt(&html, 2);
    assert!(two.contains("data-end=\"forced_error\""), "{two}");
    assert!(two.contains("gave up — message: out of retries"), "{two}");
    // Canceled by its sender in flight: the attempt's end.
    let (canceled, _) = in_flight(&app).await;
    let cancel = json!({"reason": "not needed"});
    app.post(
        &format!("/a2a/tasks/{canceled}/cancel"),
        &app.alice(),
        &cancel,
    )
    .await
    .expect(200);
    let html = page(&app, &format!("/dashboard/tasks/{canceled}"), &ops)
        .await
        .text;
    let one = attempt(&html, 1);
    assert!(one.contains("data-end=\"canceled\""), "{one}");
    assert!(
        one.contains("by <strong>alice</strong>") && one.contains("while in_flight"),
        "{one}"
    );
    // Canceled while queued: no attempt, and the cancel after them.
    let queued = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    app.post(
        &format!("/a2a/tasks/{queued}/cancel"),
        &app.alice(),
        &cancel,
    )
    .await
    .expect(200);
    let html = page(&app, &format!("/dashboard/tasks/{queued}"), &ops)
        .await
        .text;
    assert!(!html.contains("data-attempt="), "{html}");
    let (_, after) = html.split_once("class=\"after\"").expect("what came after");
    assert!(after.contains("while queued: not needed"), "{after}");
}
