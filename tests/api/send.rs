//! POST /a2a/tasks: answers, task-id idempotency, sender and capability gates (docs/contract.md#capabilities, docs/contract.md#endpoints, docs/contract.md#the-task-id).

use serde_json::json;
use uuid::Uuid;

use crate::common::*;

both_engines!(send_answers_201_with_exactly_kind_and_task_id);
async fn send_answers_201_with_exactly_kind_and_task_id(app: TestApp) {
    let t = task("alice", "bob");
    let r = app.send(&app.alice(), &t).await;
    let body = r.expect(201);
    assert_keys(body, &["kind", "task_id"], "send answer");
    assert_eq!(body["kind"], "a2a_task_queued");
    assert_eq!(body["task_id"], t["id"]);
    assert!(
        !r.replayed(),
        "a first send must not say Idempotent-Replayed"
    );
    let ct = r.header("content-type").unwrap_or_default();
    assert!(
        ct.starts_with("application/json"),
        "Content-Type of the send answer is {ct:?}"
    );

    let status = app.status_ok(t["id"].as_str().unwrap()).await;
    assert_eq!(status["state"], "queued");
    assert_eq!(status["attempt"], 0, "attempt is 0 until the first lease");
}

both_engines!(upper_case_task_id_is_answered_lower_case);
async fn upper_case_task_id_is_answered_lower_case(app: TestApp) {
    let id = Uuid::new_v4().to_string();
    let mut t = task("alice", "bob");
    t["id"] = json!(id.to_uppercase());
    let r = app.send(&app.alice(), &t).await;
    assert_eq!(
        r.expect(201)["task_id"],
        json!(id),
        "ids are lower-case on output"
    );
    let status = app.status_ok(&id).await;
    assert_eq!(status["task"]["id"], json!(id));
}

both_engines!(identical_resend_is_a_200_replay_with_the_same_body);
async fn identical_resend_is_a_200_replay_with_the_same_body(app: TestApp) {
    let alice = app.alice();
    let t = task("alice", "bob");
    let first = app.send(&alice, &t).await;
    first.expect(201);
    for _ in 0..2 {
        let again = app.send(&alice, &t).await;
        assert_eq!(
            again.expect(200),
            &first.body,
            "a replay answers the first answer"
        );
        assert!(
            again.replayed(),
            "a replay carries `Idempotent-Replayed: true`, headers: {:?}",
            again.headers
        );
    }
    let q = app.queue(&app.ops(), "").await;
    assert_eq!(
        queue_ids(&q),
        vec![t["id"].as_str().unwrap()],
        "one task only"
    );
}

both_engines!(same_id_with_a_different_body_is_409_task_id_conflict);
async fn same_id_with_a_different_body_is_409_task_id_conflict(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let t = task("alice", "bob");
    app.send_ok(&alice, &t).await;

    let mut other_text = t.clone();
    other_text["intent_text"] = json!("something else entirely");
    assert_error(
        &app.send(&alice, &other_text).await,
        409,
        "task_id_conflict",
    );

    let mut other_recipient = t.clone();
    other_recipient["recipient"] = json!("carol");
    assert_error(
        &app.send(&alice, &other_recipient).await,
        409,
        "task_id_conflict",
    );

    let mut extra_field = t.clone();
    extra_field["task_kind"] = json!("summarise");
    assert_error(
        &app.send(&alice, &extra_field).await,
        409,
        "task_id_conflict",
    );

    let status = app.status_ok(t["id"].as_str().unwrap()).await;
    assert_eq!(status["task"]["intent_text"], t["intent_text"], "unchanged");
    assert_eq!(status["task"]["recipient"], "bob", "unchanged");
    let q = app.queue(&app.ops(), "").await;
    assert_eq!(
        q["tasks"].as_array().unwrap().len(),
        1,
        "no second task: {q}"
    );
}

