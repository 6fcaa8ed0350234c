//! Input validation (docs/contract.md#conventions, docs/contract.md#wire-types, docs/contract.md#errors, docs/contract.md#details): 400 `invalid_request`, 413, 415, and every
//! rejection leaves the mailbox unchanged.

use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

/// Variants of a valid task, each broken in one way.
fn broken_tasks() -> Vec<(&'static str, Value)> {
    let base = task("alice", "bob");
    let with = |k: &str, v: Value| {
        let mut t = base.clone();
        t[k] = v;
        t
    };
    let without = |k: &str| {
        let mut t = base.clone();
        t.as_object_mut().unwrap().remove(k);
        t
    };
    vec![
        ("intent_text is a number", with("intent_text", json!(5))),
        ("intent_text is missing", without("intent_text")),
        ("id is missing", without("id")),
        ("recipient is missing", without("recipient")),
        ("id is not a uuid", with("id", json!("not-a-uuid"))),
        ("id is a number", with("id", json!(12345))),
        ("parent is not a uuid", with("parent", json!("xyz"))),
        (
            "deadline_ms is a string",
            with("deadline_ms", json!("soon")),
        ),
        ("deadline_ms is negative", with("deadline_ms", json!(-1))),
        ("deadline_ms is fractional", with("deadline_ms", json!(1.5))),
        ("task_kind is empty", with("task_kind", json!(""))),
        ("task_kind is blank", with("task_kind", json!("   "))),
        ("task_kind is a number", with("task_kind", json!(7))),
        ("content is a string", with("content", json!("hello"))),
        (
            "content has an unknown type",
            with("content", json!([{"type": "video", "url": "x"}])),
        ),
        (
            "text content without text",
            with("content", json!([{"type": "text"}])),
        ),
        (
            "idempotency key is empty",
            with(
                "idempotency",
                json!({"duplicate_safety": "idempotent", "key": ""}),
            ),
        ),
        (
            "idempotency key is blank",
            with(
                "idempotency",
                json!({"duplicate_safety": "idempotent", "key": "  \t "}),
            ),
        ),
        (
            "duplicate_safety not snake_case",
            with(
                "idempotency",
                json!({"duplicate_safety": "Idempotent", "key": "k"}),
            ),
        ),
        (
            "duplicate_safety unknown",
            with(
                "idempotency",
                json!({"duplicate_safety": "maybe", "key": "k"}),
            ),
        ),
        (
            "recipient has a space",
            with("recipient", json!("bad agent")),
        ),
        ("recipient has two @", with("recipient", json!("a@b@c"))),
        (
            "recipient has a slash",
            with("recipient", json!("bob/../x")),
        ),
        (
            "recipient is 129 chars",
            with("recipient", json!("b".repeat(129))),
        ),
        ("recipient is a number", with("recipient", json!(42))),
        ("body is an array", json!([base.clone()])),
        ("body is a string", json!("task")),
    ]
}

/// Every audit row, as the operator sees them.
async fn audit_feed(app: &TestApp) -> Value {
    let r = app.get("/audit/recent?limit=1000", &app.ops()).await;
    r.expect(200)["events"].clone()
}

both_engines!(invalid_task_bodies_are_400_invalid_request_and_change_nothing);
async fn invalid_task_bodies_are_400_invalid_request_and_change_nothing(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let mut failures = Vec::new();
    for (what, body) in broken_tasks() {
        let r = app.send(&alice, &body).await;
        if r.status != 400 || r.body["code"] != "invalid_request" {
            failures.push(format!("{what}: got {} {}", r.status, r.text));
        } else {
            assert_error(&r, 400, "invalid_request");
        }
    }
    assert!(
        failures.is_empty(),
        "these task bodies should be 400 invalid_request:\n{}",
        failures.join("\n")
    );
    app.assert_empty("after invalid sends").await;

    // A recipient that is not an agent id (empty included) is 400 before any capability check
    // (none can be named for it), for a token with a wildcard or without any grant, and no
    // check is audited.
    let narrow = app.token("alice", json!(["a2a.send.bob"]));
    let before = audit_feed(&app).await;
    for bad in [
        json!(""),
        json!("bad agent"),
        json!("x".repeat(129)),
        json!("a@b@c"),
    ] {
        for token in [&alice, &narrow] {
            let mut t = task("alice", "bob");
            t["recipient"] = bad.clone();
            assert_error(&app.send(token, &t).await, 400, "invalid_request");
        }
    }
    assert_eq!(
        audit_feed(&app).await,
        before,
        "an invalid recipient was audited"
    );
    app.assert_empty("after an empty recipient").await;
}

