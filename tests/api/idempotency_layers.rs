//! Idempotency end to end (docs/contract.md#idempotency layers 2 and 3): hammers, stored failures, pending records
//! and their TTL, and the result cache across kill -9.

use futures_util::future::join_all;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

fn idempotent(key: &str) -> Value {
    let mut t = task("alice", "bob");
    t["task_kind"] = json!("refund");
    t["idempotency"] = json!({"duplicate_safety": "idempotent", "key": key});
    t
}

/// Runs `sql` with text/integer binds against the app's database (the test's own connection).
async fn sql(app: &TestApp, stmt: &str, binds: &[Value]) {
    use sqlx::Connection;
    macro_rules! run {
        ($conn:expr) => {{
            let mut q = sqlx::query(stmt);
            for b in binds {
                q = match b {
                    Value::String(s) => q.bind(s.clone()),
                    Value::Number(n) => q.bind(n.as_i64().unwrap()),
                    other => panic!("unsupported bind {other}"),
                };
            }
            q.execute(&mut $conn).await.expect(stmt);
            let _ = $conn.close().await;
        }};
    }
    match app.engine {
        Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            run!(c)
        }
        Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            run!(c)
        }
    }
}

/// Each answer of a hammer is the effect (`first`), a replay of it, or 409 in flight.
fn assert_hammer(answers: &[Resp], first_status: u16) -> usize {
    let mut effects = 0;
    let mut reference: Option<&Value> = None;
    for r in answers {
        match r.status {
            409 => {
                assert_eq!(r.body["code"], "idempotency_in_flight", "{}", r.text);
                assert_eq!(r.body["retriable"], true, "{}", r.text);
                assert!(
                    r.header("retry-after").is_some(),
                    "409 in flight carries Retry-After"
                );
            }
            s if s == first_status => {
                if !r.replayed() {
                    effects += 1;
                }
                if let Some(b) = reference {
                    assert_eq!(&r.body, b, "every replay answers the stored body");
                }
                reference = Some(&r.body);
            }
            other => panic!("unexpected answer {other}: {}", r.text),
        }
    }
    effects
}

async fn fifty_identical_sends_with_one_key_make_one_task(app: TestApp) {
    let alice = app.alice();
    let t = task("alice", "bob");
    let answers = join_all((0..50).map(|_| {
        app.post_with(
            "/a2a/tasks",
            &alice,
            &t,
            &[("Idempotency-Key", "hammer-send")],
        )
    }))
    .await;
    assert_eq!(
        assert_hammer(&answers, 201),
        1,
        "exactly one answer is the effect"
    );
    let q = app.queue(&app.ops(), "?limit=1000").await;
    assert_eq!(queue_ids(&q), vec![t["id"].as_str().unwrap().to_owned()]);
}
both_engines!(fifty_identical_sends_with_one_key_make_one_task);

async fn fifty_identical_results_with_one_key_post_one_result(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&app.bob()).await;
    let mut res = result(&id, "ok", "once");
    res["lease_id"] = lease["lease_id"].clone();
    let bob = app.bob();
    let answers = join_all((0..50).map(|_| {
        app.post_with(
            "/a2a/results",
            &bob,
            &res,
            &[("Idempotency-Key", "hammer-result")],
        )
    }))
    .await;
    assert_eq!(assert_hammer(&answers, 201), 1);
    let drained = app.drain(&app.alice()).await.expect("one result");
    assert_eq!(
        drained["content"],
        json!([{"type": "text", "text": "once"}])
    );
    assert!(
        app.drain(&app.alice()).await.is_none(),
        "exactly one result"
    );
}
both_engines!(fifty_identical_results_with_one_key_post_one_result);

async fn fifty_identical_repairs_with_one_key_requeue_once(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&app.bob()).await;
    let ops = full_ops(&app);
    let body = json!({"task_id": id, "reason": "hammer",
        "command": {"action": "requeue", "duplicate_risk": "operator_accepted", "lease_id": lease["lease_id"]}});
    let answers = join_all((0..50).map(|_| {
        app.post_with(
            "/a2a/repair",
            &ops,
            &body,
            &[("Idempotency-Key", "hammer-repair")],
        )
    }))
    .await;
    assert_eq!(assert_hammer(&answers, 200), 1);
    let rows = app
        .get(
            "/audit/recent?kind=a2a_repair_applied&limit=100",
            &app.ops(),
        )
        .await;
    assert_eq!(
        rows.expect(200)["events"].as_array().unwrap().len(),
        1,
        "one requeue"
    );
    let s = app.status_ok(&id).await;
    assert_eq!(
        (s["state"].as_str(), s["attempt"].as_u64()),
        (Some("queued"), Some(1))
    );
}
both_engines!(fifty_identical_repairs_with_one_key_requeue_once);

async fn fifty_distinct_sends_with_one_cache_key_are_fifty_replays_and_no_lease(app: TestApp) {
    // The first one is done for real.
    let first = app
        .send_ok(&app.alice(), &idempotent("refund:order-8812"))
        .await;
    let (_, lease) = app.lease_some(&app.bob()).await;
    let mut res = result(&first, "ok", "refunded 14000");
    res["lease_id"] = lease["lease_id"].clone();
    app.post_result(&app.bob(), &res).await.expect(201);
    assert!(app.drain(&app.alice()).await.is_some());

    let alice = app.alice();
    let tasks: Vec<Value> = (0..50).map(|_| idempotent("refund:order-8812")).collect();
    let answers = join_all(tasks.iter().map(|t| app.send(&alice, t))).await;
    for (t, r) in tasks.iter().zip(&answers) {
        let b = r.expect(201);
        assert_eq!(b["task_id"], t["id"]);
        assert_eq!(b["replayed_from"], first.as_str(), "{}", r.text);
    }
    assert!(
        app.lease(&app.bob()).await.is_none(),
        "zero leases: nothing was queued"
    );
    let mut drained = 0;
    while let Some(r) = app.drain(&app.alice()).await {
        assert_eq!(
            r["content"],
            json!([{"type": "text", "text": "refunded 14000"}])
        );
        drained += 1;
    }
    assert_eq!(drained, 50);
    let metrics = app.get_anon("/metrics").await.text;
    assert!(
        metrics
            .lines()
            .any(|l| l == "a2a_result_cache_hits_total 50"),
        "{metrics}"
    );
}
both_engines!(fifty_distinct_sends_with_one_cache_key_are_fifty_replays_and_no_lease);

