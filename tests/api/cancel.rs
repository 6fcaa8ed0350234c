//! Cancellation (docs/contract.md#cancellation): every row of its table, who may cancel, what the lessee hears, and
//! the race between a cancel and a result, on one instance and across two.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;

async fn cancel(api: &Api, token: &str, id: &str, body: &Value) -> Resp {
    api.post(&format!("/a2a/tasks/{id}/cancel"), token, body)
        .await
}

/// Audit rows of one slug as an operator sees them, newest first.
async fn audit_rows(api: &Api, kind: &str) -> Vec<Value> {
    let r = api
        .get(&format!("/audit/recent?limit=1000&kind={kind}"), &api.ops())
        .await;
    r.expect(200)["events"].as_array().unwrap().clone()
}

/// The `capability_check` rows of one cancel scope.
async fn cancel_checks(api: &Api, id: &str) -> Vec<Value> {
    let scope = format!("a2a-cancel:{id}");
    audit_rows(api, "capability_check")
        .await
        .into_iter()
        .filter(|r| r["kind"]["scope_id"] == json!(scope))
        .collect()
}

both_engines!(a_queued_task_is_canceled_and_never_leased);
async fn a_queued_task_is_canceled_and_never_leased(app: TestApp) {
    let alice = app.alice();
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let before = now_ms();
    let r = cancel(&app, &alice, &id, &json!({"reason": "no longer needed"})).await;
    let b = r.expect(200).clone();
    assert!(!r.replayed(), "a first cancel is not a replay: {}", r.text);
    assert_keys(&b, &["kind", "task_id", "cancellation"], "cancel answer");
    assert_eq!(b["kind"], "a2a_task_canceled");
    assert_eq!(b["task_id"], json!(id));
    let c = &b["cancellation"];
    assert_keys(
        c,
        &[
            "canceled_by",
            "reason",
            "previous_state",
            "lease_id",
            "canceled_at_ms",
        ],
        "cancellation",
    );
    assert_eq!(
        (
            &c["canceled_by"],
            &c["reason"],
            &c["previous_state"],
            &c["lease_id"]
        ),
        (
            &json!("alice"),
            &json!("no longer needed"),
            &json!("queued"),
            &Value::Null
        )
    );
    assert!(c["canceled_at_ms"].as_u64().unwrap() >= before);

    let s = app.status_ok(&id).await;
    assert_eq!(s["state"], "canceled");
    assert_eq!(s["cancellation"], *c);
    assert!(s["lease"].is_null() && s["result"].is_null(), "{s}");
    assert!(
        app.lease(&app.bob()).await.is_none(),
        "a canceled task was leased"
    );
    assert!(
        app.drain(&alice).await.is_none(),
        "a canceled task has no result"
    );
    app.assert_empty("after canceling the only task").await;
    let recent = app.get("/a2a/tasks/recent", &app.ops()).await;
    assert_eq!(recent.expect(200)["tasks"], json!([]));

    // Audited: the sender's check needs no action; the cancellation has its own row.
    let checks = cancel_checks(&app, &id).await;
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert_eq!(
        checks[0]["kind"],
        json!({"type": "capability_check", "scope_id": format!("a2a-cancel:{id}"),
               "required_actions": [], "missing_actions": [], "passed": true})
    );
    let rows = audit_rows(&app, "a2a_task_canceled").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["issuer"], "alice");
    assert_eq!(
        rows[0]["kind"],
        json!({"type": "a2a_task_canceled", "task_id": id, "previous_state": "queued",
               "lease_id": null, "reason": "no longer needed", "ended": null})
    );
}

