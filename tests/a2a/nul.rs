//! A NUL character anywhere in an A2A request is invalid params (-32602, HTTP+JSON 400
//! INVALID_ARGUMENT) on both engines, never a server error, and nothing is queued.

use reqwest::Method;
use serde_json::json;

use super::rpc::*;
use crate::common::*;

both_engines!(a_nul_in_any_a2a_request_is_invalid_params);
async fn a_nul_in_any_a2a_request_is_invalid_params(app: TestApp) {
    let alice = app.alice();
    let mut m = message("hello\u{0}");
    let calls = [
        ("ListTasks", json!({"contextId": "ctx\u{0}"})),
        ("ListTasks", json!({"pageToken": "\u{0}"})),
        ("GetTask", json!({"id": "\u{0}"})),
        ("CancelTask", json!({"id": "1\u{0}"})),
        ("SendMessage", send_now(m.clone())),
    ];
    for (method, params) in calls {
        let r = rpc(&app, "bob", &alice, method, params).await;
        rpc_error(&r, -32602, "INVALID_PARAMS");
        assert_eq!(
            r.body["id"], "req-1",
            "the request's id is echoed: {}",
            r.text
        );
    }
    m["parts"][0]["text"] = json!("fine");
    m["metadata"] = json!({"note": "\u{0}"});
    let r = rpc(&app, "bob", &alice, "SendMessage", send_now(m.clone())).await;
    rpc_error(&r, -32602, "INVALID_PARAMS");
    let r = rest(
        &app,
        Method::POST,
        "bob",
        "/message:send",
        &alice,
        Some(send_now(m)),
    )
    .await;
    rest_error(&r, 400, "INVALID_ARGUMENT", "INVALID_PARAMS");
    let r = rest(
        &app,
        Method::GET,
        "bob",
        "/tasks?contextId=a%00",
        &alice,
        None,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    app.assert_empty("no A2A request with a NUL queued anything")
        .await;
}
