//! The facade driven by the reference A2A client, `a2a-sdk` 1.3.0 (Python), on both bindings:
//! `scripts/a2a-sdk/sdk_e2e.py` resolves the card, sends, lets the recipient work natively, polls
//! to COMPLETED, replays, cancels, reads an unknown id and sees a FAILED task.
//!
//! The SDK comes from `scripts/a2a-sdk/requirements.txt` (`A2A_MAILBOX_A2A_PYTHON` names an
//! interpreter that has it); without it the test fails, it never skips.

use std::process::Command;

use serde_json::json;

use crate::common::python::{python_for, run_checked, scripts};
use crate::common::*;

both_engines!(the_reference_client_sends_polls_replays_and_cancels);
async fn the_reference_client_sends_polls_replays_and_cancels(app: TestApp) {
    let python = tokio::task::spawn_blocking(|| python_for("a2a-sdk", "A2A_MAILBOX_A2A_PYTHON"))
        .await
        .unwrap();
    let alice = app.token("alice", json!(["a2a.send.bob"]));
    let bob = app.token("bob", json!(["a2a.respond.alice"]));
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let mut cmd = Command::new(&python);
        cmd.arg(scripts("a2a-sdk").join("sdk_e2e.py")).args([
            &app.address,
            binding,
            &alice,
            &bob,
            "bob",
        ]);
        tokio::task::spawn_blocking(move || run_checked(&mut cmd, "the a2a-sdk end-to-end script"))
            .await
            .unwrap();
    }
}