both_engines!(an_in_flight_task_is_canceled_and_its_lessee_hears_task_canceled);
async fn an_in_flight_task_is_canceled_and_its_lessee_hears_task_canceled(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&bob).await;
    let lease_id = lease["lease_id"].as_str().unwrap().to_owned();

    // An empty body is allowed.
    let r = app
        .raw(
            Method::POST,
            &format!("/a2a/tasks/{id}/cancel"),
            Some(&format!("Bearer {alice}")),
            None,
            None,
        )
        .await;
    let c = r.expect(200)["cancellation"].clone();
    assert_eq!(c["previous_state"], "in_flight");
    assert_eq!(c["lease_id"], json!(lease_id));
    assert_eq!(c["reason"], Value::Null);
    let s = app.status_ok(&id).await;
    assert_eq!(s["state"], "canceled");
    assert!(s["lease"].is_null(), "the lease ended: {s}");
    assert!(app.queue(&app.ops(), "").await["tasks"] == json!([]));

    // The former lessee learns it on its next call, before any other check.
    let hb = app
        .post(
            &format!("/a2a/tasks/{id}/heartbeat"),
            &bob,
            &json!({"lease_id": lease_id}),
        )
        .await;
    assert_error(&hb, 409, "task_canceled");
    let mut res = result(&id, "ok", "done anyway");
    res["lease_id"] = json!(lease_id);
    assert_error(&app.post_result(&bob, &res).await, 409, "task_canceled");
    // Even without the capability to answer: the lessee hears it first.
    let no_caps = app.token("bob", json!([]));
    assert_error(&app.post_result(&no_caps, &res).await, 409, "task_canceled");
    assert!(
        app.drain(&alice).await.is_none(),
        "no result for a canceled task"
    );
    assert_eq!(app.status_ok(&id).await["state"], "canceled");

    // Repair and the retry gate find nothing in flight.
    let ops = app.token("ops", json!(["a2a.operator", "a2a.repair.requeue"]));
    let r = app
        .post(
            "/a2a/repair",
            &ops,
            &json!({"task_id": id, "reason": "stuck", "command":
                    {"action": "requeue", "duplicate_risk": "operator_accepted"}}),
        )
        .await;
    assert_error(&r, 409, "not_in_flight");
    assert_eq!(app.status_ok(&id).await["state"], "canceled");
}

both_engines!(canceling_again_replays_the_first_answer);
async fn canceling_again_replays_the_first_answer(app: TestApp) {
    let alice = app.alice();
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let first = cancel(&app, &alice, &id, &json!({"reason": "first"})).await;
    let first = first.expect(200).clone();
    clock_tick().await;
    for (who, body) in [
        (alice.clone(), json!({"reason": "second"})),
        (app.ops(), json!({})),
    ] {
        let again = cancel(&app, &who, &id, &body).await;
        assert_eq!(
            *again.expect(200),
            first,
            "a repeat answers the first answer"
        );
        assert!(again.replayed(), "{}", again.text);
    }
    assert_eq!(audit_rows(&app, "a2a_task_canceled").await.len(), 1);
    // Re-sending the task's id and body replays the send and does not revive it.
    let t = app.status_ok(&id).await["task"].clone();
    let r = app.send(&alice, &t).await;
    r.expect(200);
    assert!(r.replayed());
    assert_eq!(app.status_ok(&id).await["state"], "canceled");
    assert!(app.lease(&app.bob()).await.is_none());
}

both_engines!(an_answered_task_is_not_cancelable);
async fn an_answered_task_is_not_cancelable(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    app.lease_some(&bob).await;
    app.post_result(&bob, &result(&id, "ok", "done"))
        .await
        .expect(201);
    let r = cancel(&app, &alice, &id, &json!({})).await;
    assert_error(&r, 409, "not_cancelable");
    assert_eq!(app.status_ok(&id).await["state"], "result_pending");
    assert!(app.drain(&alice).await.is_some());
    let r = cancel(&app, &app.ops(), &id, &json!({})).await;
    assert_error(&r, 409, "not_cancelable");
    let s = app.status_ok(&id).await;
    assert_eq!(s["state"], "resolved");
    assert!(s["cancellation"].is_null(), "{s}");
    assert!(audit_rows(&app, "a2a_task_canceled").await.is_empty());
}

both_engines!(only_the_sender_or_an_operator_may_cancel);
async fn only_the_sender_or_an_operator_may_cancel(app: TestApp) {
    let alice = app.alice();
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    // The recipient sees the task but did not send it.
    let r = cancel(&app, &app.bob(), &id, &json!({})).await;
    assert_error(&r, 403, "sender_mismatch");
    let checks = cancel_checks(&app, &id).await;
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert_eq!(checks[0]["issuer"], "bob");
    assert_eq!(
        checks[0]["kind"],
        json!({"type": "capability_check", "scope_id": format!("a2a-cancel:{id}"),
               "required_actions": ["a2a.operator"], "missing_actions": ["a2a.operator"],
               "passed": false})
    );
    // A bystander cannot see it; an unknown id looks the same.
    assert_error(
        &cancel(&app, &app.carol(), &id, &json!({})).await,
        404,
        "not_found",
    );
    let unknown = uuid::Uuid::new_v4().to_string();
    assert_error(
        &cancel(&app, &alice, &unknown, &json!({})).await,
        404,
        "not_found",
    );
    assert_eq!(app.status_ok(&id).await["state"], "queued");
    // An operator may.
    let r = cancel(&app, &app.ops(), &id, &json!({"reason": "runaway"})).await;
    assert_eq!(r.expect(200)["cancellation"]["canceled_by"], "ops");
    let checks = cancel_checks(&app, &id).await;
    assert_eq!(
        checks[0]["kind"]["required_actions"],
        json!(["a2a.operator"])
    );
    assert_eq!(checks[0]["kind"]["passed"], json!(true));
}