async fn the_result_cache_survives_a_kill_9_restart(mut app: TestApp) {
    let first = app.send_ok(&app.alice(), &idempotent("k-restart")).await;
    let (_, lease) = app.lease_some(&app.bob()).await;
    let mut res = result(&first, "partial", "half");
    res["lease_id"] = lease["lease_id"].clone();
    app.post_result(&app.bob(), &res).await.expect(201);
    app.restart().await;
    let r = app.send(&app.alice(), &idempotent("k-restart")).await;
    assert_eq!(r.expect(201)["replayed_from"], first.as_str(), "{}", r.text);
    assert!(app.lease(&app.bob()).await.is_none());
}
both_engines!(the_result_cache_survives_a_kill_9_restart);

async fn refusals_are_stored_so_a_replay_never_re_executes(app: TestApp) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let res = result(&id, "ok", "too early");
    let key = [("Idempotency-Key", "early")];
    // The task is queued: 409 not_in_flight, and that outcome is stored under the key.
    let first = app.post_with("/a2a/results", &app.bob(), &res, &key).await;
    assert_error(&first, 409, "not_in_flight");
    app.lease_some(&app.bob()).await;
    let again = app.post_with("/a2a/results", &app.bob(), &res, &key).await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert_eq!(again.body, first.body);
    assert!(
        again.replayed(),
        "the stored refusal is replayed: {:?}",
        again.headers
    );
    assert_eq!(
        app.status_ok(&id).await["state"],
        "in_flight",
        "the replay did not execute"
    );
}
both_engines!(refusals_are_stored_so_a_replay_never_re_executes);

async fn a_reused_key_with_another_request_changes_nothing(app: TestApp) {
    let alice = app.alice();
    let key = [("Idempotency-Key", "k1")];
    app.post_with("/a2a/tasks", &alice, &task("alice", "bob"), &key)
        .await
        .expect(201);
    let before = app.queue(&app.ops(), "?limit=1000").await;
    for path_body in [
        ("/a2a/tasks", task("alice", "bob")),
        (
            "/a2a/results",
            result(&Uuid::new_v4().to_string(), "ok", "x"),
        ),
    ] {
        let r = app.post_with(path_body.0, &alice, &path_body.1, &key).await;
        assert_error(&r, 422, "idempotency_key_reused");
    }
    assert_eq!(app.queue(&app.ops(), "?limit=1000").await, before);
}
both_engines!(a_reused_key_with_another_request_changes_nothing);

async fn keys_must_be_non_blank_and_at_most_255_characters(app: TestApp) {
    let alice = app.alice();
    for bad in ["", "   ", &"k".repeat(256)] {
        let r = app
            .post_with(
                "/a2a/tasks",
                &alice,
                &task("alice", "bob"),
                &[("Idempotency-Key", bad)],
            )
            .await;
        assert_error(&r, 400, "invalid_request");
    }
    app.assert_empty("after refused keys").await;
    let long = "k".repeat(255);
    app.post_with(
        "/a2a/tasks",
        &alice,
        &task("alice", "bob"),
        &[("Idempotency-Key", &long)],
    )
    .await
    .expect(201);
}
both_engines!(keys_must_be_non_blank_and_at_most_255_characters);

async fn a_pending_key_answers_409_until_its_ttl_then_is_taken_over(app: TestApp) {
    // A pending record as a request that died mid-way would leave it (its effect was never
    // committed, so only the record exists).
    let t = task("alice", "bob");
    let fingerprint = a2a_mailbox::mailbox::IdemRequest::new("stuck", "POST", "/a2a/tasks", &t)
        .unwrap()
        .fingerprint;
    let now = now_ms() as i64;
    sql(
        &app,
        "INSERT INTO idempotency_keys (caller, idem_key, fingerprint, state, created_at_ms, locked_until_ms, expires_at_ms) \
         VALUES ($1, $2, $3, 'pending', $4, $5, $6)",
        &[json!("alice"), json!("stuck"), json!(fingerprint), json!(now), json!(now + 60_000), json!(now + 86_400_000)],
    )
    .await;
    let key = [("Idempotency-Key", "stuck")];
    let r = app.post_with("/a2a/tasks", &app.alice(), &t, &key).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.body["code"], "idempotency_in_flight");
    assert_eq!(r.body["retriable"], true);
    let secs: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&secs), "Retry-After {secs}");
    app.assert_empty("the in-flight answer executed nothing")
        .await;
    // Past its TTL the record is taken over and the request runs.
    sql(
        &app,
        "UPDATE idempotency_keys SET locked_until_ms = $1 WHERE caller = 'alice' AND idem_key = 'stuck'",
        &[json!(now - 1)],
    )
    .await;
    let r = app.post_with("/a2a/tasks", &app.alice(), &t, &key).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(!r.replayed());
    let r = app.post_with("/a2a/tasks", &app.alice(), &t, &key).await;
    assert_eq!(r.status, 201);
    assert!(r.replayed());
}
both_engines!(a_pending_key_answers_409_until_its_ttl_then_is_taken_over);