both_engines!(same_id_from_another_sender_is_409_task_id_conflict);
async fn same_id_from_another_sender_is_409_task_id_conflict(app: TestApp) {
    let t = task("alice", "bob");
    app.send_ok(&app.alice(), &t).await;

    let carol = app.token("carol", json!(["a2a.send.bob"]));
    let mut stolen = t.clone();
    stolen["sender"] = json!("carol");
    assert_error(&app.send(&carol, &stolen).await, 409, "task_id_conflict");

    let status = app.status_ok(t["id"].as_str().unwrap()).await;
    assert_eq!(
        status["task"]["sender"], "alice",
        "the first sender keeps the task"
    );
    assert_error(
        &app.status(&carol, t["id"].as_str().unwrap()).await,
        404,
        "not_found",
    );
}

both_engines!(replay_after_lease_and_after_resolve_still_answers_the_first_answer);
async fn replay_after_lease_and_after_resolve_still_answers_the_first_answer(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let t = task("alice", "bob");
    let id = t["id"].as_str().unwrap();
    let first = app.send(&alice, &t).await;
    first.expect(201);

    let (leased, lease) = app.lease_some(&bob).await;
    assert_eq!(leased, id);
    let after_lease = app.send(&alice, &t).await;
    assert_eq!(after_lease.expect(200), &first.body);
    assert!(after_lease.replayed());
    let status = app.status_ok(id).await;
    assert_eq!(status["state"], "in_flight", "a replay must not requeue");
    assert_eq!(status["lease"], lease, "a replay must not touch the lease");

    app.post_result(&bob, &result(id, "ok", "done"))
        .await
        .expect(201);
    app.drain(&alice).await.expect("alice drains the result");
    assert_eq!(app.status_ok(id).await["state"], "resolved");

    let after_resolve = app.send(&alice, &t).await;
    assert_eq!(after_resolve.expect(200), &first.body);
    assert!(after_resolve.replayed());
    assert_eq!(
        app.status_ok(id).await["state"],
        "resolved",
        "still resolved"
    );
    assert!(
        app.lease(&bob).await.is_none(),
        "a replay never queues again"
    );
}

both_engines!(sender_other_than_the_token_subject_is_403_sender_mismatch);
async fn sender_other_than_the_token_subject_is_403_sender_mismatch(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let t = task("mallory", "bob");
    assert_error(&app.send(&alice, &t).await, 403, "sender_mismatch");
    app.assert_empty("after a sender mismatch").await;
}

both_engines!(send_without_the_capability_is_403_capability_missing);
async fn send_without_the_capability_is_403_capability_missing(app: TestApp) {
    let no_caps = app.token("alice", json!([]));
    assert_error(
        &app.send(&no_caps, &task("alice", "bob")).await,
        403,
        "capability_missing",
    );

    let wrong_peer = app.token("alice", json!(["a2a.send.carol", "a2a.respond.bob"]));
    assert_error(
        &app.send(&wrong_peer, &task("alice", "bob")).await,
        403,
        "capability_missing",
    );

    // The capability check comes before body validation.
    let mut invalid = task("alice", "bob");
    invalid["task_kind"] = json!("   ");
    invalid["idempotency"] = json!({"duplicate_safety": "idempotent", "key": ""});
    assert_error(
        &app.send(&no_caps, &invalid).await,
        403,
        "capability_missing",
    );

    app.assert_empty("after refused sends").await;
}

both_engines!(wildcard_send_capability_admits_any_recipient);
async fn wildcard_send_capability_admits_any_recipient(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    app.send_ok(&alice, &task("alice", "bob")).await;
    app.send_ok(&alice, &task("alice", "carol")).await;
    app.send_ok(&alice, &task("alice", "research@acme")).await;

    let object_form = app.token("dave", json!([{"action": "a2a.send.*"}]));
    app.send_ok(&object_form, &task("dave", "bob")).await;
}

both_engines!(scoped_send_capability_admits_only_its_peer);
async fn scoped_send_capability_admits_only_its_peer(app: TestApp) {
    let alice = app.token(
        "alice",
        json!([{"action": "a2a.send.*", "scope": {"peer": "bob"}}]),
    );
    app.send_ok(&alice, &task("alice", "bob")).await;
    assert_error(
        &app.send(&alice, &task("alice", "carol")).await,
        403,
        "capability_scope_mismatch",
    );

    // A scope naming a field the request lacks (a send has no lease) does not admit it.
    let lease_scoped = app.token(
        "alice",
        json!([{"action": "a2a.send.bob", "scope": {"lease_id": Uuid::new_v4().to_string()}}]),
    );
    assert_error(
        &app.send(&lease_scoped, &task("alice", "bob")).await,
        403,
        "capability_scope_mismatch",
    );

    let q = app.queue(&app.ops(), "").await;
    assert_eq!(
        q["tasks"].as_array().unwrap().len(),
        1,
        "only bob's task: {q}"
    );
}

