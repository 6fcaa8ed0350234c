//! GET /a2a/tasks/next, GET /a2a/tasks/{id} and heartbeats (docs/contract.md#wire-types, docs/contract.md#endpoints).

use serde_json::json;
use uuid::Uuid;

use crate::common::*;

both_engines!(empty_mailbox_leases_null_task_and_null_lease);
async fn empty_mailbox_leases_null_task_and_null_lease(app: TestApp) {
    let r = app.next(&app.bob(), "").await;
    assert_eq!(
        r.expect(200),
        &json!({"kind": "a2a_task_opt", "task": null, "lease": null})
    );
}

both_engines!(lease_answers_the_task_and_a_fresh_lease);
async fn lease_answers_the_task_and_a_fresh_lease(app: TestApp) {
    let t = task("alice", "bob");
    let id = app.send_ok(&app.alice(), &t).await;
    let before = now_ms();
    let r = app.next(&app.bob(), "").await;
    let after = now_ms();
    let body = r.expect(200);
    assert_keys(body, &["kind", "task", "lease"], "a2a_task_opt");
    assert_eq!(body["kind"], "a2a_task_opt");
    assert_eq!(body["task"]["id"], json!(id));
    assert_eq!(body["task"]["intent_text"], t["intent_text"]);

    let lease = &body["lease"];
    for k in [
        "lease_id",
        "leased_to",
        "leased_at_ms",
        "heartbeat_at_ms",
        "attempt",
    ] {
        assert!(lease.get(k).is_some(), "lease lacks `{k}`: {lease}");
    }
    let lease_id = lease["lease_id"].as_str().expect("lease_id is a string");
    assert!(
        Uuid::parse_str(lease_id).is_ok(),
        "lease_id {lease_id} is a uuid"
    );
    assert_eq!(
        lease_id,
        lease_id.to_lowercase(),
        "lower-case ids on output"
    );
    assert_eq!(lease["leased_to"], "bob");
    assert_eq!(lease["attempt"], 1);
    let leased_at = lease["leased_at_ms"]
        .as_u64()
        .expect("leased_at_ms is a u64");
    assert!(
        (before.saturating_sub(1000)..=after + 1000).contains(&leased_at),
        "leased_at_ms {leased_at} is not now ({before}..{after})"
    );
    let heartbeat = lease["heartbeat_at_ms"].as_u64().expect("heartbeat_at_ms");
    assert!(
        heartbeat >= leased_at,
        "heartbeat_at_ms before leased_at_ms"
    );
}

