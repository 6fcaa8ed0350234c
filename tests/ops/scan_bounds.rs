//! What no retry scan may do, whoever asks and however many run: a scoped `a2a.operator` is no
//! operator grant for any scan; every enabled scan, ticks and direct calls mixed, shares
//! `max_requeues`; and a requeue is fenced by the lease the scan examined.

use std::time::Duration;

use serde_json::{json, Value};
use sqlx::{Connection, Executor};
use tokio::task::JoinSet;

use super::{idem_task, send_and_lease};
use crate::common::{assert_error, now_ms, AppConfig, Engine, TestApp};

const MAX_REQUEUES: usize = 3;

/// An enabled scheduler whose ticks requeue any idle lease, [`MAX_REQUEUES`] at most per scan.
fn scheduler_on() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_AUTO_RETRY_SCHEDULER", "1")
        .env("A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS", "0")
        .env(
            "A2A_MAILBOX_AUTO_RETRY_MAX_REQUEUES",
            &MAX_REQUEUES.to_string(),
        )
}

/// Every task's state, attempt and lease, for "nothing changed" comparisons.
async fn states(app: &TestApp, ids: &[String]) -> Vec<(Value, Value, Value)> {
    let mut out = vec![];
    for id in ids {
        let s = app.status_ok(id).await;
        out.push((s["state"].clone(), s["attempt"].clone(), s["lease"].clone()));
    }
    out
}

async fn a_scoped_operator_grant_runs_no_scan_and_no_tick(app: TestApp) {
    let mut ids = vec![];
    for i in 0..3 {
        ids.push(send_and_lease(&app, &idem_task(&format!("s{i}"))).await.0);
    }
    let before = states(&app, &ids).await;
    let scoped = app.token(
        "billing-ops",
        json!([
            {"action": "a2a.operator", "scope": {"peer": "billing"}},
            "a2a.repair.requeue"
        ]),
    );
    for (path, body) in [
        ("/a2a/retry-stale", json!({})),
        (
            "/a2a/retry-stale",
            json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": 10}),
        ),
        ("/a2a/scheduler/tick", json!(null)),
    ] {
        let r = app.post(path, &scoped, &body).await;
        assert_error(&r, 403, "capability_scope_mismatch");
        assert!(
            !r.text.contains(&ids[0]),
            "{path} {body}: a refusal names no task: {}",
            r.text
        );
    }
    // Its scope naming the peer of every task changes nothing either.
    let bob_scoped = app.token(
        "bob-ops",
        json!([{"action": "a2a.operator", "scope": {"peer": "bob"}}, "a2a.repair.requeue"]),
    );
    let r = app
        .post(
            "/a2a/retry-stale",
            &bob_scoped,
            &json!({"enabled": true, "min_lease_age_ms": 0}),
        )
        .await;
    assert_error(&r, 403, "capability_scope_mismatch");
    assert_eq!(states(&app, &ids).await, before, "no lease was requeued");
}
both_engines!(
    a_scoped_operator_grant_runs_no_scan_and_no_tick,
    config = scheduler_on
);

async fn ten_enabled_scans_and_ticks_at_once_share_max_requeues(mut app: TestApp) {
    let other = app.second_instance().await;
    let mut ids = vec![];
    for i in 0..12 {
        ids.push(send_and_lease(&app, &idem_task(&format!("b{i}"))).await.0);
    }
    let ops = app.token("timer", json!(["a2a.operator", "a2a.repair.requeue"]));
    let policy = json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": MAX_REQUEUES});
    let mut set = JoinSet::new();
    for i in 0..12 {
        let api = if i % 2 == 0 {
            app.api.clone()
        } else {
            other.api.clone()
        };
        let (ops, policy) = (ops.clone(), policy.clone());
        set.spawn(async move {
            // Two of them ticks, the others direct calls: one bound for all.
            let r = match i {
                5 | 10 => api.post("/a2a/scheduler/tick", &ops, &json!(null)).await,
                _ => api.post("/a2a/retry-stale", &ops, &policy).await,
            };
            r.expect(200)["report"]["requeued"]
                .as_array()
                .unwrap()
                .len()
        });
    }
    let mut total = 0;
    while let Some(n) = set.join_next().await {
        total += n.expect("a scan panicked");
    }
    assert_eq!(total, MAX_REQUEUES, "every scan shares max_requeues");
    let queued = states(&app, &ids)
        .await
        .iter()
        .filter(|(s, _, _)| s == "queued")
        .count();
    assert_eq!(queued, MAX_REQUEUES);
}
both_engines!(
    ten_enabled_scans_and_ticks_at_once_share_max_requeues,
    config = scheduler_on
);

