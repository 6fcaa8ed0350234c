//! The MCP server driven by the reference client, `mcp` 1.30.0 (Python):
//! `scripts/mcp/mcp_e2e.py` initializes, lists and calls every tool, runs `send_task` as an MCP
//! task that a native worker answers, reads its result, lists and cancels tasks, and sends
//! through MCP what the A2A facade reads (and the other way round).
//!
//! The client comes from `scripts/mcp/requirements.txt` (`A2A_MAILBOX_MCP_PYTHON` names an
//! interpreter that has it); without it the test fails, it never skips.

use std::process::Command;

use serde_json::json;

use crate::common::python::{python_for, run_checked, scripts};
use crate::common::*;

both_engines!(the_reference_client_uses_every_tool_and_mcp_tasks);
async fn the_reference_client_uses_every_tool_and_mcp_tasks(app: TestApp) {
    let python = tokio::task::spawn_blocking(|| python_for("mcp", "A2A_MAILBOX_MCP_PYTHON"))
        .await
        .unwrap();
    let alice = app.token("alice", json!(["a2a.send.bob"]));
    let bob = app.token("bob", json!(["a2a.respond.alice"]));
    let mut cmd = Command::new(&python);
    cmd.arg(scripts("mcp").join("mcp_e2e.py"))
        .args([&app.address, &alice, &bob, "bob"]);
    tokio::task::spawn_blocking(move || run_checked(&mut cmd, "the mcp end-to-end script"))
        .await
        .unwrap();
}