both_engines!(every_task_field_round_trips_through_status_and_lease);
async fn every_task_field_round_trips_through_status_and_lease(app: TestApp) {
    let t = json!({
        "id": Uuid::new_v4().to_string(),
        "sender": "alice",
        "recipient": "bob",
        "intent_text": "summarise the attached notes",
        "task_kind": "summarise.v1",
        "content": [
            {"type": "text", "text": "hello ünïcødé ✓"},
            {"type": "json", "value": {"a": [1, 2.5, {"b": null}], "c": true}}
        ],
        "parent": Uuid::new_v4().to_string(),
        "context_id": "conversation-42",
        "deadline_ms": now_ms() + 3_600_000,
        "idempotency": {"duplicate_safety": "idempotent", "key": "notes-2024-01"}
    });
    let id = app.send_ok(&app.alice(), &t).await;

    let status = app.status_ok(&id).await;
    for (k, v) in t.as_object().unwrap() {
        assert_eq!(&status["task"][k], v, "GET /a2a/tasks/{{id}}: field `{k}`");
    }
    let created = status["created_at_ms"].as_u64().expect("created_at_ms");
    assert!(status["updated_at_ms"].as_u64().expect("updated_at_ms") >= created);
    assert!(status["lease"].is_null() && status["result"].is_null());

    let (leased, _) = app.lease(&app.bob()).await.expect("bob leases the task");
    for (k, v) in t.as_object().unwrap() {
        assert_eq!(&leased[k], v, "leased task: field `{k}`");
    }
}

both_engines!(agent_ids_with_a_domain_work_end_to_end);
async fn agent_ids_with_a_domain_work_end_to_end(app: TestApp) {
    let sender = app.token("planner@acme", json!(["a2a.send.research@acme"]));
    let t = task("planner@acme", "research@acme");
    let id = app.send_ok(&sender, &t).await;
    let worker = app.token("research@acme", json!(["a2a.respond.planner@acme"]));
    let (leased, lease) = app.lease_some(&worker).await;
    assert_eq!(leased, id);
    assert_eq!(lease["leased_to"], "research@acme");
    app.post_result(&worker, &result(&id, "ok", "found it"))
        .await
        .expect(201);
    let r = app.drain(&sender).await.expect("result for planner@acme");
    assert_eq!(r["task_id"], json!(id));
}

both_engines!(unknown_json_fields_are_ignored);
async fn unknown_json_fields_are_ignored(app: TestApp) {
    let mut t = task("alice", "bob");
    t["x_unknown"] = json!({"nested": [1, 2, 3]});
    t["priority"] = json!("high");
    let id = app.send_ok(&app.alice(), &t).await;
    let (leased, _) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, id);

    let mut res = result(&id, "ok", "fine");
    res["x_unknown"] = json!(true);
    app.post_result(&app.bob(), &res).await.expect(201);
}

both_engines!(a_replay_is_recognised_regardless_of_key_order_and_whitespace);
async fn a_replay_is_recognised_regardless_of_key_order_and_whitespace(app: TestApp) {
    let alice = app.alice();
    let t = task("alice", "bob");
    let raw = format!(
        "{{\n  \"recipient\" : \"bob\",\n  \"intent_text\": {},\n  \"sender\":\"alice\",   \"id\": \"{}\"\n}}",
        t["intent_text"],
        t["id"].as_str().unwrap()
    );
    let first = app
        .raw(
            reqwest::Method::POST,
            "/a2a/tasks",
            Some(&format!("Bearer {alice}")),
            Some("application/json"),
            Some(raw.into_bytes()),
        )
        .await;
    first.expect(201);
    let again = app.send(&alice, &t).await;
    assert_eq!(
        again.expect(200),
        &first.body,
        "the same task with its keys in another order is the same body"
    );
    assert!(again.replayed());
}