both_engines!(agent_id_of_128_chars_is_accepted);
async fn agent_id_of_128_chars_is_accepted(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let long = "r".repeat(128);
    app.send_ok(&alice, &task("alice", &long)).await;
    app.send_ok(&alice, &task("alice", "a.b-c_D9@x-y.z_0"))
        .await;
}

both_engines!(malformed_json_is_400_invalid_request);
async fn malformed_json_is_400_invalid_request(app: TestApp) {
    let auth = format!("Bearer {}", app.token("alice", json!(["a2a.send.*"])));
    let bob_auth = format!("Bearer {}", app.bob());
    for (path, auth, body) in [
        ("/a2a/tasks", &auth, &b"{\"id\":"[..]),
        ("/a2a/tasks", &auth, b"not json at all"),
        ("/a2a/tasks", &auth, b""),
        ("/a2a/results", &bob_auth, b"{\"task_id\": }"),
        ("/a2a/results", &bob_auth, b""),
    ] {
        let r = app
            .raw(
                Method::POST,
                path,
                Some(auth),
                Some("application/json"),
                Some(body.to_vec()),
            )
            .await;
        assert_error(&r, 400, "invalid_request");
    }
    app.assert_empty("after malformed bodies").await;
}

both_engines!(invalid_result_bodies_are_400_and_leave_the_task_in_flight);
async fn invalid_result_bodies_are_400_and_leave_the_task_in_flight(app: TestApp) {
    let bob = app.bob();
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&bob).await;
    let base = result(&id, "ok", "x");
    let with = |k: &str, v: Value| {
        let mut r = base.clone();
        r[k] = v;
        r
    };
    let without = |k: &str| {
        let mut r = base.clone();
        r.as_object_mut().unwrap().remove(k);
        r
    };
    for (what, body) in [
        ("status unknown", with("status", json!("bogus"))),
        ("status not snake_case", with("status", json!("Ok"))),
        ("status missing", without("status")),
        ("task_id missing", without("task_id")),
        ("lease_id not a uuid", with("lease_id", json!("nope"))),
        (
            "content not a list",
            with("content", json!({"type": "text"})),
        ),
        ("error_message a number", with("error_message", json!(3))),
    ] {
        let r = app.post_result(&bob, &body).await;
        assert_eq!(r.status, 400, "{what}: {}", r.text);
        assert_error(&r, 400, "invalid_request");
    }
    let status = app.status_ok(&id).await;
    assert_eq!(status["state"], "in_flight");
    assert_eq!(status["lease"], lease);
}

both_engines!(bad_query_values_are_400_invalid_request);
async fn bad_query_values_are_400_invalid_request(app: TestApp) {
    let bob = app.bob();
    let ops = app.ops();
    let leaser = app.token("dispatcher", json!(["a2a.lease.*"]));
    app.send_ok(&app.alice(), &task("alice", "bob")).await;
    for (path, token) in [
        ("/a2a/tasks/next?wait_ms=99999", &bob),
        ("/a2a/tasks/next?wait_ms=30001", &bob),
        ("/a2a/tasks/next?wait_ms=abc", &bob),
        ("/a2a/tasks/next?wait_ms=-1", &bob),
        ("/a2a/tasks/next?recipient=bad%20agent", &leaser),
        ("/a2a/tasks/next?recipient=bob&wait_ms=x", &leaser),
        ("/a2a/results/next?wait_ms=99999", &bob),
        ("/a2a/results/next?wait_ms=abc", &bob),
        ("/a2a/tasks/recent?limit=abc", &bob),
        ("/a2a/results/recent?limit=abc", &bob),
        ("/a2a/queue?limit=abc", &ops),
        ("/a2a/queue?state=bogus", &ops),
        ("/a2a/queue?state=InFlight", &ops),
        ("/a2a/queue?state=resolved", &ops),
        ("/a2a/queue?min_lease_age_ms=abc", &ops),
        ("/a2a/queue?min_lease_age_ms=-5", &ops),
        ("/a2a/queue?deadline_within_ms=soon", &ops),
    ] {
        let r = app.get(path, token).await;
        assert_error(&r, 400, "invalid_request");
    }
    // Nothing was leased by the refused long-polls.
    let status = app.queue(&ops, "").await;
    assert_eq!(status["tasks"][0]["state"], "queued", "{status}");
}

