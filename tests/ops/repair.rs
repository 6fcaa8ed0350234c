//! `POST /a2a/repair` (docs/contract.md#repair) and heartbeats.

mod posture;

use serde_json::{json, Value};

use super::{audit_rows, full_ops, idem_task, repair, send_and_lease};
use crate::common::{assert_error, queue_ids, task, TestApp};

async fn requeue_puts_the_task_at_the_end_and_its_next_lease_is_attempt_2(app: TestApp) {
    let ops = full_ops(&app);
    let first = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let (leased, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, first);
    let second = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let lease_id = lease["lease_id"].as_str().unwrap();

    let r = repair(
        &app,
        &ops,
        &first,
        "worker died",
        json!({"action": "requeue", "duplicate_risk": "operator_accepted", "lease_id": lease_id}),
    )
    .await;
    let b = r.expect(200);
    assert_eq!(b["kind"], "a2a_repaired", "{}", r.text);
    assert_eq!(
        b["outcome"],
        json!({"task_id": first, "action": "requeued", "state": "queued", "attempt": 1}),
        "{}",
        r.text
    );
    let s = app.status_ok(&first).await;
    assert_eq!(
        (s["state"].as_str(), s["attempt"].as_u64()),
        (Some("queued"), Some(1))
    );
    assert!(s["lease"].is_null(), "a requeued task has no lease: {s}");
    // The end of the queue: the task sent after it comes first now.
    let q = app.queue(&app.ops(), "?state=queued").await;
    assert_eq!(queue_ids(&q), vec![second.clone(), first.clone()]);
    let (id, _) = app.lease_some(&app.bob()).await;
    assert_eq!(id, second);
    let (id, lease2) = app.lease_some(&app.bob()).await;
    assert_eq!(id, first, "the requeued task keeps its id");
    assert_eq!(
        lease2["attempt"], 2,
        "the next lease increments the kept attempt counter"
    );
    assert_ne!(
        lease2["lease_id"].as_str(),
        Some(lease_id),
        "a new lease id"
    );

    let rows = audit_rows(&app, "a2a_repair_applied").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let k = &without_ended(&rows[0]["kind"], lease_id);
    assert_eq!(
        k,
        &json!({"type": "a2a_repair_applied", "task_id": first, "action": "requeue",
                "reason": "worker died", "lease_id": lease_id,
                "duplicate_risk": "operator_accepted", "attempt": 1}),
    );
    assert_eq!(rows[0]["issuer"], "ops");
}
both_engines!(requeue_puts_the_task_at_the_end_and_its_next_lease_is_attempt_2);

async fn a_stale_lease_id_is_refused_and_changes_nothing(app: TestApp) {
    let ops = full_ops(&app);
    let (id, _lease) = send_and_lease(&app, &task("alice", "bob")).await;
    let before = app.status_ok(&id).await;
    let stale = uuid::Uuid::new_v4().to_string();
    for command in [
        json!({"action": "requeue", "duplicate_risk": "idempotent", "lease_id": stale}),
        json!({"action": "force_error", "message": "stop", "lease_id": stale}),
    ] {
        let r = repair(&app, &ops, &id, "stale", command).await;
        assert_error(&r, 409, "lease_mismatch");
        assert!(
            r.text.contains(&stale),
            "the message names the stale lease: {}",
            r.text
        );
    }
    assert_eq!(
        app.status_ok(&id).await,
        before,
        "a refused repair changed the task"
    );
    assert!(audit_rows(&app, "a2a_repair_applied").await.is_empty());
}
both_engines!(a_stale_lease_id_is_refused_and_changes_nothing);

