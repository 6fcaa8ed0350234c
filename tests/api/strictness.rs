//! Input the contract does not spell out but a careful client relies on: other methods on a
//! known path, non-object bodies, and NUL characters in stored strings.

use reqwest::Method;
use serde_json::json;

use crate::common::*;

async fn other_methods_on_a_known_path_are_405_with_allow(app: TestApp) {
    for (method, path, allow) in [
        (Method::DELETE, "/a2a/queue", "GET"),
        (Method::DELETE, "/a2a/tasks", "POST, GET"),
        (Method::PUT, "/a2a/results", "POST"),
        (Method::GET, "/a2a/repair", "POST"),
        (Method::POST, "/openapi.json", "GET"),
        (Method::DELETE, "/docs/", "GET"),
    ] {
        let r = app
            .raw(
                method,
                path,
                Some(&format!("Bearer {}", app.ops())),
                None,
                None,
            )
            .await;
        assert_eq!(r.status, 405, "{}: {}", r.what, r.text);
        assert_eq!(r.body["code"], "method_not_allowed", "{}", r.text);
        assert_eq!(r.header("allow"), Some(allow), "{}", r.what);
    }
    let r = app.get_anon("/no/such/path").await;
    assert_eq!(
        (r.status, r.body["code"].as_str()),
        (404, Some("not_found"))
    );
}
both_engines!(other_methods_on_a_known_path_are_405_with_allow);

async fn bodies_must_be_json_objects(app: TestApp) {
    let id = uuid::Uuid::new_v4().to_string();
    for (path, body) in [
        ("/a2a/tasks", json!([id, "alice", "bob", "x"])),
        ("/a2a/results", json!([id, "ok"])),
        (
            "/a2a/repair",
            json!([id, "r", {"action": "requeue", "duplicate_risk": "idempotent"}]),
        ),
        ("/a2a/retry-stale", json!([])),
        (&format!("/a2a/tasks/{id}/heartbeat"), json!([id])),
        ("/a2a/tasks", json!("a string")),
    ] {
        let tok = app.token(
            "alice",
            json!([
                "a2a.send.*",
                "a2a.respond.*",
                "a2a.operator",
                "a2a.repair.requeue"
            ]),
        );
        let r = app.post(path, &tok, &body).await;
        assert_error(&r, 400, "invalid_request");
    }
    app.assert_empty("non-object bodies").await;
}
both_engines!(bodies_must_be_json_objects);

async fn nul_characters_in_keys_and_messages_are_400(app: TestApp) {
    let mut t = task("alice", "bob");
    t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": "a\u{0}b"});
    assert_error(&app.send(&app.alice(), &t).await, 400, "invalid_request");
    app.assert_empty("refused NUL sends").await;
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    app.lease_some(&app.bob()).await;
    let mut res = result(&id, "error", "x");
    res["error_message"] = json!("bad\u{0}");
    assert_error(
        &app.post_result(&app.bob(), &res).await,
        400,
        "invalid_request",
    );
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");
    // Lists filter on `task_kind` and `context_id`, so they are kept in text columns too.
    for field in ["task_kind", "context_id"] {
        let mut t = task("alice", "bob");
        t[field] = json!("kind\u{0}");
        assert_error(&app.send(&app.alice(), &t).await, 400, "invalid_request");
    }
    // Every other string of a body too: see `nul.rs`.
}
both_engines!(nul_characters_in_keys_and_messages_are_400);

/// The database itself keeps a task's state to the five of the contract (a CHECK constraint on
/// both engines), so no writer, not even one bypassing the API, can leave a task in a state no
/// operation knows.
async fn the_database_refuses_a_state_outside_the_contract(app: TestApp) {
    use sqlx::Connection;
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let sql = "UPDATE tasks SET state = 'done' WHERE id = $1";
    let refused = match app.engine {
        Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            sqlx::query(sql).bind(&id).execute(&mut c).await.is_err()
        }
        Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            sqlx::query(sql).bind(&id).execute(&mut c).await.is_err()
        }
    };
    assert!(refused, "a task was set to state 'done'");
    assert_eq!(app.status_ok(&id).await["state"], "queued");
}
both_engines!(the_database_refuses_a_state_outside_the_contract);

both_engines!(integral_numbers_are_integers_in_every_body);
async fn integral_numbers_are_integers_in_every_body(app: TestApp) {
    let alice = app.alice();
    // A deadline written as a float with an integral value is that integer, stored as one.
    let deadline = now_ms() + 3_600_000;
    let mut t = task("alice", "bob");
    t["deadline_ms"] = json!(deadline as f64);
    let id = app.send_ok(&alice, &t).await;
    assert_eq!(
        app.status_ok(&id).await["task"]["deadline_ms"],
        json!(deadline)
    );
    // The same task again, with the integer: the same body, so a replay.
    t["deadline_ms"] = json!(deadline);
    let r = app.send(&alice, &t).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // A retry policy's bounds likewise; a fraction, a negative or too large a value is 400.
    let ops = app.ops();
    let r = app
        .post(
            "/a2a/retry-stale",
            &ops,
            &json!({"scan_limit": 121.0, "max_attempts": 1.21e2}),
        )
        .await;
    let policy = r.expect(200)["report"]["policy"].clone();
    assert_eq!(
        (&policy["scan_limit"], &policy["max_attempts"]),
        (&json!(121), &json!(121))
    );
    for bad in [
        json!({"scan_limit": 121.5}),
        json!({"max_requeues": -1}),
        json!({"max_attempts": 4294967296_u64}),
        json!({"min_lease_age_ms": 0.5}),
    ] {
        assert_error(
            &app.post("/a2a/retry-stale", &ops, &bad).await,
            400,
            "invalid_request",
        );
    }
    let mut late = task("alice", "bob");
    late["deadline_ms"] = json!(1.5);
    assert_error(&app.send(&alice, &late).await, 400, "invalid_request");
}