both_engines!(a_nul_in_any_query_parameter_is_400);
async fn a_nul_in_any_query_parameter_is_400(app: TestApp) {
    let ops = app.ops();
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let paths = [
        "/audit/recent?kind=%00".to_owned(),
        "/audit/recent?kind=a2a%00".to_owned(),
        "/audit/recent?since_ms=1%00".to_owned(),
        "/a2a/tasks/next?recipient=bob%00".to_owned(),
        "/a2a/tasks/next?wait_ms=%00".to_owned(),
        "/a2a/results/next?wait_ms=0%00".to_owned(),
        "/a2a/tasks/recent?limit=%00".to_owned(),
        "/a2a/results/recent?limit=%00".to_owned(),
        "/a2a/queue?state=%00".to_owned(),
        "/a2a/tasks?sender=%00".to_owned(),
        "/a2a/tasks?recipient=bob%00".to_owned(),
        "/a2a/tasks?state=queued%00".to_owned(),
        "/a2a/tasks?cursor=%00".to_owned(),
        "/a2a/tasks?parent=%00".to_owned(),
        format!("/a2a/tasks/{id}?x=%00"),
        format!("/a2a/tasks/{id}/children?state=%00"),
        "/healthz?%00".to_owned(),
    ];
    for path in &paths {
        let r = app.get(path, &ops).await;
        assert_error(&r, 400, "invalid_request");
    }
    // Nothing was leased, drained or changed.
    let status = app.status_ok(&id).await;
    assert_eq!(status["state"], "queued", "{status}");
}

both_engines!(non_uuid_path_ids_are_400);
async fn non_uuid_path_ids_are_400(app: TestApp) {
    let bob = app.bob();
    assert_error(
        &app.get("/a2a/tasks/not-a-uuid", &bob).await,
        400,
        "invalid_request",
    );
    assert_error(
        &app.get("/a2a/tasks/12345", &app.ops()).await,
        400,
        "invalid_request",
    );
}

both_engines!(wrong_content_type_is_415_unsupported_media_type);
async fn wrong_content_type_is_415_unsupported_media_type(app: TestApp) {
    let auth = format!("Bearer {}", app.alice());
    let body = serde_json::to_vec(&task("alice", "bob")).unwrap();
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/xml",
    ] {
        let r = app
            .raw(
                Method::POST,
                "/a2a/tasks",
                Some(&auth),
                Some(ct),
                Some(body.clone()),
            )
            .await;
        assert_error(&r, 415, "unsupported_media_type");
    }
    let bob_auth = format!("Bearer {}", app.bob());
    let r = app
        .raw(
            Method::POST,
            "/a2a/results",
            Some(&bob_auth),
            Some("text/plain"),
            Some(serde_json::to_vec(&result(&Uuid::new_v4().to_string(), "ok", "x")).unwrap()),
        )
        .await;
    assert_error(&r, 415, "unsupported_media_type");
    app.assert_empty("after 415s").await;
}

both_engines!(body_over_the_default_1_mib_limit_is_413);
async fn body_over_the_default_1_mib_limit_is_413(app: TestApp) {
    let alice = app.alice();
    let mut big = task("alice", "bob");
    big["intent_text"] = json!("x".repeat(1024 * 1024 + 100));
    assert_error(&app.send(&alice, &big).await, 413, "payload_too_large");
    app.assert_empty("after a 413").await;

    // Just under the limit is fine.
    let mut fits = task("alice", "bob");
    fits["intent_text"] = json!("y".repeat(1000 * 1000));
    app.send_ok(&alice, &fits).await;
}

fn small_body_limit() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_MAX_BODY_BYTES", "2048")
}

both_engines!(body_limit_is_configurable, config = small_body_limit);
async fn body_limit_is_configurable(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let mut big = task("alice", "bob");
    big["intent_text"] = json!("x".repeat(4000));
    assert_error(&app.send(&alice, &big).await, 413, "payload_too_large");
    app.assert_empty("after a 413").await;

    let mut small = task("alice", "bob");
    small["intent_text"] = json!("x".repeat(1000));
    let id = app.send_ok(&alice, &small).await;

    app.lease_some(&bob).await;
    let big_result = result(&id, "ok", &"z".repeat(4000));
    assert_error(
        &app.post_result(&bob, &big_result).await,
        413,
        "payload_too_large",
    );
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");
}
