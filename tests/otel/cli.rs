//! The operator commands run under OpenTelemetry's environment carriers (`TRACEPARENT`,
//! `TRACESTATE`) send that trace context with their requests: the mailbox's span of the
//! request joins the trace that ran the command.

use serde_json::json;

use super::exporting;
use crate::common::otlp::collector;
use crate::common::{TestApp, BIN};

both_engines!(
    a_command_run_under_traceparent_joins_its_trace,
    config = exporting
);
async fn a_command_run_under_traceparent_joins_its_trace(app: TestApp) {
    let trace = uuid::Uuid::new_v4().simple().to_string();
    let parent = "b7ad6b7169203331";
    let ops = app.token("ops", json!(["a2a.operator"]));
    let out = tokio::process::Command::new(BIN)
        .args(["status", "--json"])
        .env("A2A_MAILBOX_URL", &app.address)
        .env("A2A_MAILBOX_TOKEN", &ops)
        .env("TRACEPARENT", format!("00-{trace}-{parent}-01"))
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("running the CLI");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let span = collector()
        .until("the span of the command's request", |spans| {
            spans
                .iter()
                .find(|s| s.trace_id == trace && s.kind == 2)
                .cloned()
        })
        .await;
    assert_eq!(span.parent_span_id, parent, "{span:?}");
}
