//! The duplicate-risk posture of a requeue, its place among the checks, and the length of a
//! reason or message.

use serde_json::{json, Value};

use super::super::{audit_rows, full_ops, idem_task, repair, send_and_lease, unsafe_task};
use crate::common::{assert_error, task, TestApp};

fn requeue(risk: &str) -> Value {
    json!({"action": "requeue", "duplicate_risk": risk})
}

/// The capability checks of repairs of `id`, oldest first: whether each passed.
async fn checks_of(app: &TestApp, id: &str) -> Vec<bool> {
    let scope = format!("a2a-repair:{id}");
    let mut rows: Vec<bool> = audit_rows(app, "capability_check")
        .await
        .iter()
        .filter(|r| r["kind"]["scope_id"] == scope.as_str())
        .map(|r| r["kind"]["passed"].as_bool().unwrap())
        .collect();
    rows.reverse();
    rows
}

async fn only_a_task_declared_idempotent_with_a_key_is_requeued_as_idempotent(app: TestApp) {
    let ops = full_ops(&app);
    // Not declared at all, and declared unsafe (with a key): the operator cannot call them safe.
    for t in [task("alice", "bob"), unsafe_task("u-1")] {
        let (id, lease) = send_and_lease(&app, &t).await;
        let before = app.status_ok(&id).await;
        let mut guarded = requeue("idempotent");
        guarded["lease_id"] = json!(lease);
        for command in [requeue("idempotent"), guarded] {
            let r = repair(&app, &ops, &id, "worker died", command).await;
            assert_error(&r, 409, "duplicate_risk_mismatch");
            assert!(
                r.text.contains("operator_accepted"),
                "the refusal says what to state instead: {}",
                r.text
            );
        }
        assert_eq!(
            app.status_ok(&id).await,
            before,
            "a refusal changed the task"
        );
        let applied = audit_rows(&app, "a2a_repair_applied").await;
        assert!(
            !applied.iter().any(|r| r["kind"]["task_id"] == id.as_str()),
            "{applied:?}"
        );
        // The request's capability check is kept, as for every refusal after the lookup.
        assert_eq!(checks_of(&app, &id).await, vec![true, true]);
        // Stating operator_accepted requeues it.
        let r = repair(&app, &ops, &id, "worker died", requeue("operator_accepted")).await;
        assert_eq!(r.expect(200)["outcome"]["state"], "queued", "{}", r.text);
        app.lease_some(&app.bob()).await;
        let r = repair(
            &app,
            &ops,
            &id,
            "done",
            json!({"action": "force_error", "message": "x"}),
        )
        .await;
        r.expect(200);
    }
    // Declared idempotent with a key: both postures are accepted.
    for risk in ["idempotent", "operator_accepted"] {
        let (id, _) = send_and_lease(&app, &idem_task(&format!("k-{risk}"))).await;
        let r = repair(&app, &ops, &id, "worker died", requeue(risk)).await;
        assert_eq!(r.expect(200)["outcome"]["state"], "queued", "{}", r.text);
        let rows = audit_rows(&app, "a2a_repair_applied").await;
        assert_eq!(rows[0]["kind"]["duplicate_risk"], risk);
        app.lease_some(&app.bob()).await;
        let r = repair(
            &app,
            &ops,
            &id,
            "done",
            json!({"action": "force_error", "message": "x"}),
        )
        .await;
        r.expect(200);
    }
}
both_engines!(only_a_task_declared_idempotent_with_a_key_is_requeued_as_idempotent);

async fn the_posture_is_checked_after_every_other_refusal(app: TestApp) {
    let ops = full_ops(&app);
    let (id, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    // Scope (403), before the posture.
    let scoped = app.token(
        "ops",
        json!(["a2a.operator", {"action": "a2a.repair.requeue", "scope": {"peer": "carol"}}]),
    );
    assert_error(
        &repair(&app, &scoped, &id, "r", requeue("idempotent")).await,
        403,
        "capability_scope_mismatch",
    );
    // Reason (400), before the posture.
    assert_error(
        &repair(&app, &ops, &id, " ", requeue("idempotent")).await,
        400,
        "invalid_request",
    );
    assert_error(
        &repair(&app, &ops, &id, &"r".repeat(1025), requeue("idempotent")).await,
        400,
        "invalid_request",
    );
    // The lease guard (409 lease_mismatch), before the posture.
    let mut stale = requeue("idempotent");
    stale["lease_id"] = json!(uuid::Uuid::new_v4());
    assert_error(
        &repair(&app, &ops, &id, "r", stale).await,
        409,
        "lease_mismatch",
    );
    // Then the posture.
    let mut current = requeue("idempotent");
    current["lease_id"] = json!(lease);
    assert_error(
        &repair(&app, &ops, &id, "r", current).await,
        409,
        "duplicate_risk_mismatch",
    );
    let s = app.status_ok(&id).await;
    assert_eq!(
        (s["state"].as_str(), s["attempt"].as_u64()),
        (Some("in_flight"), Some(1))
    );
    assert_eq!(
        s["lease"]["lease_id"],
        lease.as_str(),
        "the lease is untouched"
    );
    assert!(audit_rows(&app, "a2a_repair_applied").await.is_empty());
}
both_engines!(the_posture_is_checked_after_every_other_refusal);

async fn a_reason_or_message_is_at_most_1024_characters(app: TestApp) {
    let ops = full_ops(&app);
    let (id, _) = send_and_lease(&app, &task("alice", "bob")).await;
    let long = "é".repeat(1025);
    let longest = "é".repeat(1024);
    let force = |message: &str| json!({"action": "force_error", "message": message});
    for (reason, command) in [
        (long.as_str(), requeue("operator_accepted")),
        (long.as_str(), force("m")),
        ("r", force(&long)),
    ] {
        let r = repair(&app, &ops, &id, reason, command).await;
        assert_error(&r, 400, "invalid_request");
        assert!(
            r.text.contains("1024"),
            "the refusal names the limit: {}",
            r.text
        );
    }
    assert_eq!(app.status_ok(&id).await["state"], "in_flight");
    assert!(audit_rows(&app, "a2a_repair_applied").await.is_empty());
    // 1,024 characters (2,048 bytes) are accepted.
    let r = repair(&app, &ops, &id, &longest, requeue("operator_accepted")).await;
    r.expect(200);
    app.lease_some(&app.bob()).await;
    let r = repair(&app, &ops, &id, &longest, force(&longest)).await;
    r.expect(200);
    let rows = audit_rows(&app, "a2a_repair_applied").await;
    assert_eq!(rows.len(), 2);
    // A cancel's reason too.
    let other = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let cancel = |reason: &str| {
        let (app, other) = (app.api.clone(), other.clone());
        let body = json!({ "reason": reason });
        async move {
            app.post(&format!("/a2a/tasks/{other}/cancel"), &app.alice(), &body)
                .await
        }
    };
    let r = cancel(&long).await;
    assert_error(&r, 400, "invalid_request");
    assert_eq!(app.status_ok(&other).await["state"], "queued");
    let r = cancel(&longest).await;
    assert_eq!(r.expect(200)["cancellation"]["reason"], longest.as_str());
}
both_engines!(a_reason_or_message_is_at_most_1024_characters);
