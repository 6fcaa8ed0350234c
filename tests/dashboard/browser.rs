//! The dashboard in a real browser: Debian's Chromium, headless, driven by selenium
//! (`scripts/dashboard/browser_e2e.py`). Screenshots of the overview and of the stale-lease page
//! are saved under `target/dashboard-screenshots/`.

use std::path::Path;
use std::process::Command;

use super::web::{fan_out, in_flight, operator};
use crate::common::python::{python_for, run_checked, scripts};
use crate::common::*;

both_engines!(an_operator_repairs_stale_leases_in_chromium);
async fn an_operator_repairs_stale_leases_in_chromium(app: TestApp) {
    let python =
        tokio::task::spawn_blocking(|| python_for("dashboard", "A2A_MAILBOX_BROWSER_PYTHON"))
            .await
            .unwrap();
    let (first, _) = in_flight(&app).await;
    let (second, _) = in_flight(&app).await;
    let (third, _) = in_flight(&app).await;
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dashboard-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let engine = format!("{:?}", app.engine).to_lowercase();
    let mut cmd = Command::new(&python);
    cmd.arg(scripts("dashboard").join("browser_e2e.py")).args([
        app.address.as_str(),
        &operator(&app),
        &app.alice(),
        &first,
        &second,
        &third,
        shots.to_str().unwrap(),
        &engine,
    ]);
    tokio::task::spawn_blocking(move || run_checked(&mut cmd, "the dashboard in Chromium"))
        .await
        .unwrap();
    for page in ["overview", "leases"] {
        let png = shots.join(format!("dashboard-{page}-{engine}.png"));
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
        assert!(bytes.starts_with(b"\x89PNG"), "{} is a PNG", png.display());
    }
}

/// Sends `alice → agent` and has the agent lease it: the task id and the lease.
async fn leased_by(app: &TestApp, agent: &str) -> (String, serde_json::Value) {
    let alice = app.token("alice", serde_json::json!(["a2a.send.*"]));
    let id = app.send_ok(&alice, &task("alice", agent)).await;
    let worker = app.token(agent, serde_json::json!(["a2a.respond.alice"]));
    let (leased, lease) = app.lease_some(&worker).await;
    assert_eq!(leased, id);
    (id, lease)
}

both_engines!(every_page_reads_well_in_chromium);
async fn every_page_reads_well_in_chromium(app: TestApp) {
    use serde_json::json;
    let python =
        tokio::task::spawn_blocking(|| python_for("dashboard", "A2A_MAILBOX_BROWSER_PYTHON"))
            .await
            .unwrap();
    let ops = operator(&app);
    // 250 passing capability checks first (a fan-out batch): the audit page has older rows.
    fan_out(&app, 250).await;
    // A hundred and one leases of bob's (two pages), and three of kbd's that the keyboard
    // repairs.
    let mut bobs = Vec::new();
    for _ in 0..101 {
        bobs.push(in_flight(&app).await.0);
    }
    let mut keyboard = Vec::new();
    for _ in 0..3 {
        keyboard.push(leased_by(&app, "kbd").await.0);
    }
    // A task still queued, and one answered (its result pending).
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let queued = app.send_ok(&alice, &task("alice", "carol")).await;
    let (answered, _) = leased_by(&app, "erin").await;
    let erin = app.token("erin", json!(["a2a.respond.alice"]));
    app.post_result(&erin, &result(&answered, "ok", "done"))
        .await
        .expect(201);
    // Two children of the queued task: one answered with an error, one still queued.
    let mut child = task("alice", "erin");
    child["parent"] = json!(queued);
    let failed = app.send_ok(&alice, &child).await;
    let (leased, _) = app.lease_some(&erin).await;
    assert_eq!(leased, failed);
    app.post_result(&erin, &result(&failed, "error", "no such account"))
        .await
        .expect(201);
    let mut child = task("alice", "carol");
    child["parent"] = json!(queued);
    app.send_ok(&alice, &child).await;
    // Two attempts: leased, requeued by an operator, leased again and answered with an error.
    let (timeline, _) = leased_by(&app, "frank").await;
    let repair = json!({"task_id": timeline, "reason": "worker host lost",
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted"}});
    app.post("/a2a/repair", &ops, &repair).await.expect(200);
    let frank = app.token("frank", json!(["a2a.respond.alice"]));
    let (again, _) = app.lease_some(&frank).await;
    assert_eq!(again, timeline);
    app.post_result(&frank, &result(&timeline, "error", "the ledger is locked"))
        .await
        .expect(201);
    // A queued task its sender canceled, saying why.
    let canceled = app.send_ok(&alice, &task("alice", "carol")).await;
    let why = json!({"reason": "customer withdrew"});
    app.post(&format!("/a2a/tasks/{canceled}/cancel"), &alice, &why)
        .await
        .expect(200);
    // A send its token does not allow: a refused capability check in the audit feed.
    let r = app.send(&app.carol(), &task("carol", "bob")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let expired = app.jwt(
        &json!({"sub": "ops", "exp": now_ms() / 1000 - 3600, "caps": ["a2a.operator"]}),
        jsonwebtoken::Algorithm::HS256,
    );
    let engine = format!("{:?}", app.engine).to_lowercase();
    let shots = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/dashboard-screenshots")
        .join(&engine);
    std::fs::create_dir_all(&shots).unwrap();
    let fixtures = json!({
        "base": app.address, "ops": ops, "expired": expired, "name": engine,
        "shots": shots, "leases": 104, "canceled": canceled, "lessee": "kbd", "keyboard": keyboard,
        "queued": queued, "answered": answered, "timeline": timeline, "in_flight_task": bobs[0], "row_reason_task": bobs[1],
    });
    let file = shots.join("fixtures.json");
    std::fs::write(&file, fixtures.to_string()).unwrap();
    let mut cmd = Command::new(&python);
    cmd.arg(scripts("dashboard").join("pages_e2e.py"))
        .arg(&file);
    tokio::task::spawn_blocking(move || run_checked(&mut cmd, "the dashboard's pages in Chromium"))
        .await
        .unwrap();
    for page in [
        "login", "overview", "leases", "tasks", "task", "audit", "retry",
    ] {
        for px in [1400, 800] {
            let png = shots.join(format!("{page}-{px}.png"));
            let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
            assert!(bytes.starts_with(b"\x89PNG"), "{} is a PNG", png.display());
        }
    }
}