async fn repair_checks_run_in_the_contract_order(app: TestApp) {
    let unknown = uuid::Uuid::new_v4().to_string();
    let requeue = json!({"action": "requeue", "duplicate_risk": "idempotent"});
    // 1. capability, even for unknown ids
    let no_caps = app.token("ops", json!(["a2a.operator"]));
    assert_error(
        &repair(&app, &no_caps, &unknown, "r", requeue.clone()).await,
        403,
        "capability_missing",
    );
    let force = json!({"action": "force_error", "message": "m"});
    let only_requeue = app.token("ops", json!(["a2a.operator", "a2a.repair.requeue"]));
    assert_error(
        &repair(&app, &only_requeue, &unknown, "r", force.clone()).await,
        403,
        "capability_missing",
    );
    // 2. visible: unknown and invisible ids answer alike
    let dave = app.token("dave", json!(["a2a.repair.requeue"]));
    assert_error(
        &repair(&app, &dave, &unknown, "r", requeue.clone()).await,
        404,
        "not_found",
    );
    let (id, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    assert_error(
        &repair(&app, &dave, &id, "r", requeue.clone()).await,
        404,
        "not_found",
    );
    // 3. in flight
    let ops = full_ops(&app);
    let queued = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    assert_error(
        &repair(&app, &ops, &queued, "r", requeue.clone()).await,
        409,
        "not_in_flight",
    );
    // 4. scope, before the blank-reason check
    let scoped = app.token(
        "ops",
        json!(["a2a.operator", {"action": "a2a.repair.requeue", "scope": {"task_id": queued}}]),
    );
    assert_error(
        &repair(&app, &scoped, &id, "", requeue.clone()).await,
        403,
        "capability_scope_mismatch",
    );
    let idem_only = app.token(
        "ops",
        json!(["a2a.operator", {"action": "a2a.repair.requeue", "scope": {"duplicate_risk": "idempotent"}}]),
    );
    let accepted = json!({"action": "requeue", "duplicate_risk": "operator_accepted"});
    assert_error(
        &repair(&app, &idem_only, &id, "r", accepted).await,
        403,
        "capability_scope_mismatch",
    );
    let lease_scoped = app.token(
        "ops",
        json!(["a2a.operator", {"action": "a2a.repair.requeue", "scope": {"lease_id": lease}}]),
    );
    // A scope naming a field the request lacks (no lease_id given) does not admit it.
    assert_error(
        &repair(&app, &lease_scoped, &id, "r", requeue.clone()).await,
        403,
        "capability_scope_mismatch",
    );
    // 5. non-blank reason and message
    assert_error(
        &repair(&app, &ops, &id, "  ", requeue.clone()).await,
        400,
        "invalid_request",
    );
    assert_error(
        &repair(
            &app,
            &ops,
            &id,
            "r",
            json!({"action": "force_error", "message": " "}),
        )
        .await,
        400,
        "invalid_request",
    );
    // Malformed commands
    for bad in [
        json!({"action": "requeue"}),
        json!({"action": "requeue", "duplicate_risk": "maybe"}),
        json!({"action": "explode"}),
        json!({"action": "force_error"}),
    ] {
        assert_error(
            &repair(&app, &ops, &id, "r", bad).await,
            400,
            "invalid_request",
        );
    }
    assert_eq!(
        app.status_ok(&id).await["state"],
        "in_flight",
        "refusals changed the task"
    );
    assert!(audit_rows(&app, "a2a_repair_applied").await.is_empty());
}
both_engines!(repair_checks_run_in_the_contract_order);

async fn idempotent_posture_scoped_grant_admits_idempotent_requeues(app: TestApp) {
    let (id, lease) = send_and_lease(&app, &idem_task("k")).await;
    let tok = app.token(
        "ops",
        json!(["a2a.operator", {"action": "a2a.repair.requeue", "scope": {"duplicate_risk": "idempotent", "peer": "bob"}}]),
    );
    let r = repair(
        &app,
        &tok,
        &id,
        "retry",
        json!({"action": "requeue", "duplicate_risk": "idempotent", "lease_id": lease}),
    )
    .await;
    r.expect(200);
}
both_engines!(idempotent_posture_scoped_grant_admits_idempotent_requeues);

async fn force_error_posts_an_error_result_the_sender_drains(app: TestApp) {
    let ops = full_ops(&app);
    let (id, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    let r = repair(
        &app,
        &ops,
        &id,
        "poison",
        json!({"action": "force_error", "message": "gave up", "lease_id": lease}),
    )
    .await;
    let b = r.expect(200);
    assert_eq!(
        b["outcome"],
        json!({"task_id": id, "action": "forced_error", "state": "result_pending", "attempt": 1,
               "result": {"task_id": id, "status": "error", "content": [], "error_message": "gave up"}}),
        "{}",
        r.text
    );
    let s = app.status_ok(&id).await;
    assert_eq!(s["state"], "result_pending");
    assert!(s["lease"].is_null());
    let drained = app
        .drain(&app.alice())
        .await
        .expect("alice drains the forced error");
    assert_eq!(
        drained,
        json!({"task_id": id, "status": "error", "content": [], "error_message": "gave up"})
    );
    assert_eq!(app.status_ok(&id).await["state"], "resolved");
    // The former lessee's late answer does not overwrite it.
    let late = app
        .post_result(
            &app.bob(),
            &json!({"task_id": id, "status": "ok", "lease_id": lease}),
        )
        .await;
    assert!(
        matches!(late.status, 403 | 409),
        "late result must be refused: {}",
        late.text
    );
    let rows = audit_rows(&app, "a2a_repair_applied").await;
    assert_eq!(
        without_ended(&rows[0]["kind"], &lease),
        json!({"type": "a2a_repair_applied", "task_id": id, "action": "force_error",
               "reason": "poison", "lease_id": lease, "duplicate_risk": null, "attempt": 1})
    );
}
both_engines!(force_error_posts_an_error_result_the_sender_drains);

async fn force_error_results_are_not_cached(app: TestApp) {
    let ops = full_ops(&app);
    let (id, _) = send_and_lease(&app, &idem_task("same-work")).await;
    repair(
        &app,
        &ops,
        &id,
        "r",
        json!({"action": "force_error", "message": "x"}),
    )
    .await
    .expect(200);
    // A new task with the same cache key is queued, not answered from the cache.
    let again = app.send(&app.alice(), &idem_task("same-work")).await;
    let b = again.expect(201);
    assert!(
        b.get("replayed_from").is_none(),
        "force_error result was cached: {}",
        again.text
    );
    let (leased, _) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, b["task_id"].as_str().unwrap());
}
both_engines!(force_error_results_are_not_cached);

async fn heartbeat_checks_visibility_state_lessee_and_lease(app: TestApp) {
    let (id, lease) = send_and_lease(&app, &task("alice", "bob")).await;
    let hb = |tok: String, id: String, lease: String| {
        let app = app.api.clone();
        async move {
            app.post(
                &format!("/a2a/tasks/{id}/heartbeat"),
                &tok,
                &json!({"lease_id": lease}),
            )
            .await
        }
    };
    let unknown = uuid::Uuid::new_v4().to_string();
    assert_error(
        &hb(app.bob(), unknown, lease.clone()).await,
        404,
        "not_found",
    );
    assert_error(
        &hb(app.carol(), id.clone(), lease.clone()).await,
        404,
        "not_found",
    );
    assert_error(
        &hb(app.alice(), id.clone(), lease.clone()).await,
        403,
        "not_lessee",
    );
    assert_error(
        &hb(app.bob(), id.clone(), uuid::Uuid::new_v4().to_string()).await,
        409,
        "lease_mismatch",
    );
    let queued = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    assert_error(
        &hb(app.bob(), queued, lease.clone()).await,
        409,
        "not_in_flight",
    );
    let r = app
        .post(
            &format!("/a2a/tasks/{id}/heartbeat"),
            &app.bob(),
            &json!({"lease_id": "nope"}),
        )
        .await;
    assert_error(&r, 400, "invalid_request");
    let r = app
        .post(
            "/a2a/tasks/not-a-uuid/heartbeat",
            &app.bob(),
            &json!({"lease_id": lease}),
        )
        .await;
    assert_error(&r, 400, "invalid_request");
}
both_engines!(heartbeat_checks_visibility_state_lessee_and_lease);

/// A repair row without its `ended` lease, once that is checked: bob's lease `lease_id`, from
/// its start to its last heartbeat.
fn without_ended(kind: &Value, lease_id: &str) -> Value {
    let mut k = kind.clone();
    let ended = k
        .as_object_mut()
        .unwrap()
        .remove("ended")
        .expect("the lease it ended");
    assert_eq!(
        (ended["lessee"].as_str(), ended["lease_id"].as_str()),
        (Some("bob"), Some(lease_id)),
        "{ended}"
    );
    let (from, beat) = (
        ended["leased_at_ms"].as_i64(),
        ended["heartbeat_at_ms"].as_i64(),
    );
    assert!(from > Some(0) && beat >= from, "{ended}");
    k
}
