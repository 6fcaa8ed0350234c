//! After authentication an MCP request's refusal is a JSON-RPC error with HTTP 200
//! (docs/mcp.md#refusals); `Mcp-Name` must name what the body calls, in either of its forms; a
//! task's `ttl` counts from its creation.

use serde_json::{json, Value};

use super::wire::{modern, rpc, Mcp};
use crate::common::*;

/// alice's task for bob, sent as an MCP task (revision 2025-11-25) with `task`: its id.
async fn mcp_task(alice: &Mcp<'_>, task: Value) -> String {
    let created = alice
        .result(
            "tools/call",
            json!({"name": "send_task", "task": task,
                "arguments": {"recipient": "bob", "intent_text": "refusals"}}),
        )
        .await;
    created["task"]["taskId"].as_str().unwrap().to_owned()
}

both_engines!(cancel_by_a_caller_who_may_not_is_32602_with_the_native_body_and_http_200);
async fn cancel_by_a_caller_who_may_not_is_32602_with_the_native_body_and_http_200(app: TestApp) {
    let (alice, _) = Mcp::init(&app, &app.alice(), "2025-11-25").await;
    let id = mcp_task(&alice, json!({})).await;
    // bob, the recipient, sees the task but may not cancel it.
    let (bob, _) = Mcp::init(&app, &app.bob(), "2025-11-25").await;
    let r = bob.post(&rpc("tasks/cancel", json!({"taskId": id}))).await;
    let error = &r.expect(200)["error"];
    assert_eq!(error["code"], -32602, "{}", r.text);
    assert_eq!(error["data"]["kind"], "error", "{}", r.text);
    assert_eq!(error["data"]["code"], "sender_mismatch", "{}", r.text);
    // Revision 2026-07-28 answers the same.
    let cancel = modern("tasks/cancel", json!({"taskId": id}), "2026-07-28", true);
    let r = app.post_with("/mcp", &app.bob(), &cancel, &[]).await;
    let error = &r.expect(200)["error"];
    assert_eq!(error["code"], -32602, "{}", r.text);
    assert_eq!(error["data"]["code"], "sender_mismatch", "{}", r.text);
    // Nothing changed: the task still works, and its sender cancels it.
    let got = alice.result("tasks/get", json!({"taskId": id})).await;
    assert_eq!(got["status"], "working");
    let canceled = alice.result("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(canceled["status"], "cancelled");
}

both_engines!(mcp_name_in_its_base64_form_must_name_the_called_tool);
async fn mcp_name_in_its_base64_form_must_name_the_called_tool(app: TestApp) {
    let token = app.alice();
    let call = modern(
        "tools/call",
        json!({"name": "get_task", "arguments": {"task_id": uuid::Uuid::new_v4()}}),
        "2026-07-28",
        true,
    );
    // "get_task", with and without padding; "send_task"; and what decodes to nothing.
    for (header, agrees) in [
        ("=?base64?Z2V0X3Rhc2s=?=", true),
        ("=?base64?Z2V0X3Rhc2s?=", true),
        ("=?base64?c2VuZF90YXNr?=", false),
        ("=?base64?!!not base64!!?=", false),
        ("=?base64??=", false),
        ("=?base64?/w==?=", false),
    ] {
        let r = app
            .post_with("/mcp", &token, &call, &[("Mcp-Name", header)])
            .await;
        if agrees {
            let result = &r.expect(200)["result"];
            assert_eq!(result["structuredContent"]["code"], "not_found", "{header}");
        } else {
            assert_eq!(
                r.expect(400)["error"]["code"],
                -32020,
                "{header}: {}",
                r.text
            );
        }
    }
}

both_engines!(a_task_past_its_ttl_is_32602_for_tasks_get_and_tasks_result);
async fn a_task_past_its_ttl_is_32602_for_tasks_get_and_tasks_result(app: TestApp) {
    let (alice, _) = Mcp::init(&app, &app.alice(), "2025-11-25").await;
    let short = mcp_task(&alice, json!({"ttl": 1})).await;
    let kept = mcp_task(&alice, json!({"ttl": 600_000})).await;
    clock_tick().await;
    for method in ["tasks/get", "tasks/result"] {
        let code = alice.error_code(method, json!({"taskId": short})).await;
        assert_eq!(code, -32602, "{method} past the ttl");
    }
    let got = alice.result("tasks/get", json!({"taskId": kept})).await;
    assert_eq!(got["ttl"], 600_000);
}
