//! Parked requests (docs/contract.md#waiting): whom a commit wakes, and the limits on waiting.
//! Each test waits for the server's own count of parked requests (`a2a_waiters`) instead of
//! sleeping, and counts wake-ups with `a2a_wakeups_total`.

use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::common::*;

/// A long-poll of `token` on `path` (`/a2a/tasks/next?…` or `/a2a/results/next?…`), running.
fn parked(app: &Api, token: &str, path: &str) -> JoinHandle<Resp> {
    let (api, token, path) = (app.clone(), token.to_owned(), path.to_owned());
    tokio::spawn(async move { api.get(&path, &token).await })
}

const LEASE: &str = "/a2a/tasks/next?wait_ms=20000";

both_engines!(a_send_wakes_one_parked_worker_of_its_recipient_and_nobody_else);
async fn a_send_wakes_one_parked_worker_of_its_recipient_and_nobody_else(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let (bob, carol) = (app.bob(), app.carol());
    let mut bobs: Vec<_> = (0..4).map(|_| parked(&app, &bob, LEASE)).collect();
    let carols: Vec<_> = (0..3).map(|_| parked(&app, &carol, LEASE)).collect();
    app.until_metric("a2a_waiters", 7.0).await;
    let woken = app.metric("a2a_wakeups_total").await;

    let t = app.send_ok(&alice, &task("alice", "bob")).await;
    app.until_metric("a2a_waiters", 6.0).await;
    assert_eq!(
        app.metric("a2a_wakeups_total").await,
        woken + 1.0,
        "one task woke exactly one request: none of bob's other polls, none of carol's"
    );
    let at = bobs
        .iter()
        .position(JoinHandle::is_finished)
        .expect("one of bob's polls answered");
    let first = bobs.remove(at).await.unwrap();
    assert_eq!(first.expect(200)["task"]["id"].as_str(), Some(t.as_str()));
    assert!(bobs.iter().chain(&carols).all(|p| !p.is_finished()));

    // Each later task goes to another waiting poll, and each recipient's to its own.
    let mut sent = vec![];
    for to in ["bob", "bob", "bob", "carol", "carol", "carol"] {
        sent.push(app.send_ok(&alice, &task("alice", to)).await);
    }
    let mut got = vec![];
    for (poll, who) in bobs
        .into_iter()
        .map(|p| (p, "bob"))
        .chain(carols.into_iter().map(|p| (p, "carol")))
    {
        let r = poll.await.unwrap();
        let leased = r.expect(200);
        assert_eq!(leased["task"]["recipient"], who);
        got.push(leased["task"]["id"].as_str().unwrap().to_owned());
    }
    got.sort();
    sent.sort();
    assert_eq!(
        got, sent,
        "every task was leased once, by a poll of its recipient"
    );
    app.until_metric("a2a_waiters", 0.0).await;
}

both_engines!(a_waiting_worker_is_handed_its_task_by_the_commit_that_queued_it);
async fn a_waiting_worker_is_handed_its_task_by_the_commit_that_queued_it(app: TestApp) {
    const HANDED: &str = "a2a_handoffs_total{kind=\"claim\"}";
    let bob = app.bob();
    let poll = parked(&app, &bob, LEASE);
    app.until_metric("a2a_waiters", 1.0).await;
    let handed = app.metric(HANDED).await;
    let t = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let r = poll.await.unwrap();
    assert_eq!(r.expect(200)["task"]["id"].as_str(), Some(t.as_str()));
    assert_eq!(r.body["lease"]["attempt"], 1);
    assert_eq!(
        app.metric(HANDED).await,
        handed + 1.0,
        "the send's own commit did not lease the task to the waiting worker"
    );
    let status = app.status_ok(&t).await;
    assert_eq!(status["state"], "in_flight");
    assert_eq!(status["lease"]["lease_id"], r.body["lease"]["lease_id"]);
    assert_eq!(status["lease"]["leased_to"], "bob");
}