both_engines!(leases_come_oldest_first);
async fn leases_come_oldest_first(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let mut sent = Vec::new();
    for _ in 0..6 {
        sent.push(app.send_ok(&alice, &task("alice", "bob")).await);
    }
    let mut leased = Vec::new();
    while let Some((t, _)) = app.lease(&bob).await {
        leased.push(t["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(leased, sent, "FIFO: leases in send order");
}

both_engines!(a_recipient_only_leases_its_own_tasks);
async fn a_recipient_only_leases_its_own_tasks(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let b1 = app.send_ok(&alice, &task("alice", "bob")).await;
    let c1 = app.send_ok(&alice, &task("alice", "carol")).await;
    let b2 = app.send_ok(&alice, &task("alice", "bob")).await;
    let carol = app.carol();
    assert_eq!(app.lease_some(&carol).await.0, c1);
    assert!(app.lease(&carol).await.is_none(), "carol has no more tasks");
    let bob = app.bob();
    assert_eq!(app.lease_some(&bob).await.0, b1);
    assert_eq!(app.lease_some(&bob).await.0, b2);
    assert!(app.lease(&bob).await.is_none());
}

both_engines!(leasing_for_another_recipient_needs_its_lease_capability);
async fn leasing_for_another_recipient_needs_its_lease_capability(app: TestApp) {
    let alice = app.alice();
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let q = "?recipient=bob";

    for (who, caps) in [
        ("no caps", json!([])),
        ("operator", json!(["a2a.operator"])),
        ("lease cap for carol", json!(["a2a.lease.carol"])),
        (
            "send/respond caps",
            json!(["a2a.send.bob", "a2a.respond.alice"]),
        ),
    ] {
        let worker = app.token("worker", caps);
        let r = app.next(&worker, q).await;
        assert_eq!(r.status, 403, "{who}: {}", r.text);
        assert_error(&r, 403, "capability_missing");
    }
    let status = app.status_ok(&id).await;
    assert_eq!(
        status["state"], "queued",
        "refused leases leave the task queued"
    );
    assert_eq!(status["attempt"], 0);

    let worker = app.token("worker", json!(["a2a.lease.bob"]));
    let r = app.next(&worker, q).await;
    let body = r.expect(200);
    assert_eq!(body["task"]["id"], json!(id));
    assert_eq!(
        body["lease"]["leased_to"], "worker",
        "the caller holds the lease"
    );

    // The lessee can see the task it holds.
    let seen = app.status(&worker, &id).await;
    assert_eq!(seen.expect(200)["state"], "in_flight");

    let second = app.send_ok(&alice, &task("alice", "bob")).await;
    let any = app.token("dispatcher", json!(["a2a.lease.*"]));
    let r = app.next(&any, q).await;
    assert_eq!(
        r.expect(200)["task"]["id"],
        json!(second),
        "a2a.lease.* works"
    );

    // Explicitly naming oneself needs no capability.
    let third = app.send_ok(&alice, &task("alice", "bob")).await;
    let r = app.next(&app.token("bob", json!([])), q).await;
    assert_eq!(r.expect(200)["task"]["id"], json!(third));
}

both_engines!(a_leased_task_is_never_leased_again);
async fn a_leased_task_is_never_leased_again(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let bob = app.bob();
    let (leased, lease) = app.lease_some(&bob).await;
    assert_eq!(leased, id);
    assert!(
        app.lease(&bob).await.is_none(),
        "bob leased the same task twice"
    );
    let other = app.token("worker", json!(["a2a.lease.bob"]));
    let r = app.next(&other, "?recipient=bob").await;
    assert!(
        r.expect(200)["task"].is_null(),
        "another leaser got it: {}",
        r.text
    );
    let status = app.status_ok(&id).await;
    assert_eq!(status["lease"], lease, "the lease is untouched");
    assert_eq!(status["attempt"], 1);
}

both_engines!(task_status_shows_queued_then_in_flight_with_the_lease);
async fn task_status_shows_queued_then_in_flight_with_the_lease(app: TestApp) {
    let t = task("alice", "bob");
    let id = app.send_ok(&app.alice(), &t).await;
    for viewer in [app.alice(), app.bob(), app.ops()] {
        let r = app.status(&viewer, &id).await;
        let s = r.expect(200);
        assert_eq!(s["kind"], "a2a_task_status");
        for k in [
            "task",
            "state",
            "attempt",
            "lease",
            "result",
            "cancellation",
            "created_at_ms",
            "updated_at_ms",
        ] {
            assert!(s.get(k).is_some(), "task status lacks `{k}`: {s}");
        }
        assert_eq!(s["state"], "queued");
        assert_eq!(s["attempt"], 0);
        assert!(s["lease"].is_null(), "{s}");
        assert!(s["result"].is_null(), "{s}");
        assert_eq!(s["task"]["id"], json!(id));
        assert_eq!(s["task"]["sender"], "alice");
    }
    let before = app.status_ok(&id).await;

    let (_, lease) = app.lease_some(&app.bob()).await;
    let s = app.status_ok(&id).await;
    assert_eq!(s["state"], "in_flight");
    assert_eq!(s["attempt"], 1);
    assert_eq!(s["lease"], lease, "status shows the lease handed out");
    assert_eq!(s["created_at_ms"], before["created_at_ms"]);
    assert!(s["updated_at_ms"].as_u64() >= before["updated_at_ms"].as_u64());
}

both_engines!(heartbeat_refreshes_the_lease_for_its_holder_only);
async fn heartbeat_refreshes_the_lease_for_its_holder_only(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let queued = app.send_ok(&alice, &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&bob).await;
    let hb_path = format!("/a2a/tasks/{id}/heartbeat");
    let body = json!({"lease_id": lease["lease_id"]});

    clock_tick().await;
    let r = app.post(&hb_path, &bob, &body).await;
    let b = r.expect(200);
    assert_eq!(b["kind"], "a2a_lease_extended");
    let new = &b["lease"];
    assert_eq!(new["lease_id"], lease["lease_id"]);
    assert_eq!(new["leased_to"], "bob");
    assert_eq!(new["leased_at_ms"], lease["leased_at_ms"]);
    assert_eq!(new["attempt"], 1);
    assert!(
        new["heartbeat_at_ms"].as_u64().unwrap() > lease["heartbeat_at_ms"].as_u64().unwrap(),
        "heartbeat_at_ms did not move: {lease} -> {new}"
    );
    assert_eq!(&app.status_ok(&id).await["lease"], new);

    // Sender sees the task but does not hold the lease.
    assert_error(&app.post(&hb_path, &alice, &body).await, 403, "not_lessee");
    // Wrong lease id.
    let wrong = json!({"lease_id": Uuid::new_v4().to_string()});
    assert_error(
        &app.post(&hb_path, &bob, &wrong).await,
        409,
        "lease_mismatch",
    );
    // A queued task has no lease.
    let queued_path = format!("/a2a/tasks/{queued}/heartbeat");
    assert_error(
        &app.post(&queued_path, &bob, &wrong).await,
        409,
        "not_in_flight",
    );
    // Unknown and invisible tasks are 404 not_found.
    let unknown = format!("/a2a/tasks/{}/heartbeat", Uuid::new_v4());
    assert_error(&app.post(&unknown, &bob, &body).await, 404, "not_found");
    assert_error(
        &app.post(&hb_path, &app.carol(), &body).await,
        404,
        "not_found",
    );

    assert_eq!(
        &app.status_ok(&id).await["lease"],
        new,
        "refusals change nothing"
    );
}
