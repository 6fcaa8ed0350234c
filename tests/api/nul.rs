//! A NUL character (U+0000) anywhere in a request is the client's mistake: 400
//! `invalid_request` on both engines (PostgreSQL refuses it in text, SQLite would store it),
//! refused before anything is written.

use serde_json::{json, Value};

use crate::common::*;

/// `task` with `value` put at the JSON pointer-like path `field`.
fn with(mut t: Value, field: &[&str], value: Value) -> Value {
    let mut at = &mut t;
    for (i, f) in field.iter().enumerate() {
        if i + 1 == field.len() {
            at[*f] = value.clone();
        } else {
            if at.get(*f).is_none() {
                at[*f] = json!({});
            }
            at = &mut at[*f];
        }
    }
    t
}

both_engines!(a_nul_in_any_json_body_is_400_and_changes_nothing);
async fn a_nul_in_any_json_body_is_400_and_changes_nothing(app: TestApp) {
    let alice = app.alice();
    let nul = json!("a\u{0}b");
    let t = task("alice", "bob");
    let sends = [
        with(t.clone(), &["intent_text"], nul.clone()),
        with(t.clone(), &["context_id"], nul.clone()),
        with(t.clone(), &["task_kind"], nul.clone()),
        with(
            t.clone(),
            &["content"],
            json!([{"type": "text", "text": "a\u{0}"}]),
        ),
        with(
            t.clone(),
            &["content"],
            json!([{"type": "json", "value": {"k": "\u{0}"}}]),
        ),
        with(
            t.clone(),
            &["content"],
            json!([{"type": "json", "value": {"k\u{0}": 1}}]),
        ),
        with(t.clone(), &["metadata"], json!({"note": "\u{0}"})),
        with(t.clone(), &["unknown_field"], nul.clone()),
        with(
            t.clone(),
            &["idempotency"],
            json!({"duplicate_safety": "idempotent", "key": "k\u{0}"}),
        ),
    ];
    for body in &sends {
        assert_error(&app.send(&alice, body).await, 400, "invalid_request");
    }
    let batch = json!({"tasks": [task("alice", "bob"), sends[0].clone()]});
    assert_error(
        &app.post("/a2a/tasks/batch", &alice, &batch).await,
        400,
        "invalid_request",
    );
    app.assert_empty("no send with a NUL stored anything").await;

    // A leased task: a result, a heartbeat, a cancel and a repair with a NUL change nothing.
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&app.bob()).await;
    let lease_id = lease["lease_id"].clone();
    let bob = app.bob();
    let ops = full_ops(&app);
    for (path, token, body) in [
        (
            "/a2a/results".to_owned(),
            &bob,
            json!({"task_id": id, "status": "ok", "lease_id": lease_id,
                   "content": [{"type": "text", "text": "done\u{0}"}]}),
        ),
        (
            "/a2a/results".to_owned(),
            &bob,
            json!({"task_id": id, "status": "error", "lease_id": lease_id,
                   "error_message": "\u{0}"}),
        ),
        (
            format!("/a2a/tasks/{id}/heartbeat"),
            &bob,
            json!({"lease_id": lease_id, "note": "\u{0}"}),
        ),
        (
            format!("/a2a/tasks/{id}/cancel"),
            &alice,
            json!({"reason": "stop\u{0}"}),
        ),
        (
            "/a2a/repair".to_owned(),
            &ops,
            json!({"task_id": id, "reason": "stuck\u{0}",
                   "command": {"action": "force_error", "message": "m"}}),
        ),
        (
            "/a2a/retry-stale".to_owned(),
            &ops,
            json!({"enabled": false, "note": "\u{0}"}),
        ),
    ] {
        let r = app.post(&path, token, &body).await;
        assert_error(&r, 400, "invalid_request");
    }
    let status = app.status_ok(&id).await;
    assert_eq!(status["state"], "in_flight", "{status}");
    assert_eq!(status["lease"]["lease_id"], lease_id);
    // A NUL in a path is refused like one in a query.
    assert_error(
        &app.get("/a2a/tasks/%00", &app.ops()).await,
        400,
        "invalid_request",
    );
    // A body that only spells a backslash and "u0000" holds no NUL.
    let literal = with(task("alice", "bob"), &["intent_text"], json!("\\u0000"));
    app.send(&alice, &literal).await.expect(201);
}
