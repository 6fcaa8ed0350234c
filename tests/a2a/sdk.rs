//! The facade driven by the reference A2A client, `a2a-sdk` 1.3.0 (Python), on both bindings:
//! `scripts/a2a-sdk/sdk_e2e.py` resolves the card, sends, lets the recipient work natively, polls
//! to COMPLETED, replays, cancels, reads an unknown id and sees a FAILED task.
//!
//! The SDK lives in a virtual environment under the target directory, made on first use from
//! `scripts/a2a-sdk/requirements.txt` (`A2A_MAILBOX_A2A_PYTHON` names another interpreter that
//! has it). Without it the test fails: it never skips.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::json;

use crate::common::*;

const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/a2a-sdk");

/// Serialises the making of the environment between the tests of this process.
static VENV: Mutex<()> = Mutex::new(());

fn run(cmd: &mut Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Python interpreter with the pinned `a2a-sdk`.
fn sdk_python() -> PathBuf {
    if let Ok(python) = std::env::var("A2A_MAILBOX_A2A_PYTHON") {
        return PathBuf::from(python);
    }
    let _guard = VENV.lock().unwrap_or_else(|e| e.into_inner());
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("a2a-sdk-venv");
    let python = venv.join("bin/python");
    let wanted = std::fs::read_to_string(Path::new(SCRIPTS).join("requirements.txt"))
        .expect("scripts/a2a-sdk/requirements.txt");
    let stamp = venv.join("requirements.stamp");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) && python.exists() {
        return python;
    }
    let _ = std::fs::remove_dir_all(&venv);
    run(
        Command::new("python3").args(["-m", "venv"]).arg(&venv),
        "python3 -m venv (Python >= 3.10 with venv is needed)",
    );
    run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(Path::new(SCRIPTS).join("requirements.txt")),
        "pip install -r scripts/a2a-sdk/requirements.txt",
    );
    std::fs::write(&stamp, wanted).expect("write the stamp");
    python
}

both_engines!(the_reference_client_sends_polls_replays_and_cancels);
async fn the_reference_client_sends_polls_replays_and_cancels(app: TestApp) {
    let python = tokio::task::spawn_blocking(sdk_python).await.unwrap();
    let alice = app.token("alice", json!(["a2a.send.bob"]));
    let bob = app.token("bob", json!(["a2a.respond.alice"]));
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let mut cmd = Command::new(&python);
        cmd.arg(Path::new(SCRIPTS).join("sdk_e2e.py")).args([
            &app.address,
            binding,
            &alice,
            &bob,
            "bob",
        ]);
        tokio::task::spawn_blocking(move || run(&mut cmd, "the a2a-sdk end-to-end script"))
            .await
            .unwrap();
    }
}
