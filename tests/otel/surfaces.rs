//! The same trace through the other surfaces' real clients: a message sent by the reference A2A
//! client (`a2a-sdk`) with a `traceparent` header, and a task sent by the reference MCP client
//! (`mcp`) with `traceparent` in `_meta`, each leased by the typed client's worker: the
//! mailbox's send span continues the caller's trace, its lease span and the worker's span link
//! to it.

use std::process::Command;
use std::time::Duration;

use a2a_mailbox_client::{Client, Reply, Worker};
use serde_json::json;
use uuid::Uuid;

use super::flow::mailbox_span;
use super::{exporting, flush, traced};
use crate::common::python::{python_for, run_checked, scripts};
use crate::common::TestApp;

/// A fresh sampled `traceparent` and its trace id and span id.
fn traceparent() -> (String, String, String) {
    let trace = Uuid::new_v4().simple().to_string();
    let span = Uuid::new_v4().simple().to_string()[..16].to_owned();
    (format!("00-{trace}-{span}-01"), trace, span)
}

/// Runs `script` of `scripts/<dir>` with `args`: the task id it printed.
async fn sent_by(dir: &'static str, var: &'static str, script: &str, args: Vec<String>) -> String {
    let script = scripts(dir).join(script);
    let out = tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(python_for(dir, var));
        cmd.arg(script).args(args);
        run_checked(&mut cmd, "the traced send")
    })
    .await
    .unwrap();
    out.trim().lines().last().unwrap_or_default().to_owned()
}

/// bob's typed-client worker leases the task and answers; then the collector must hold the
/// mailbox's send span in trace `trace` under `parent`, and the lease and worker spans linked.
async fn joined(app: &TestApp, id: &str, trace: &str, parent: &str) {
    let collector = traced();
    let bob = Client::new(&app.address, app.token("bob", json!(["a2a.respond.alice"]))).unwrap();
    Worker::new(bob)
        .poll_wait(Duration::from_secs(10))
        .run_once(&|_leased| async { Reply::text("refunded") })
        .await
        .unwrap()
        .expect("bob leased the task");
    flush();
    let send = collector
        .until("the mailbox's send span", |s| mailbox_span(s, "send", id))
        .await;
    assert_eq!(
        (send.trace_id.as_str(), send.parent_span_id.as_str()),
        (trace, parent)
    );
    let lease = collector
        .until("the lease span", |s| mailbox_span(s, "receive", id))
        .await;
    assert!(lease.links_to(trace), "{lease:?}");
    let process = collector
        .until("the worker's span", |spans| {
            spans
                .iter()
                .find(|s| s.name == "process bob" && s.attr("messaging.message.id") == Some(id))
                .cloned()
        })
        .await;
    assert!(process.links_to(trace), "{process:?}");
}

both_engines!(
    a_message_of_the_reference_a2a_client_keeps_its_trace,
    config = exporting
);
async fn a_message_of_the_reference_a2a_client_keeps_its_trace(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.bob"]));
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let (tp, trace, parent) = traceparent();
        let args = [&app.address, binding, &alice, "bob", &tp].map(|s| s.to_string());
        let id = sent_by(
            "a2a-sdk",
            "A2A_MAILBOX_A2A_PYTHON",
            "trace_e2e.py",
            args.to_vec(),
        )
        .await;
        joined(&app, &id, &trace, &parent).await;
    }
}

both_engines!(
    a_task_of_the_reference_mcp_client_keeps_its_trace,
    config = exporting
);
async fn a_task_of_the_reference_mcp_client_keeps_its_trace(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.bob"]));
    let (tp, trace, parent) = traceparent();
    let args = [&app.address, &alice, "bob", &tp].map(|s| s.to_string());
    let id = sent_by(
        "mcp",
        "A2A_MAILBOX_MCP_PYTHON",
        "trace_e2e.py",
        args.to_vec(),
    )
    .await;
    joined(&app, &id, &trace, &parent).await;
}
