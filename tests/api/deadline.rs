//! Deadlines (docs/contract.md#deadlines, docs/contract.md#details): a past deadline is accepted, never leased, and answered with an
//! error result at the first lease attempt; in-flight tasks are not interrupted.

use std::time::Duration;

use serde_json::json;

use crate::common::*;

fn task_due(at_ms: u64) -> serde_json::Value {
    let mut t = task("alice", "bob");
    t["deadline_ms"] = json!(at_ms);
    t
}

both_engines!(a_past_deadline_is_accepted_never_leased_and_answered_with_an_error);
async fn a_past_deadline_is_accepted_never_leased_and_answered_with_an_error(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let t = task_due(now_ms() - 1_000);
    let r = app.send(&alice, &t).await;
    assert_eq!(
        r.expect(201),
        &json!({"kind": "a2a_task_queued", "task_id": t["id"]}),
        "a past deadline is accepted at send time"
    );
    let id = t["id"].as_str().unwrap();

    assert!(
        app.lease(&bob).await.is_none(),
        "a task past its deadline is never leased"
    );
    assert!(app.lease(&bob).await.is_none());

    let s = app.status_ok(id).await;
    assert_eq!(
        s["state"], "result_pending",
        "expired at the lease attempt: {s}"
    );
    assert!(s["lease"].is_null(), "{s}");
    let q = app.queue(&app.ops(), "").await;
    assert_eq!(q["tasks"], json!([]), "no longer queued: {q}");

    let res = app
        .drain(&alice)
        .await
        .expect("alice drains the deadline error");
    assert_eq!(res["task_id"], json!(id));
    assert_eq!(res["status"], "error");
    assert_eq!(res["error_message"], "deadline exceeded");
    assert_eq!(res["content"], json!([]));
    assert!(res.get("lease_id").is_none());
    assert_eq!(app.status_ok(id).await["state"], "resolved");

    // A late result from bob cannot land on it.
    let late = app.post_result(&bob, &result(id, "ok", "too late")).await;
    assert!(
        late.status == 409 || late.status == 403,
        "a result for an expired, never-leased task is refused: {} {}",
        late.status,
        late.text
    );
}

both_engines!(an_expired_task_is_skipped_and_the_next_one_leased);
async fn an_expired_task_is_skipped_and_the_next_one_leased(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let expired = app.send_ok(&alice, &task_due(now_ms() - 5_000)).await;
    let live = app.send_ok(&alice, &task_due(now_ms() + 3_600_000)).await;
    let plain = app.send_ok(&alice, &task("alice", "bob")).await;
    let (first, lease) = app.lease_some(&bob).await;
    assert_eq!(
        first, live,
        "the expired task is skipped, the next one is leased"
    );
    assert_eq!(lease["attempt"], 1);
    assert_eq!(app.lease_some(&bob).await.0, plain);
    assert!(app.lease(&bob).await.is_none());
    assert_eq!(app.status_ok(&expired).await["state"], "result_pending");
    let res = app.drain(&alice).await.expect("the deadline error");
    assert_eq!(res["task_id"], json!(expired));
    assert_eq!(res["error_message"], "deadline exceeded");
}

both_engines!(in_flight_tasks_are_not_interrupted_by_their_deadline);
async fn in_flight_tasks_are_not_interrupted_by_their_deadline(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let deadline = now_ms() + 1_000;
    let id = app.send_ok(&alice, &task_due(deadline)).await;
    let (leased, lease) = app.lease_some(&bob).await;
    assert_eq!(leased, id);

    // Wait for the wall clock to pass the deadline (a condition on time, not on the server).
    while now_ms() <= deadline + 50 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(app.lease(&bob).await.is_none(), "nothing else to lease");
    let s = app.status_ok(&id).await;
    assert_eq!(
        s["state"], "in_flight",
        "the deadline does not interrupt a lease: {s}"
    );
    assert_eq!(s["lease"], lease);
    assert!(
        app.drain(&alice).await.is_none(),
        "no deadline error for an in-flight task"
    );

    let mut res = result(&id, "ok", "made it");
    res["lease_id"] = lease["lease_id"].clone();
    app.post_result(&bob, &res).await.expect(201);
    let drained = app.drain(&alice).await.expect("bob's result");
    assert_eq!(drained["status"], "ok");
    assert_eq!(drained["content"], res["content"]);
}
