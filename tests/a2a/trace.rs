//! The facade carries W3C trace context like the native send (docs/contract.md#trace-context):
//! a SendMessage's `traceparent`/`tracestate` headers reach the worker with the task, over
//! JSON-RPC and HTTP+JSON alike, and the same message again under another trace is the same task.

use reqwest::Method;
use serde_json::json;

use super::rpc::*;
use crate::common::*;

const T1: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const T2: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

both_engines!(a_messages_trace_reaches_the_worker_and_a_retry_keeps_the_first);
async fn a_messages_trace_reaches_the_worker_and_a_retry_keeps_the_first(app: TestApp) {
    let alice = app.alice();
    let m = message("refund order 1234");
    let headers = [("traceparent", T1), ("tracestate", "congo=t61rcWkgMzE")];
    let r = rpc_with(
        &app,
        "bob",
        &alice,
        "SendMessage",
        send_now(m.clone()),
        &headers,
    )
    .await;
    let first = rpc_result(&r)["task"]["id"].clone();
    // The same message again, under another span: the same task, no new one.
    let r = rpc_with(
        &app,
        "bob",
        &alice,
        "SendMessage",
        send_now(m),
        &[("traceparent", T2)],
    )
    .await;
    assert_eq!(rpc_result(&r)["task"]["id"], first);
    let leased = lease(&app).await;
    assert_eq!(
        leased.body["task"]["trace"],
        json!({"traceparent": T1, "tracestate": "congo=t61rcWkgMzE"}),
        "{}",
        leased.text
    );
    assert_eq!(leased.header("traceparent"), Some(T1));
    assert!(app.lease(&app.bob()).await.is_none(), "one task only");

    // HTTP+JSON: the same.
    let body = json!({"message": message("refund order 99"),
                      "configuration": {"returnImmediately": true}});
    let path = format!("{}/message:send", base("bob"));
    let r = app
        .raw_with(
            Method::POST,
            &path,
            Some(&format!("Bearer {alice}")),
            Some("application/json"),
            Some(serde_json::to_vec(&body).unwrap()),
            &[("A2A-Version", "1.0"), ("traceparent", T2)],
        )
        .await;
    r.expect(200);
    assert_eq!(lease(&app).await.body["task"]["trace"]["traceparent"], T2);
}

/// bob leases his next task (one must come): the answer.
async fn lease(app: &Api) -> Resp {
    let r = app.next(&app.bob(), "").await;
    assert!(r.expect(200)["task"].is_object(), "{}", r.text);
    r
}
