//! Every A2A error of docs/contract.md#a2a on the wire, on both bindings: JSON-RPC errors at HTTP 200 with their
//! ErrorInfo, HTTP+JSON errors at their status; the A2A-Version rules; and the refusals that stay
//! at the transport (authentication, authorization, media type).

use reqwest::Method;
use serde_json::json;

use super::rpc::*;
use crate::common::*;

both_engines!(every_json_rpc_error_code_has_its_reason);
async fn every_json_rpc_error_code_has_its_reason(app: TestApp) {
    let alice = app.alice();
    // An answered task, which cannot be canceled.
    let task = send_task(&app, "bob", &alice, "answer me").await;
    answer(&app, &app.bob(), json!({"status": "ok"})).await;
    let mut follow_up = message("more");
    follow_up["taskId"] = task["id"].clone();
    let push = json!({"message": message("x"),
        "configuration": {"taskPushNotificationConfig": {"url": "https://x"}}});
    let unknown = uuid::Uuid::new_v4().to_string();
    let bad_message = |m: serde_json::Value| ("SendMessage", send_now(m), -32602, "INVALID_PARAMS");
    let cases = [
        ("GetTask", json!({"id": unknown}), -32001, "TASK_NOT_FOUND"),
        (
            "GetTask",
            json!({"id": "not-a-uuid"}),
            -32001,
            "TASK_NOT_FOUND",
        ),
        (
            "CancelTask",
            json!({"id": unknown}),
            -32001,
            "TASK_NOT_FOUND",
        ),
        (
            "CancelTask",
            json!({"id": "not-a-uuid"}),
            -32001,
            "TASK_NOT_FOUND",
        ),
        (
            "CancelTask",
            json!({"id": task["id"]}),
            -32002,
            "TASK_NOT_CANCELABLE",
        ),
        (
            "CreateTaskPushNotificationConfig",
            json!({}),
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({}),
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            "ListTaskPushNotificationConfigs",
            json!({}),
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            "DeleteTaskPushNotificationConfig",
            json!({}),
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            "SendMessage",
            push,
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        ("SendStreamingMessage", json!({}), -32602, "INVALID_PARAMS"),
        ("SubscribeToTask", json!({}), -32602, "INVALID_PARAMS"),
        (
            "SubscribeToTask",
            json!({"id": uuid::Uuid::new_v4()}),
            -32001,
            "TASK_NOT_FOUND",
        ),
        (
            "SendMessage",
            send_now(follow_up),
            -32004,
            "UNSUPPORTED_OPERATION",
        ),
        ("tasks/get", json!({}), -32601, "METHOD_NOT_FOUND"),
        bad_message(json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]})),
        bad_message(json!({"messageId": "m", "role": "user", "parts": [{"text": "x"}]})),
        bad_message(json!({"role": "ROLE_USER", "parts": [{"text": "x"}]})),
        bad_message(json!({"messageId": "m", "role": "ROLE_USER", "parts": []})),
        bad_message(
            json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "https://x/y.pdf"}]}),
        ),
        bad_message(json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "aGk="}]})),
        bad_message(json!("not a message")),
        ("SendMessage", json!({}), -32602, "INVALID_PARAMS"),
        ("GetTask", json!({}), -32602, "INVALID_PARAMS"),
        (
            "ListTasks",
            json!({"pageSize": 101}),
            -32602,
            "INVALID_PARAMS",
        ),
        (
            "ListTasks",
            json!({"status": "completed"}),
            -32602,
            "INVALID_PARAMS",
        ),
        (
            "ListTasks",
            json!({"pageToken": "x"}),
            -32602,
            "INVALID_PARAMS",
        ),
    ];
    for (method, params, code, reason) in cases {
        let r = rpc(&app, "bob", &alice, method, params).await;
        rpc_error(&r, code, reason);
    }
    let listed = app.get("/a2a/tasks", &app.ops()).await;
    let tasks = listed.expect(200)["tasks"].as_array().unwrap().len();
    assert_eq!(tasks, 1, "refused calls queued nothing: {}", listed.text);
}

