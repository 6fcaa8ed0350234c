//! MCP carries W3C trace context in `params._meta` (docs/mcp.md#trace-context): a `send_task`
//! call's `traceparent`/`tracestate` reach the worker with the task, unless the arguments carry
//! a `trace` of their own, and a retry of the same task under another trace replays it.

use serde_json::{json, Value};
use uuid::Uuid;

use super::wire::{rpc, Mcp};
use crate::common::*;

const T1: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const T2: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// `send_task` with `args` under `meta`: the native answer the tool returned.
async fn send(mcp: &Mcp<'_>, args: Value, meta: Value) -> Value {
    let params = json!({"name": "send_task", "arguments": args, "_meta": meta});
    let r = mcp.post(&rpc("tools/call", params)).await;
    let result = &r.expect(200)["result"];
    assert_ne!(result["isError"], true, "{}", r.text);
    result["structuredContent"].clone()
}

both_engines!(a_send_task_carries_the_trace_of_its_meta);
async fn a_send_task_carries_the_trace_of_its_meta(app: TestApp) {
    let (mcp, _) = Mcp::init(&app, &app.alice(), "2025-06-18").await;
    let id = Uuid::new_v4().to_string();
    let args = json!({"id": id, "recipient": "bob", "intent_text": "refund order 1234"});
    let meta = json!({"traceparent": T1, "tracestate": "congo=t61rcWkgMzE"});
    let first = send(&mcp, args.clone(), meta).await;
    assert_eq!(first["kind"], "a2a_task_queued", "{first}");
    let again = send(&mcp, args, json!({"traceparent": T2})).await;
    assert_eq!(again["task_id"], first["task_id"], "a replay: {again}");
    let r = app.next(&app.bob(), "").await;
    assert_eq!(
        r.expect(200)["task"]["trace"],
        json!({"traceparent": T1, "tracestate": "congo=t61rcWkgMzE"}),
        "{}",
        r.text
    );
    // The arguments' own trace wins; a malformed `_meta` one is dropped.
    let own = json!({"recipient": "bob", "intent_text": "x", "trace": {"traceparent": T2}});
    send(&mcp, own, json!({"traceparent": T1})).await;
    assert_eq!(
        app.next(&app.bob(), "").await.body["task"]["trace"]["traceparent"],
        T2
    );
    send(
        &mcp,
        json!({"recipient": "bob", "intent_text": "y"}),
        json!({"traceparent": "00-x"}),
    )
    .await;
    let r = app.next(&app.bob(), "").await;
    assert!(r.expect(200)["task"].get("trace").is_none(), "{}", r.text);
}

both_engines!(a_post_result_carries_the_trace_of_its_meta_back_to_the_sender);
async fn a_post_result_carries_the_trace_of_its_meta_back_to_the_sender(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let (task_id, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(task_id, id);
    let (bob, _) = Mcp::init(&app, &app.bob(), "2025-06-18").await;
    let args = json!({"task_id": id, "status": "ok", "lease_id": lease["lease_id"],
                      "content": [{"type": "text", "text": "done"}]});
    let params = json!({"name": "post_result", "arguments": args,
                        "_meta": {"traceparent": T2}});
    let r = bob.post(&rpc("tools/call", params.clone())).await;
    assert_ne!(r.expect(200)["result"]["isError"], true, "{}", r.text);
    // The same result under another trace: a replay, not a conflict.
    let mut again = params;
    again["_meta"] = json!({"traceparent": T1});
    let r = bob.post(&rpc("tools/call", again)).await;
    assert_ne!(r.expect(200)["result"]["isError"], true, "{}", r.text);
    let drained = app.drain(&app.alice()).await.unwrap();
    assert_eq!(drained["trace"], json!({"traceparent": T2}), "{drained}");
}
