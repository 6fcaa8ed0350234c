//! Scheduler ticks coalesce across every instance on one database (docs/contract.md#retry-gate).

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::task::JoinSet;

use super::{audit_rows, idem_task, send_and_lease};
use crate::common::{now_ms, AppConfig, TestApp};

const MAX_REQUEUES: usize = 3;

/// An enabled scheduler that requeues any lease, ticks at least `spacing_ms` apart.
fn scheduler(spacing_ms: u64) -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_AUTO_RETRY_SCHEDULER", "1")
        .env("A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS", "0")
        .env(
            "A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS",
            &spacing_ms.to_string(),
        )
}

/// Ticks may run once a minute at most, each requeueing at most [`MAX_REQUEUES`].
fn one_tick_a_minute() -> AppConfig {
    scheduler(60_000).env(
        "A2A_MAILBOX_AUTO_RETRY_MAX_REQUEUES",
        &MAX_REQUEUES.to_string(),
    )
}

const SPACING_MS: u64 = 1500;

fn spaced() -> AppConfig {
    scheduler(SPACING_MS)
}

fn ticker(app: &TestApp) -> String {
    app.token("timer", json!(["a2a.operator", "a2a.repair.requeue"]))
}

/// A coalesced tick's report: nothing considered, nothing done.
fn assert_coalesced(report: &Value) {
    assert_eq!(report["coalesced"], true, "{report}");
    assert_eq!(report["considered"], 0, "{report}");
    assert_eq!(report["requeued"], json!([]), "{report}");
    assert_eq!(report["skipped"], json!([]), "{report}");
}

async fn ten_ticks_at_once_on_two_instances_requeue_at_most_max_requeues(mut app: TestApp) {
    let other = app.second_instance().await;
    let mut ids = Vec::new();
    for i in 0..(MAX_REQUEUES + 5) {
        ids.push(send_and_lease(&app, &idem_task(&format!("k{i}"))).await.0);
    }
    let tok = ticker(&app);
    let mut set = JoinSet::new();
    for i in 0..10 {
        let api = if i % 2 == 0 {
            app.api.clone()
        } else {
            other.api.clone()
        };
        let tok = tok.clone();
        set.spawn(async move {
            let r = api.post("/a2a/scheduler/tick", &tok, &json!(null)).await;
            r.expect(200)["report"].clone()
        });
    }
    let mut reports = Vec::new();
    while let Some(r) = set.join_next().await {
        reports.push(r.expect("a tick panicked"));
    }
    let (coalesced, ran): (Vec<&Value>, Vec<&Value>) =
        reports.iter().partition(|r| r["coalesced"] == true);
    coalesced.iter().for_each(|r| assert_coalesced(r));
    assert_eq!(
        ran.len(),
        1,
        "one tick runs, the others coalesce: {reports:?}"
    );
    assert_eq!(ran[0]["coalesced"], false);
    let requeued = ran[0]["requeued"].as_array().unwrap().len();
    assert_eq!(requeued, MAX_REQUEUES, "{reports:?}");

    let mut queued = 0;
    for id in &ids {
        if app.status_ok(id).await["state"] == "queued" {
            queued += 1;
        }
    }
    assert_eq!(queued, MAX_REQUEUES, "the coalesced ticks changed nothing");
    assert_eq!(
        audit_rows(&app, "a2a_repair_applied").await.len(),
        MAX_REQUEUES
    );
    let rows = audit_rows(&app, "a2a_auto_retry_scheduler_scan").await;
    assert_eq!(rows.len(), 10, "one scan row per tick");
    let coalesced_rows = rows
        .iter()
        .filter(|r| r["kind"]["coalesced"] == true)
        .inspect(|r| {
            assert_eq!(r["kind"]["considered"], 0, "{r}");
            assert_eq!(r["kind"]["requeued"], 0, "{r}");
            assert_eq!(r["kind"]["error"], Value::Null, "{r}");
        })
        .count();
    assert_eq!(coalesced_rows, 9, "{rows:?}");
}
both_engines!(
    ten_ticks_at_once_on_two_instances_requeue_at_most_max_requeues,
    config = one_tick_a_minute
);

async fn a_tick_within_the_spacing_is_coalesced_and_one_after_it_is_not(mut app: TestApp) {
    let other = app.second_instance().await;
    // Two stale tasks; a tick that runs requeues one (max_requeues 1), the oldest first.
    let (first, _) = send_and_lease(&app, &idem_task("k1")).await;
    let (second, _) = send_and_lease(&app, &idem_task("k2")).await;
    let tok = ticker(&app);
    let r = app.post("/a2a/scheduler/tick", &tok, &json!(null)).await;
    let report = r.expect(200)["report"].clone();
    // The first tick started before this instant.
    let first_started_by = now_ms();
    assert_eq!(report["coalesced"], false, "{report}");
    assert_eq!(report["requeued"][0]["task_id"], first.as_str());

    // Right after the first tick, on the other instance: coalesced, and it changes nothing.
    let r = other.post("/a2a/scheduler/tick", &tok, &json!(null)).await;
    let sent_at = now_ms();
    let report = r.expect(200)["report"].clone();
    assert!(
        sent_at < first_started_by + SPACING_MS,
        "the machine was too slow to tick within the spacing"
    );
    assert_coalesced(&report);
    assert_eq!(app.status_ok(&second).await["state"], "in_flight");

    // Once the spacing has passed since the first tick, a tick runs again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let report = loop {
        let sent_at = now_ms();
        let r = other.post("/a2a/scheduler/tick", &tok, &json!(null)).await;
        let report = r.expect(200)["report"].clone();
        if report["coalesced"] == false {
            break report;
        }
        assert_coalesced(&report);
        assert!(
            sent_at < first_started_by + SPACING_MS,
            "a tick sent after the spacing had passed was coalesced: {report}"
        );
        assert!(Instant::now() < deadline, "no tick ran again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        report["requeued"][0]["task_id"],
        second.as_str(),
        "{report}"
    );
    assert_eq!(app.status_ok(&second).await["state"], "queued");
}
both_engines!(
    a_tick_within_the_spacing_is_coalesced_and_one_after_it_is_not,
    config = spaced
);