both_engines!(malformed_and_batch_requests_are_refused_with_http_200);
async fn malformed_and_batch_requests_are_refused_with_http_200(app: TestApp) {
    let auth = format!("Bearer {}", app.alice());
    let send = |body: &'static str| {
        let (api, auth) = (&app.api, auth.clone());
        async move {
            api.raw_with(
                Method::POST,
                "/a2a/agents/bob/jsonrpc",
                Some(&auth),
                Some("application/a2a+json"),
                Some(body.as_bytes().to_vec()),
                &[("A2A-Version", "1.0")],
            )
            .await
        }
    };
    let e = rpc_error(&send("{not json").await, -32700, "INVALID_REQUEST");
    assert!(e["message"].is_string());
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]"#;
    let r = send(batch).await;
    rpc_error(&r, -32600, "INVALID_REQUEST");
    assert_eq!(r.body["id"], json!(null));
    let r = send(r#"{"id": 7, "method": "GetTask"}"#).await;
    rpc_error(&r, -32600, "INVALID_REQUEST");
    assert_eq!(r.body["id"], 7, "the id is echoed: {}", r.text);
    rpc_error(
        &send(r#"{"jsonrpc":"2.0","id":1,"method":3}"#).await,
        -32600,
        "INVALID_REQUEST",
    );
}

both_engines!(only_a2a_version_1_0_is_spoken);
async fn only_a2a_version_1_0_is_spoken(app: TestApp) {
    let alice = app.alice();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let path = "/a2a/agents/bob/jsonrpc";
    for (version, ok) in [
        (None, false),
        (Some("0.3"), false),
        (Some("1.1"), false),
        (Some("1.0.x"), false),
        (Some("1.0"), true),
        (Some("1.0.2"), true),
    ] {
        let headers: Vec<(&str, &str)> = version.map(|v| ("A2A-Version", v)).into_iter().collect();
        let r = app.post_with(path, &alice, &body, &headers).await;
        if ok {
            rpc_result(&r);
        } else {
            rpc_error(&r, -32009, "VERSION_NOT_SUPPORTED");
        }
        let r = app
            .raw_with(
                Method::GET,
                "/a2a/agents/bob/tasks",
                Some(&format!("Bearer {alice}")),
                None,
                None,
                &headers,
            )
            .await;
        if ok {
            r.expect(200);
        } else {
            rest_error(&r, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED");
        }
    }
}

both_engines!(http_json_errors_carry_their_status_and_reason);
async fn http_json_errors_carry_their_status_and_reason(app: TestApp) {
    let alice = app.alice();
    let task = send_task(&app, "bob", &alice, "x").await;
    answer(&app, &app.bob(), json!({"status": "ok"})).await;
    let (id, unknown) = (task["id"].as_str().unwrap(), uuid::Uuid::new_v4());
    let no_parts = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}});
    let cases = [
        (
            Method::GET,
            format!("/tasks/{unknown}"),
            None,
            404,
            "NOT_FOUND",
            "TASK_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/tasks/{unknown}:cancel"),
            None,
            404,
            "NOT_FOUND",
            "TASK_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/tasks/{id}:cancel"),
            Some(json!({})),
            400,
            "FAILED_PRECONDITION",
            "TASK_NOT_CANCELABLE",
        ),
        (
            Method::POST,
            "/message:stream".into(),
            Some(json!({})),
            400,
            "INVALID_ARGUMENT",
            "INVALID_PARAMS",
        ),
        (
            Method::GET,
            format!("/tasks/{id}:subscribe"),
            None,
            400,
            "FAILED_PRECONDITION",
            "UNSUPPORTED_OPERATION",
        ),
        (
            Method::POST,
            format!("/tasks/{id}/pushNotificationConfigs"),
            Some(json!({})),
            400,
            "FAILED_PRECONDITION",
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        (
            Method::POST,
            "/message:send".into(),
            Some(no_parts),
            400,
            "INVALID_ARGUMENT",
            "INVALID_PARAMS",
        ),
        (
            Method::POST,
            "/message:send".into(),
            Some(json!([1])),
            400,
            "INVALID_ARGUMENT",
            "INVALID_REQUEST",
        ),
        (
            Method::GET,
            "/tasks?pageSize=abc".into(),
            None,
            400,
            "INVALID_ARGUMENT",
            "INVALID_PARAMS",
        ),
    ];
    for (method, path, body, status, name, reason) in cases {
        let r = rest(&app, method, "bob", &path, &alice, body).await;
        rest_error(&r, status, name, reason);
    }
}

both_engines!(authentication_and_media_type_fail_at_the_transport);
async fn authentication_and_media_type_fail_at_the_transport(app: TestApp) {
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": send_now(message("x"))}))
    .unwrap();
    for path in ["/a2a/agents/bob/jsonrpc", "/a2a/agents/bob/message:send"] {
        let r = app
            .raw_with(
                Method::POST,
                path,
                None,
                Some("application/json"),
                Some(body.clone()),
                &[("A2A-Version", "1.0")],
            )
            .await;
        assert_error(&r, 401, "unauthenticated");
        let r = app
            .raw_with(
                Method::POST,
                path,
                Some(&format!("Bearer {}", app.alice())),
                Some("text/plain"),
                Some(body.clone()),
                &[("A2A-Version", "1.0")],
            )
            .await;
        assert_error(&r, 415, "unsupported_media_type");
    }
    app.assert_empty("nothing was queued").await;
}
