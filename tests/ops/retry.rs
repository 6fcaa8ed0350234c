//! `POST /a2a/retry-stale`: the bounded, opt-in retry gate (docs/contract.md#retry-gate).

use serde_json::{json, Value};

use super::{audit_rows, full_ops, idem_task, send_and_lease, unsafe_task};
use crate::common::{assert_error, task, Api, AppConfig, TestApp};

/// Enabled scans share one bound with every scan that started within the spacing (1 s by
/// default); these tests run scans one after another, each meant to run.
fn unspaced() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_AUTO_RETRY_SCHEDULER_MIN_SPACING_MS", "0")
}

async fn scan(api: &Api, token: &str, policy: Value) -> Value {
    let r = api.post("/a2a/retry-stale", token, &policy).await;
    let b = r.expect(200);
    assert_eq!(b["kind"], "a2a_auto_retried", "{}", r.text);
    b["report"].clone()
}

fn reasons(report: &Value) -> Vec<(String, String)> {
    report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["task_id"].as_str().unwrap().to_owned(),
                s["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn a_dry_run_changes_nothing_and_skips_everything_as_disabled(app: TestApp) {
    let (a, _) = send_and_lease(&app, &idem_task("k1")).await;
    let (b, _) = send_and_lease(&app, &unsafe_task("k2")).await;
    let before = (app.status_ok(&a).await, app.status_ok(&b).await);
    // `{}` is the default policy: a dry run. It needs only a2a.operator.
    let report = scan(&app, &app.ops(), json!({})).await;
    assert_eq!(
        report["policy"],
        json!({"enabled": false, "min_lease_age_ms": 300000, "max_attempts": 3,
               "max_requeues": 1, "scan_limit": 100})
    );
    assert_eq!(report["considered"], 2);
    assert_eq!(report["requeued"], json!([]));
    let mut got = reasons(&report);
    got.sort();
    let mut want = vec![
        (a.clone(), "disabled".to_owned()),
        (b.clone(), "disabled".to_owned()),
    ];
    want.sort();
    assert_eq!(got, want);
    let report = scan(&app, &app.ops(), json!({"min_lease_age_ms": 0})).await;
    assert!(reasons(&report).iter().all(|(_, r)| r == "disabled"));
    assert_eq!((app.status_ok(&a).await, app.status_ok(&b).await), before);
    assert!(audit_rows(&app, "a2a_repair_applied").await.is_empty());
}
both_engines!(a_dry_run_changes_nothing_and_skips_everything_as_disabled);

async fn the_gate_needs_the_operator_and_when_enabled_the_requeue_capability(app: TestApp) {
    let (a, _) = send_and_lease(&app, &idem_task("k")).await;
    let r = app.post("/a2a/retry-stale", &app.bob(), &json!({})).await;
    assert_error(&r, 403, "capability_missing");
    let r = app
        .post(
            "/a2a/retry-stale",
            &app.ops(),
            &json!({"enabled": true, "min_lease_age_ms": 0}),
        )
        .await;
    assert_error(&r, 403, "capability_missing");
    for bad in [
        json!({"scan_limit": 0}),
        json!({"enabled": "yes"}),
        json!({"max_attempts": -1}),
    ] {
        let r = app.post("/a2a/retry-stale", &full_ops(&app), &bad).await;
        assert_error(&r, 400, "invalid_request");
    }
    assert_eq!(app.status_ok(&a).await["state"], "in_flight");
}
both_engines!(the_gate_needs_the_operator_and_when_enabled_the_requeue_capability);

async fn only_stale_idempotent_tasks_with_keys_are_requeued(app: TestApp) {
    let ops = full_ops(&app);
    let (eligible, lease) = send_and_lease(&app, &idem_task("refund-1")).await;
    let (unsafe_id, _) = send_and_lease(&app, &unsafe_task("refund-2")).await;
    let (no_meta, _) = send_and_lease(&app, &task("alice", "bob")).await;

    // Young leases are left alone and say how old they are.
    let report = scan(
        &app,
        &ops,
        json!({"enabled": true, "min_lease_age_ms": 3_600_000}),
    )
    .await;
    assert_eq!(report["requeued"], json!([]));
    for s in report["skipped"].as_array().unwrap() {
        assert_eq!(s["reason"], "lease_too_young", "{report}");
        assert!(
            s["lease_age_ms"].as_u64().is_some(),
            "lease_too_young carries lease_age_ms: {report}"
        );
    }

    let report = scan(
        &app,
        &ops,
        json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": 10}),
    )
    .await;
    assert_eq!(report["considered"], 3);
    assert_eq!(
        report["requeued"],
        json!([{"task_id": eligible, "lease_id": lease, "attempt": 1, "idempotency_key": "refund-1"}])
    );
    let mut got = reasons(&report);
    got.sort();
    let mut want = vec![
        (unsafe_id.clone(), "unsafe_duplicate_safety".to_owned()),
        (no_meta.clone(), "missing_idempotency".to_owned()),
    ];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(app.status_ok(&unsafe_id).await["state"], "in_flight");
    assert_eq!(app.status_ok(&no_meta).await["state"], "in_flight");
    let s = app.status_ok(&eligible).await;
    assert_eq!(
        (s["state"].as_str(), s["attempt"].as_u64()),
        (Some("queued"), Some(1))
    );
    // Never a new task id: the same task is leased again with attempt 2.
    let (again, lease2) = app.lease_some(&app.bob()).await;
    assert_eq!(again, eligible);
    assert_eq!(lease2["attempt"], 2);

    let rows = audit_rows(&app, "a2a_repair_applied").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let k = &rows[0]["kind"];
    assert_eq!(k["action"], "auto_requeue");
    assert_eq!(k["duplicate_risk"], "idempotent");
    assert_eq!(k["task_id"], eligible.as_str());
    assert_eq!(k["lease_id"], lease.as_str());
    assert_eq!(k["attempt"], 1);
}
both_engines!(
    only_stale_idempotent_tasks_with_keys_are_requeued,
    config = unspaced
);

async fn bounds_max_attempts_max_requeues_and_scan_limit_hold(app: TestApp) {
    let ops = full_ops(&app);
    let mut ids = vec![];
    for i in 0..3 {
        ids.push(send_and_lease(&app, &idem_task(&format!("k{i}"))).await.0);
    }
    // scan_limit bounds what is looked at, oldest lease first.
    let report = scan(
        &app,
        &ops,
        json!({"enabled": true, "min_lease_age_ms": 0, "scan_limit": 1}),
    )
    .await;
    assert_eq!(report["considered"], 1);
    assert_eq!(
        report["requeued"][0]["task_id"],
        ids[0].as_str(),
        "oldest lease first"
    );
    // max_requeues: 1 → the second eligible task is skipped limit_reached.
    let report = scan(
        &app,
        &ops,
        json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": 1}),
    )
    .await;
    assert_eq!(report["considered"], 2);
    assert_eq!(report["requeued"].as_array().unwrap().len(), 1);
    assert_eq!(
        reasons(&report),
        vec![(ids[2].clone(), "limit_reached".to_owned())]
    );
    // Lease ids[0] again (attempt 2): max_attempts 2 stops it.
    let (id, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(id, ids[0]);
    assert_eq!(lease["attempt"], 2);
    let report = scan(
        &app,
        &ops,
        json!({"enabled": true, "min_lease_age_ms": 0, "max_attempts": 2, "max_requeues": 5}),
    )
    .await;
    let got = reasons(&report);
    assert!(
        got.contains(&(ids[0].clone(), "max_attempts_reached".to_owned())),
        "{report}"
    );
    assert_eq!(report["requeued"][0]["task_id"], ids[2].as_str());
}
both_engines!(
    bounds_max_attempts_max_requeues_and_scan_limit_hold,
    config = unspaced
);

async fn a_scope_that_does_not_admit_the_task_skips_it(app: TestApp) {
    let (id, _) = send_and_lease(&app, &idem_task("k")).await;
    let tok = app.token(
        "ops",
        json!(["a2a.operator", {"action": "a2a.repair.requeue", "scope": {"peer": "someone-else"}}]),
    );
    let report = scan(&app, &tok, json!({"enabled": true, "min_lease_age_ms": 0})).await;
    assert_eq!(
        reasons(&report),
        vec![(id.clone(), "capability_scope_mismatch".to_owned())]
    );
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");
}
both_engines!(a_scope_that_does_not_admit_the_task_skips_it);

async fn concurrent_scans_from_two_instances_requeue_each_task_once(mut app: TestApp) {
    let ops = full_ops(&app);
    let mut ids = vec![];
    for i in 0..6 {
        ids.push(send_and_lease(&app, &idem_task(&format!("c{i}"))).await.0);
    }
    let other = app.second_instance().await;
    let policy = json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": 100});
    let mut requeued: Vec<String> = vec![];
    // Several rounds of two scans fired at the same moment, one through each instance.
    for _ in 0..3 {
        let (a, b) = tokio::join!(
            scan(&app, &ops, policy.clone()),
            scan(&other, &ops, policy.clone())
        );
        for report in [a, b] {
            for r in report["requeued"].as_array().unwrap() {
                requeued.push(r["task_id"].as_str().unwrap().to_owned());
            }
        }
    }
    requeued.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(
        requeued, want,
        "every eligible task requeued exactly once in total"
    );
    assert_eq!(audit_rows(&app, "a2a_repair_applied").await.len(), 6);
    // Two concurrent scans never exceed max_requeues together.
    for id in &ids {
        assert_eq!(app.status_ok(id).await["state"], "queued");
    }
    let mut leased = vec![];
    while let Some((t, _)) = app.lease(&app.bob()).await {
        leased.push(t["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(leased.len(), 6);
    let (a, b) = tokio::join!(
        scan(
            &app,
            &ops,
            json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": 2})
        ),
        scan(
            &other,
            &ops,
            json!({"enabled": true, "min_lease_age_ms": 0, "max_requeues": 2})
        )
    );
    let total = a["requeued"].as_array().unwrap().len() + b["requeued"].as_array().unwrap().len();
    assert!(total >= 2, "at least one scan ran: {a} {b}");
    let overlapping = a["considered"] == 0 || b["considered"] == 0;
    if overlapping {
        assert_eq!(total, 2, "overlapping scans act as one: {a} {b}");
    }
}
both_engines!(
    concurrent_scans_from_two_instances_requeue_each_task_once,
    config = unspaced
);