/// The task's heartbeat moved back by `ms` directly in the database, so its lease looks idle.
async fn age_lease(app: &TestApp, id: &str, ms: u64) {
    let sql =
        format!("UPDATE tasks SET heartbeat_at_ms = heartbeat_at_ms - {ms} WHERE id = '{id}'");
    match app.engine {
        Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            c.execute(sql.as_str()).await.unwrap();
        }
        Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            c.execute(sql.as_str()).await.unwrap();
        }
    }
}

async fn a_heartbeat_that_commits_during_a_scan_keeps_its_lease(app: TestApp) {
    let (id, lease) = send_and_lease(&app, &idem_task("fenced")).await;
    age_lease(&app, &id, 600_000).await;
    let ops = app.token("ops", json!(["a2a.operator", "a2a.repair.requeue"]));
    let policy = json!({"enabled": true, "min_lease_age_ms": 300_000});
    let heartbeat = format!(
        "UPDATE tasks SET heartbeat_at_ms = {} WHERE id = '{id}'",
        now_ms()
    );
    // A worker's heartbeat is in a transaction that holds the task's row when the scan starts.
    let report = match app.engine {
        Engine::Postgres => {
            let mut worker = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            worker.execute("BEGIN").await.unwrap();
            worker.execute(heartbeat.as_str()).await.unwrap();
            let scan = tokio::spawn({
                let (api, ops, policy) = (app.api.clone(), ops.clone(), policy.clone());
                async move { api.post("/a2a/retry-stale", &ops, &policy).await }
            });
            // The scan has read the idle lease and waits for the row: commit the heartbeat.
            let mut watcher = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            let waiting = "SELECT count(*) FROM pg_stat_activity \
                           WHERE datname = current_database() AND wait_event_type = 'Lock'";
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            loop {
                let (n,): (i64,) = sqlx::query_as(waiting)
                    .fetch_one(&mut watcher)
                    .await
                    .unwrap();
                if n > 0 {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the scan never waited"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            worker.execute("COMMIT").await.unwrap();
            scan.await.unwrap()
        }
        Engine::Sqlite => {
            // One writer: the scan cannot start until the heartbeat commits, and then reads it.
            let mut worker = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            worker.execute("BEGIN IMMEDIATE").await.unwrap();
            worker.execute(heartbeat.as_str()).await.unwrap();
            let scan = tokio::spawn({
                let (api, ops, policy) = (app.api.clone(), ops.clone(), policy.clone());
                async move { api.post("/a2a/retry-stale", &ops, &policy).await }
            });
            // Nothing outside the server shows that its writer waits: give it the time to.
            tokio::time::sleep(Duration::from_millis(300)).await;
            worker.execute("COMMIT").await.unwrap();
            scan.await.unwrap()
        }
    };
    let report = report.expect(200)["report"].clone();
    assert_eq!(report["requeued"], json!([]), "{report}");
    let status = app.status_ok(&id).await;
    assert_eq!(status["state"], "in_flight", "{status}");
    assert_eq!(status["lease"]["lease_id"], lease.as_str());
    // The worker still holds its lease: its result is accepted.
    let r = app
        .post_result(
            &app.bob(),
            &json!({"task_id": id, "status": "ok", "lease_id": lease}),
        )
        .await;
    r.expect(201);
}
both_engines!(a_heartbeat_that_commits_during_a_scan_keeps_its_lease);
