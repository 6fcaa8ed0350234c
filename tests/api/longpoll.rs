//! Long-polling `wait_ms` on GET /a2a/tasks/next and GET /a2a/results/next (docs/contract.md#endpoints, docs/contract.md#details).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

/// Delay before the other client acts, so that the poll is (very likely) already waiting.
/// Correctness does not depend on it: the poll cannot return an item that does not exist yet.
const ACT_AFTER: Duration = Duration::from_millis(300);

both_engines!(a_waiting_lease_returns_as_soon_as_a_task_is_sent);
async fn a_waiting_lease_returns_as_soon_as_a_task_is_sent(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let t = task("alice", "bob");
    let started = Instant::now();
    let (poll, sent_at) = tokio::join!(app.next(&bob, "?wait_ms=5000"), async {
        tokio::time::sleep(ACT_AFTER).await;
        app.send_ok(&alice, &t).await;
        started.elapsed()
    });
    let elapsed = started.elapsed();
    let body = poll.expect(200);
    assert_eq!(
        body["task"]["id"], t["id"],
        "the waiting lease got the new task"
    );
    assert_eq!(body["lease"]["attempt"], 1);
    assert!(
        elapsed < Duration::from_millis(3000),
        "wait_ms=5000 should return soon after the send at {sent_at:?}, took {elapsed:?}"
    );
}

both_engines!(a_waiting_lease_without_tasks_returns_null_after_about_wait_ms);
async fn a_waiting_lease_without_tasks_returns_null_after_about_wait_ms(app: TestApp) {
    let bob = app.bob();
    let started = Instant::now();
    let r = app.next(&bob, "?wait_ms=300").await;
    let elapsed = started.elapsed();
    assert_eq!(
        r.expect(200),
        &json!({"kind": "a2a_task_opt", "task": null, "lease": null})
    );
    assert!(
        elapsed >= Duration::from_millis(250) && elapsed <= Duration::from_secs(3),
        "wait_ms=300 with nothing to lease took {elapsed:?}"
    );

    let started = Instant::now();
    app.next(&bob, "?wait_ms=0").await.expect(200);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "wait_ms=0 does not wait"
    );
}

both_engines!(a_waiting_lease_ignores_tasks_for_other_recipients);
async fn a_waiting_lease_ignores_tasks_for_other_recipients(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let bob = app.bob();
    let started = Instant::now();
    let (poll, carols) = tokio::join!(app.next(&bob, "?wait_ms=1000"), async {
        tokio::time::sleep(ACT_AFTER).await;
        app.send_ok(&alice, &task("alice", "carol")).await
    });
    let elapsed = started.elapsed();
    assert!(
        poll.expect(200)["task"].is_null(),
        "bob must not get carol's task: {}",
        poll.text
    );
    assert!(
        elapsed >= Duration::from_millis(900),
        "bob's poll returned early ({elapsed:?}) with nothing"
    );
    assert_eq!(app.lease_some(&app.carol()).await.0, carols);
}

both_engines!(two_waiting_leasers_and_one_task_only_one_gets_it);
async fn two_waiting_leasers_and_one_task_only_one_gets_it(app: TestApp) {
    let alice = app.alice();
    let bob = app.bob();
    let helper = app.token("helper", json!(["a2a.lease.bob"]));
    let t = task("alice", "bob");
    let (a, b, _) = tokio::join!(
        app.next(&bob, "?wait_ms=1500"),
        app.next(&helper, "?recipient=bob&wait_ms=1500"),
        async {
            tokio::time::sleep(ACT_AFTER).await;
            app.send_ok(&alice, &t).await
        }
    );
    let got: Vec<_> = [&a, &b]
        .iter()
        .map(|r| r.expect(200)["task"]["id"].clone())
        .filter(|id| !id.is_null())
        .collect();
    assert_eq!(
        got,
        vec![t["id"].clone()],
        "exactly one leaser gets the task"
    );
}

both_engines!(a_waiting_drain_returns_as_soon_as_a_result_is_posted);
async fn a_waiting_drain_returns_as_soon_as_a_result_is_posted(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    app.lease_some(&bob).await;
    let started = Instant::now();
    let (poll, _) = tokio::join!(app.get("/a2a/results/next?wait_ms=5000", &alice), async {
        tokio::time::sleep(ACT_AFTER).await;
        app.post_result(&bob, &result(&id, "ok", "done"))
            .await
            .expect(201);
    });
    let elapsed = started.elapsed();
    let body = poll.expect(200);
    assert_eq!(body["result"]["task_id"], json!(id));
    assert!(
        elapsed < Duration::from_millis(3000),
        "wait_ms=5000 should return soon after the result, took {elapsed:?}"
    );
    assert_eq!(app.status_ok(&id).await["state"], "resolved");
}

both_engines!(a_waiting_drain_without_results_returns_null_after_about_wait_ms);
async fn a_waiting_drain_without_results_returns_null_after_about_wait_ms(app: TestApp) {
    let alice = app.alice();
    let started = Instant::now();
    let r = app.get("/a2a/results/next?wait_ms=300", &alice).await;
    let elapsed = started.elapsed();
    assert_eq!(
        r.expect(200),
        &json!({"kind": "a2a_result_opt", "result": null})
    );
    assert!(
        elapsed >= Duration::from_millis(250) && elapsed <= Duration::from_secs(3),
        "wait_ms=300 with nothing to drain took {elapsed:?}"
    );
}

/// A waiting request re-checks once a second even if nobody wakes it; these two tests require
/// the commit itself to wake it: the poll answers well within that second after the write.
const WOKEN_WITHIN: Duration = Duration::from_millis(500);

both_engines!(a_send_wakes_its_recipients_waiting_lease_at_once);
async fn a_send_wakes_its_recipients_waiting_lease_at_once(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let t = task("alice", "bob");
    let (poll, sent) = tokio::join!(
        async {
            let r = app.next(&bob, "?wait_ms=5000").await;
            (r, Instant::now())
        },
        async {
            tokio::time::sleep(ACT_AFTER).await;
            app.send_ok(&alice, &t).await;
            Instant::now()
        }
    );
    let (poll, answered) = poll;
    assert_eq!(poll.expect(200)["task"]["id"], t["id"]);
    let lag = answered.saturating_duration_since(sent);
    assert!(
        lag < WOKEN_WITHIN,
        "the lease answered {lag:?} after the send: it was not woken by the commit"
    );
}

both_engines!(a_result_wakes_its_senders_waiting_drain_at_once);
async fn a_result_wakes_its_senders_waiting_drain_at_once(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let (leased, lease) = app.lease_some(&bob).await;
    assert_eq!(leased, id);
    let (poll, posted) = tokio::join!(
        async {
            let r = app.get("/a2a/results/next?wait_ms=5000", &alice).await;
            (r, Instant::now())
        },
        async {
            tokio::time::sleep(ACT_AFTER).await;
            let mut body = result(&id, "ok", "done");
            body["lease_id"] = lease["lease_id"].clone();
            app.post_result(&bob, &body).await.expect(201);
            Instant::now()
        }
    );
    let (poll, answered) = poll;
    assert_eq!(poll.expect(200)["result"]["task_id"], id.as_str());
    let lag = answered.saturating_duration_since(posted);
    assert!(
        lag < WOKEN_WITHIN,
        "the drain answered {lag:?} after the result: it was not woken by the commit"
    );
}