both_engines!(bad_cancel_input_is_refused_and_changes_nothing);
async fn bad_cancel_input_is_refused_and_changes_nothing(app: TestApp) {
    let alice = app.alice();
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let path = format!("/a2a/tasks/{id}/cancel");
    let auth = format!("Bearer {alice}");
    let raw = |ct: Option<&'static str>, body: &'static [u8]| {
        let (path, auth) = (path.clone(), auth.clone());
        let api = app.api.clone();
        async move {
            api.raw(Method::POST, &path, Some(&auth), ct, Some(body.to_vec()))
                .await
        }
    };
    assert_error(
        &raw(Some("application/json"), b"{not json").await,
        400,
        "invalid_request",
    );
    assert_error(
        &raw(Some("application/json"), b"[1]").await,
        400,
        "invalid_request",
    );
    assert_error(
        &raw(Some("text/plain"), b"{}").await,
        415,
        "unsupported_media_type",
    );
    for body in [
        json!({"reason": "  "}),
        json!({"reason": 5}),
        json!({"reason": "a\u{0}b"}),
    ] {
        assert_error(
            &cancel(&app, &alice, &id, &body).await,
            400,
            "invalid_request",
        );
    }
    assert_error(
        &cancel(&app, &alice, "nope", &json!({})).await,
        400,
        "invalid_request",
    );
    let r = app.get(&format!("/a2a/tasks/{id}/cancel"), &alice).await;
    assert_error(&r, 405, "method_not_allowed");
    assert_eq!(app.status_ok(&id).await["state"], "queued");
    assert!(audit_rows(&app, "a2a_task_canceled").await.is_empty());
}

both_engines!(compaction_drops_canceled_tasks);
async fn compaction_drops_canceled_tasks(app: TestApp) {
    let alice = app.alice();
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    cancel(&app, &alice, &id, &json!({})).await.expect(200);
    let compactor = app.token("ops", json!(["a2a.compact", "a2a.operator"]));
    let r = app.post("/a2a/compact", &compactor, &json!({})).await;
    assert_eq!(r.expect(200)["dropped"], 1, "{}", r.text);
    assert_error(&app.status(&app.ops(), &id).await, 404, "not_found");
}

/// Runs `trials` cancel-versus-result races: `cancel_via` cancels while `result_via` answers.
/// Each ends with exactly one winner.
async fn race_cancel_and_result(app: &Api, cancel_via: &Api, result_via: &Api, trials: usize) {
    let (alice, bob) = (app.alice(), app.bob());
    let (mut canceled, mut answered) = (0, 0);
    for _ in 0..trials {
        let id = app.send_ok(&alice, &task("alice", "bob")).await;
        let (leased, lease) = app.lease_some(&bob).await;
        assert_eq!(leased, id);
        let mut res = result(&id, "ok", "done");
        res["lease_id"] = lease["lease_id"].clone();
        let why = json!({"reason": "race"});
        let (c, r) = tokio::join!(
            cancel(cancel_via, &alice, &id, &why),
            result_via.post_result(&bob, &res)
        );
        let s = app.status_ok(&id).await;
        match (c.status, r.status) {
            (200, 409) => {
                assert_error(&r, 409, "task_canceled");
                assert_eq!(s["state"], "canceled", "{s}");
                assert!(s["result"].is_null(), "a canceled task kept a result: {s}");
                assert!(app.drain(&alice).await.is_none());
                canceled += 1;
            }
            (409, 201) => {
                assert_error(&c, 409, "not_cancelable");
                assert_eq!(s["state"], "result_pending", "{s}");
                assert!(s["cancellation"].is_null(), "{s}");
                assert_eq!(app.drain(&alice).await.unwrap()["task_id"], json!(id));
                answered += 1;
            }
            other => panic!(
                "not exactly one winner: cancel {} {}, result {} {}",
                other.0, c.text, other.1, r.text
            ),
        }
    }
    eprintln!("{trials} races: {canceled} canceled, {answered} answered");
}

both_engines!(a_cancel_and_a_result_at_once_have_exactly_one_winner);
async fn a_cancel_and_a_result_at_once_have_exactly_one_winner(app: TestApp) {
    race_cancel_and_result(&app, &app, &app, 40).await;
}

both_engines!(a_cancel_and_a_result_through_two_instances_have_exactly_one_winner);
async fn a_cancel_and_a_result_through_two_instances_have_exactly_one_winner(mut app: TestApp) {
    let other = app.second_instance().await;
    race_cancel_and_result(&app, &app, &other, 40).await;
}
