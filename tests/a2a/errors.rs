//! Every A2A error of §16 on the wire, on both bindings: JSON-RPC errors at HTTP 200 with their
//! ErrorInfo, HTTP+JSON errors at their status; the A2A-Version rules; and the refusals that stay
//! at the transport (authentication, authorization, media type).

use reqwest::Method;
use serde_json::json;

use super::rpc::*;
use crate::common::*;

both_engines!(every_json_rpc_error_code_has_its_reason);
async fn every_json_rpc_error_code_has_its_reason(app: TestApp) {
    let alice = app.alice();
    let call = |method: &'static str, params| {
        let (api, alice) = (&app.api, alice.clone());
        async move { rpc(api, "bob", &alice, method, params).await }
    };
    // -32001: unknown, and not a UUID at all.
    for id in [uuid::Uuid::new_v4().to_string(), "not-a-uuid".into()] {
        rpc_error(
            &call("GetTask", json!({"id": id})).await,
            -32001,
            "TASK_NOT_FOUND",
        );
        rpc_error(
            &call("CancelTask", json!({"id": id})).await,
            -32001,
            "TASK_NOT_FOUND",
        );
    }
    // -32002: an answered task is not cancelable.
    let task = send_task(&app, "bob", &alice, "answer me").await;
    answer(&app, &app.bob(), json!({"status": "ok"})).await;
    let r = call("CancelTask", json!({"id": task["id"]})).await;
    rpc_error(&r, -32002, "TASK_NOT_CANCELABLE");
    // -32003: push notifications, as methods and as SendMessage configuration.
    for method in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ] {
        rpc_error(
            &call(method, json!({})).await,
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        );
    }
    let push = json!({"message": message("x"), "configuration": {"taskPushNotificationConfig": {"url": "https://x"}}});
    rpc_error(
        &call("SendMessage", push).await,
        -32003,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    );
    // -32004: streaming and follow-ups.
    for method in ["SendStreamingMessage", "SubscribeToTask"] {
        rpc_error(
            &call(method, json!({})).await,
            -32004,
            "UNSUPPORTED_OPERATION",
        );
    }
    let mut follow_up = message("more");
    follow_up["taskId"] = task["id"].clone();
    rpc_error(
        &call("SendMessage", send_now(follow_up)).await,
        -32004,
        "UNSUPPORTED_OPERATION",
    );
    // -32601: anything else.
    rpc_error(
        &call("tasks/get", json!({})).await,
        -32601,
        "METHOD_NOT_FOUND",
    );
    // -32602: what SendMessage and ListTasks refuse.
    let bad_messages = [
        json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}),
        json!({"messageId": "m", "role": "user", "parts": [{"text": "x"}]}),
        json!({"role": "ROLE_USER", "parts": [{"text": "x"}]}),
        json!({"messageId": "m", "role": "ROLE_USER", "parts": []}),
        json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "https://x/y.pdf"}]}),
        json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "aGk="}]}),
        json!("not a message"),
    ];
    for m in bad_messages {
        rpc_error(
            &call("SendMessage", send_now(m)).await,
            -32602,
            "INVALID_PARAMS",
        );
    }
    rpc_error(
        &call("SendMessage", json!({})).await,
        -32602,
        "INVALID_PARAMS",
    );
    rpc_error(&call("GetTask", json!({})).await, -32602, "INVALID_PARAMS");
    for params in [
        json!({"pageSize": 101}),
        json!({"status": "completed"}),
        json!({"pageToken": "x"}),
    ] {
        rpc_error(&call("ListTasks", params).await, -32602, "INVALID_PARAMS");
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
    let unknown = format!("/tasks/{}", uuid::Uuid::new_v4());
    let r = rest(&app, Method::GET, "bob", &unknown, &alice, None).await;
    rest_error(&r, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    let r = rest(
        &app,
        Method::POST,
        "bob",
        &format!("{unknown}:cancel"),
        &alice,
        None,
    )
    .await;
    rest_error(&r, 404, "NOT_FOUND", "TASK_NOT_FOUND");
    let task = send_task(&app, "bob", &alice, "x").await;
    answer(&app, &app.bob(), json!({"status": "ok"})).await;
    let cancel = format!("/tasks/{}:cancel", task["id"].as_str().unwrap());
    let r = rest(&app, Method::POST, "bob", &cancel, &alice, Some(json!({}))).await;
    rest_error(&r, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE");
    let r = rest(
        &app,
        Method::POST,
        "bob",
        "/message:stream",
        &alice,
        Some(json!({})),
    )
    .await;
    rest_error(&r, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION");
    let subscribe = format!("/tasks/{}:subscribe", task["id"].as_str().unwrap());
    let r = rest(&app, Method::GET, "bob", &subscribe, &alice, None).await;
    rest_error(&r, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION");
    let push = format!(
        "/tasks/{}/pushNotificationConfigs",
        task["id"].as_str().unwrap()
    );
    let r = rest(&app, Method::POST, "bob", &push, &alice, Some(json!({}))).await;
    rest_error(
        &r,
        400,
        "FAILED_PRECONDITION",
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    );
    let bad = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}});
    let r = rest(
        &app,
        Method::POST,
        "bob",
        "/message:send",
        &alice,
        Some(bad),
    )
    .await;
    rest_error(&r, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    let r = rest(
        &app,
        Method::POST,
        "bob",
        "/message:send",
        &alice,
        Some(json!([1])),
    )
    .await;
    rest_error(&r, 400, "INVALID_ARGUMENT", "INVALID_REQUEST");
    let r = rest(
        &app,
        Method::GET,
        "bob",
        "/tasks?pageSize=abc",
        &alice,
        None,
    )
    .await;
    rest_error(&r, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
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