both_engines!(a_result_wakes_one_drain_of_its_sender_and_nobody_else);
async fn a_result_wakes_one_drain_of_its_sender_and_nobody_else(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let dave = app.token("dave", json!([]));
    let t = app.send_ok(&alice, &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&bob).await;
    const DRAIN: &str = "/a2a/results/next?wait_ms=20000";
    let alices: Vec<_> = (0..2).map(|_| parked(&app, &alice, DRAIN)).collect();
    let daves: Vec<_> = (0..2).map(|_| parked(&app, &dave, DRAIN)).collect();
    app.until_metric("a2a_waiters", 4.0).await;
    let woken = app.metric("a2a_wakeups_total").await;

    let mut answer = result(&t, "ok", "done");
    answer["lease_id"] = lease["lease_id"].clone();
    app.post_result(&bob, &answer).await.expect(201);
    app.until_metric("a2a_waiters", 3.0).await;
    assert_eq!(app.metric("a2a_wakeups_total").await, woken + 1.0);
    let done: Vec<&JoinHandle<Resp>> = alices.iter().filter(|p| p.is_finished()).collect();
    assert_eq!(done.len(), 1, "one of alice's drains answered");
    assert!(
        daves.iter().all(|p| !p.is_finished()),
        "dave's drains were not woken"
    );
    for p in alices.into_iter().chain(daves) {
        p.abort();
    }
}

fn two_and_three() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_MAX_WAITING_PER_CALLER", "2")
        .env("A2A_MAILBOX_MAX_WAITING", "3")
}

/// A refusal of the limits: its status and code, retriable, `Retry-After: 1`.
fn refused(r: &Resp, status: u16, code: &str) {
    let body: &Value = r.expect(status);
    assert_eq!(body["code"], code, "{}", r.text);
    assert_eq!(body["retriable"], true);
    assert_eq!(r.header("retry-after"), Some("1"));
}

both_engines!(
    the_limits_on_waiting_requests_refuse_at_once_and_change_nothing,
    config = two_and_three
);
async fn the_limits_on_waiting_requests_refuse_at_once_and_change_nothing(app: TestApp) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let (bob, carol) = (app.bob(), app.carol());
    let dave = app.token("dave", json!([]));
    let daves_task = app.send_ok(&alice, &task("alice", "dave")).await;
    let bobs: Vec<_> = (0..2).map(|_| parked(&app, &bob, LEASE)).collect();
    app.until_metric("a2a_waiters", 2.0).await;

    // A third wait of bob's is past his limit; a poll that does not wait is not.
    refused(
        &app.next(&bob, "?wait_ms=20000").await,
        429,
        "too_many_waiting",
    );
    assert!(app.next(&bob, "?wait_ms=0").await.expect(200)["task"].is_null());

    // The instance's limit: dave's wait is refused although his task is ready, and it is left
    // queued; alice's drain is refused too.
    let carols = parked(&app, &carol, LEASE);
    app.until_metric("a2a_waiters", 3.0).await;
    refused(&app.next(&dave, "?wait_ms=20000").await, 503, "overloaded");
    refused(
        &app.get("/a2a/results/next?wait_ms=20000", &alice).await,
        503,
        "overloaded",
    );
    assert_eq!(app.status_ok(&daves_task).await["state"], "queued");
    assert_eq!(app.metric("a2a_waiters").await, 3.0);

    // A wait that ends makes room.
    app.send_ok(&alice, &task("alice", "carol")).await;
    carols.await.unwrap().expect(200);
    app.until_metric("a2a_waiters", 2.0).await;
    let r = app.next(&dave, "?wait_ms=20000").await;
    assert_eq!(
        r.expect(200)["task"]["id"].as_str(),
        Some(daves_task.as_str())
    );
    for p in bobs {
        p.abort();
    }
}

both_engines!(a_long_poll_whose_client_goes_away_frees_its_place_and_takes_nothing);
async fn a_long_poll_whose_client_goes_away_frees_its_place_and_takes_nothing(app: TestApp) {
    let bob = app.bob();
    let poll = parked(&app, &bob, LEASE);
    app.until_metric("a2a_waiters", 1.0).await;
    // The client goes away (its connection closes) long before the poll's 20 s are up.
    poll.abort();
    let _ = poll.await;
    app.until_metric("a2a_waiters", 0.0).await;
    // A task sent now is not taken by the gone poll: it waits for the next lease.
    let t = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let (leased, _) = app.lease_some(&bob).await;
    assert_eq!(leased, t);
}
