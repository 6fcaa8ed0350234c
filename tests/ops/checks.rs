//! The `capability_check` rows of repairs, compactions and enabled retry scans (docs/contract.md#audit).

use serde_json::{json, Value};

use super::{audit_rows, full_ops, repair, send_and_lease};
use crate::common::{assert_error, task, AppConfig, TestApp};

fn scheduler_on() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_AUTO_RETRY_SCHEDULER", "1")
        .env("A2A_MAILBOX_AUTO_RETRY_MIN_LEASE_AGE_MS", "0")
}

/// The `capability_check` rows of one scope id, oldest first.
async fn checks(app: &TestApp, scope_id: &str) -> Vec<Value> {
    let mut rows: Vec<Value> = audit_rows(app, "capability_check")
        .await
        .into_iter()
        .filter(|r| r["kind"]["scope_id"] == scope_id)
        .collect();
    rows.reverse();
    rows
}

fn check(scope_id: &str, required: &[&str], missing: &[&str]) -> Value {
    json!({"type": "capability_check", "scope_id": scope_id, "required_actions": required,
           "missing_actions": missing, "passed": missing.is_empty()})
}

async fn a_repair_records_its_check_passed_or_failed_but_not_for_a_404(app: TestApp) {
    let (id, _) = send_and_lease(&app, &task("alice", "bob")).await;
    let scope = format!("a2a-repair:{id}");
    let requeue = json!({"action": "requeue", "duplicate_risk": "operator_accepted"});
    // Without the action.
    let weak = app.token("weak", json!(["a2a.operator"]));
    assert_error(
        &repair(&app, &weak, &id, "stuck", requeue.clone()).await,
        403,
        "capability_missing",
    );
    // With the action, but a scope that does not admit the task.
    let scoped = app.token(
        "scoped",
        json!(["a2a.operator", {"action": "a2a.repair.requeue", "scope": {"peer": "carol"}}]),
    );
    assert_error(
        &repair(&app, &scoped, &id, "stuck", requeue.clone()).await,
        403,
        "capability_scope_mismatch",
    );
    let ops = full_ops(&app);
    repair(&app, &ops, &id, "stuck", requeue.clone())
        .await
        .expect(200);
    let rows = checks(&app, &scope).await;
    let issuers: Vec<&Value> = rows.iter().map(|r| &r["issuer"]).collect();
    assert_eq!(issuers, [&json!("weak"), &json!("scoped"), &json!("ops")]);
    let kinds: Vec<&Value> = rows.iter().map(|r| &r["kind"]).collect();
    let action = ["a2a.repair.requeue"];
    assert_eq!(
        kinds,
        [
            &check(&scope, &action, &action),
            &check(&scope, &action, &action),
            &check(&scope, &action, &[]),
        ]
    );
    // A repair that answers 404 writes none: ids can't be probed.
    let unknown = uuid::Uuid::new_v4().to_string();
    let r = repair(&app, &ops, &unknown, "stuck", requeue).await;
    assert_error(&r, 404, "not_found");
    assert_eq!(
        checks(&app, &format!("a2a-repair:{unknown}")).await,
        [] as [Value; 0]
    );
}
both_engines!(a_repair_records_its_check_passed_or_failed_but_not_for_a_404);

async fn a_compaction_records_its_check(app: TestApp) {
    assert_error(
        &app.post("/a2a/compact", &app.ops(), &json!({})).await,
        403,
        "capability_missing",
    );
    app.post("/a2a/compact", &full_ops(&app), &json!({}))
        .await
        .expect(200);
    let kinds: Vec<Value> = checks(&app, "a2a:compact")
        .await
        .into_iter()
        .map(|r| r["kind"].clone())
        .collect();
    let action = ["a2a.compact"];
    assert_eq!(
        kinds,
        [
            check("a2a:compact", &action, &action),
            check("a2a:compact", &action, &[])
        ]
    );
}
both_engines!(a_compaction_records_its_check);

async fn an_enabled_scan_records_one_check_and_a_dry_run_none(app: TestApp) {
    send_and_lease(&app, &task("alice", "bob")).await;
    let ops = full_ops(&app);
    let enabled = json!({"enabled": true, "min_lease_age_ms": 0});
    app.post("/a2a/retry-stale", &ops, &json!({}))
        .await
        .expect(200);
    // This config enables the scheduler: a tick without a2a.repair.requeue is refused, and its
    // check recorded as failed. The dry run above wrote none.
    assert_error(
        &app.post("/a2a/scheduler/tick", &app.ops(), &json!(null))
            .await,
        403,
        "capability_missing",
    );
    let actions = ["a2a.operator", "a2a.repair.requeue"];
    let scope = "a2a-auto-retry";
    let kinds =
        |rows: Vec<Value>| -> Vec<Value> { rows.into_iter().map(|r| r["kind"].clone()).collect() };
    assert_eq!(
        kinds(checks(&app, scope).await),
        [check(scope, &actions, &["a2a.repair.requeue"])]
    );
    app.post("/a2a/retry-stale", &ops, &enabled)
        .await
        .expect(200);
    app.post("/a2a/scheduler/tick", &ops, &json!(null))
        .await
        .expect(200);
    let passed = check(scope, &actions, &[]);
    assert_eq!(
        kinds(checks(&app, scope).await)[1..],
        [passed.clone(), passed],
        "one row per scan"
    );
    // Without a2a.operator an enabled scan is refused, and its check recorded.
    let requeuer = app.token("requeuer", json!(["a2a.repair.requeue"]));
    assert_error(
        &app.post("/a2a/retry-stale", &requeuer, &enabled).await,
        403,
        "capability_missing",
    );
    let rows = checks(&app, scope).await;
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[3]["issuer"], "requeuer");
    assert_eq!(rows[3]["kind"], check(scope, &actions, &["a2a.operator"]));
}
both_engines!(
    an_enabled_scan_records_one_check_and_a_dry_run_none,
    config = scheduler_on
);
