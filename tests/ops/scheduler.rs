//! `POST /a2a/scheduler/tick` and the in-process timer (docs/contract.md#retry-gate).

use std::time::{Duration, Instant};

use serde_json::json;

use super::{audit_rows, idem_task, send_and_lease, unsafe_task};
use crate::common::{assert_error, AppConfig, TestApp};

fn scheduler_on() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_AUTO_RETRY_SCHEDULER", "1")
        .env("A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS", "0")
        .env("A2A_MAILBOX_AUTO_RETRY_MAX_REQUEUES", "5")
}

fn timer_on() -> AppConfig {
    scheduler_on().env("A2A_MAILBOX_AUTO_RETRY_INTERVAL_MS", "100")
}

async fn an_unconfigured_tick_is_a_dry_run_with_a_scan_row(app: TestApp) {
    let (id, _) = send_and_lease(&app, &idem_task("k")).await;
    let tok = app.token("timer", json!(["a2a.operator"]));
    let r = app.post("/a2a/scheduler/tick", &tok, &json!(null)).await;
    let b = r.expect(200);
    assert_eq!(b["kind"], "a2a_auto_retried", "{}", r.text);
    assert_eq!(b["report"]["policy"]["enabled"], false);
    assert_eq!(
        b["report"]["skipped"],
        json!([{"task_id": id, "reason": "disabled", "attempt": 1}])
    );
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");
    let rows = audit_rows(&app, "a2a_auto_retry_scheduler_scan").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["issuer"], "timer");
    assert_eq!(
        rows[0]["kind"],
        json!({"type": "a2a_auto_retry_scheduler_scan", "enabled": false, "considered": 1,
               "requeued": 0, "skipped": 1, "skipped_by_reason": {"disabled": 1},
               "bounds": {"min_lease_age_ms": 300000, "max_attempts": 3, "max_requeues": 1, "scan_limit": 100},
               "coalesced": false, "error": null})
    );
    // Only operators may tick.
    assert_error(
        &app.post("/a2a/scheduler/tick", &app.bob(), &json!(null))
            .await,
        403,
        "capability_missing",
    );
}
both_engines!(an_unconfigured_tick_is_a_dry_run_with_a_scan_row);

async fn an_enabled_tick_requeues_with_the_configured_bounds(app: TestApp) {
    let (idem, _) = send_and_lease(&app, &idem_task("k")).await;
    let (unsafe_id, _) = send_and_lease(&app, &unsafe_task("u")).await;
    // Without a2a.repair.requeue the tick is refused, and the scan row says why.
    let weak = app.token("timer", json!(["a2a.operator"]));
    assert_error(
        &app.post("/a2a/scheduler/tick", &weak, &json!(null)).await,
        403,
        "capability_missing",
    );
    let rows = audit_rows(&app, "a2a_auto_retry_scheduler_scan").await;
    assert_eq!(rows.len(), 1);
    assert!(
        rows[0]["kind"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("a2a.repair.requeue")),
        "{rows:?}"
    );
    assert_eq!(app.status_ok(&idem).await["state"], "in_flight");

    let tok = app.token("timer", json!(["a2a.operator", "a2a.repair.requeue"]));
    let r = app.post("/a2a/scheduler/tick", &tok, &json!(null)).await;
    let b = r.expect(200);
    assert_eq!(b["report"]["policy"]["enabled"], true);
    assert_eq!(
        b["report"]["requeued"][0]["task_id"],
        idem.as_str(),
        "{}",
        r.text
    );
    assert_eq!(app.status_ok(&idem).await["state"], "queued");
    assert_eq!(app.status_ok(&unsafe_id).await["state"], "in_flight");
    let rows = audit_rows(&app, "a2a_auto_retry_scheduler_scan").await;
    let k = &rows[0]["kind"];
    assert_eq!(
        (
            k["enabled"].clone(),
            k["requeued"].clone(),
            k["error"].clone()
        ),
        (json!(true), json!(1), json!(null))
    );
    assert_eq!(
        k["skipped_by_reason"],
        json!({"unsafe_duplicate_safety": 1})
    );
    assert_eq!(k["bounds"]["max_requeues"], 5);
}
both_engines!(
    an_enabled_tick_requeues_with_the_configured_bounds,
    config = scheduler_on
);

async fn the_in_process_timer_requeues_a_stale_idempotent_lease_and_leaves_an_unsafe_one(
    app: TestApp,
) {
    // The unsafe task first: once the idempotent one is leased the timer may requeue it at once.
    let (unsafe_id, _) = send_and_lease(&app, &unsafe_task("u")).await;
    let (idem, _) = send_and_lease(&app, &idem_task("k")).await;
    let start = Instant::now();
    loop {
        if app.status_ok(&idem).await["state"] == "queued" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the timer never requeued the task"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(app.status_ok(&unsafe_id).await["state"], "in_flight");
    let rows = audit_rows(&app, "a2a_repair_applied").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["issuer"], "a2a-mailbox-scheduler");
    assert_eq!(rows[0]["kind"]["action"], "auto_requeue");
    assert!(!audit_rows(&app, "a2a_auto_retry_scheduler_scan")
        .await
        .is_empty());
}
both_engines!(
    the_in_process_timer_requeues_a_stale_idempotent_lease_and_leaves_an_unsafe_one,
    config = timer_on
);
