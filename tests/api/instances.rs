//! Several server processes on one database (docs/operations.md#several-instances: any number of
//! instances can serve one database): races are decided by the database, and long-polls see
//! other instances' work.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::common::*;

both_engines!(two_instances_never_lease_the_same_task);
async fn two_instances_never_lease_the_same_task(mut app: TestApp) {
    const N: usize = 300;
    let other = app.second_instance().await;
    let alice = app.alice();
    let mut sent = HashSet::new();
    for i in 0..N {
        let t = task("alice", "bob");
        let via: &Api = if i % 2 == 0 { &app } else { &other };
        sent.insert(via.send_ok(&alice, &t).await);
    }

    let mut set = JoinSet::new();
    for w in 0..8 {
        let api = if w % 2 == 0 {
            app.api.clone()
        } else {
            other.api.clone()
        };
        set.spawn(async move {
            let bob = api.bob();
            let mut got = Vec::new();
            while let Some((t, _)) = api.lease(&bob).await {
                got.push(t["id"].as_str().unwrap().to_owned());
            }
            got
        });
    }
    let mut leased = Vec::new();
    while let Some(r) = set.join_next().await {
        leased.extend(r.expect("a leaser panicked"));
    }
    let distinct: HashSet<String> = leased.iter().cloned().collect();
    assert_eq!(
        distinct.len(),
        leased.len(),
        "a task was leased twice across instances"
    );
    assert_eq!(distinct, sent, "every task leased exactly once");
}

both_engines!(identical_sends_through_two_instances_create_one_task);
async fn identical_sends_through_two_instances_create_one_task(mut app: TestApp) {
    let other = app.second_instance().await;
    let alice = app.alice();
    let t = task("alice", "bob");
    let mut set = JoinSet::new();
    for i in 0..10 {
        let api = if i % 2 == 0 {
            app.api.clone()
        } else {
            other.api.clone()
        };
        let (alice, t) = (alice.clone(), t.clone());
        set.spawn(async move { api.send(&alice, &t).await });
    }
    let mut statuses = Vec::new();
    while let Some(r) = set.join_next().await {
        let r = r.expect("a sender panicked");
        assert_eq!(
            r.body,
            json!({"kind": "a2a_task_queued", "task_id": t["id"]}),
            "{} {}",
            r.status,
            r.text
        );
        statuses.push(r.status);
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    let q: Value = other.queue(&other.ops(), "").await;
    assert_eq!(queue_ids(&q), vec![t["id"].as_str().unwrap()]);
}

both_engines!(a_long_poll_on_one_instance_sees_a_task_sent_through_another);
async fn a_long_poll_on_one_instance_sees_a_task_sent_through_another(mut app: TestApp) {
    let other = app.second_instance().await;
    let (alice, bob, carol) = (app.alice(), app.bob(), app.carol());
    let t = task("alice", "bob");
    // On PostgreSQL the other instance's NOTIFY wakes the poll at once. SQLite has no channel
    // between processes: a poll learns of another process's task when its wait ends.
    let (wait, within) = match app.engine {
        Engine::Postgres => ("?wait_ms=20000", Duration::from_millis(3000)),
        Engine::Sqlite => ("?wait_ms=1500", Duration::from_millis(4500)),
    };
    let poll = |token: &str| {
        let (api, token) = (app.api.clone(), token.to_owned());
        tokio::spawn(async move { api.next(&token, wait).await })
    };
    let (bobs, carols) = (poll(&bob), poll(&carol));
    app.until_metric("a2a_waiters", 2.0).await;
    let woken = app.metric("a2a_wakeups_total").await;
    let started = Instant::now();
    other.send_ok(&alice, &t).await;
    let poll = bobs.await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(
        poll.expect(200)["task"]["id"],
        t["id"],
        "the poll on instance A must get the task sent through instance B"
    );
    assert!(
        elapsed < within,
        "the poll should get the task sent through the other instance, took {elapsed:?}"
    );
    if app.engine == Engine::Postgres {
        // The notification named bob: carol's poll on instance A was not woken.
        app.until_metric("a2a_waiters", 1.0).await;
        assert_eq!(app.metric("a2a_wakeups_total").await, woken + 1.0);
        assert!(!carols.is_finished());
    }
    carols.abort();
}

/// A waiting lease of bob's on `api`, answered in the background.
fn waiting_lease(
    api: &Api,
    token: &str,
    wait_ms: u64,
) -> tokio::task::JoinHandle<(Resp, Duration)> {
    let (api, token) = (api.clone(), token.to_owned());
    tokio::spawn(async move {
        let started = Instant::now();
        let r = api.next(&token, &format!("?wait_ms={wait_ms}")).await;
        (r, started.elapsed())
    })
}

/// The id of the task a waiting lease got, which it must have got well before its wait ran out.
async fn leased_at_once(poll: tokio::task::JoinHandle<(Resp, Duration)>, whose: &str) -> String {
    let (r, took) = poll.await.expect("a waiting lease panicked");
    let id = r.expect(200)["task"]["id"].as_str().map(str::to_owned);
    assert!(
        took < Duration::from_secs(5),
        "{whose} waiting lease was answered after {took:?} ({}): a task sent for it waited \
         for the wait to run out",
        r.text
    );
    id.unwrap_or_else(|| panic!("{whose} waiting lease got no task: {}", r.text))
}

both_engines!(a_batch_wakes_a_waiting_lease_on_each_instance);
async fn a_batch_wakes_a_waiting_lease_on_each_instance(mut app: TestApp) {
    // On PostgreSQL one lease waits on each of two instances; SQLite serves one process, where
    // both wait on the same instance. Either way a batch of two tasks sent through the first
    // instance answers both at once, not one at once and the other when its wait runs out.
    let other = match app.engine {
        Engine::Postgres => Some(app.second_instance().await),
        Engine::Sqlite => None,
    };
    let (alice, bob) = (app.alice(), app.bob());
    let second: &Api = other.as_deref().unwrap_or(&app.api);
    if let Some(other) = &other {
        // The instances know of each other: a task sent through the first wakes the second's.
        let poll = waiting_lease(other, &bob, 15_000);
        other.until_metric("a2a_waiters", 1.0).await;
        let t = task("alice", "bob");
        app.send_ok(&alice, &t).await;
        assert_eq!(leased_at_once(poll, "the other instance's").await, t["id"]);
    }
    let first_poll = waiting_lease(&app, &bob, 15_000);
    app.until_metric("a2a_waiters", 1.0).await;
    let second_poll = waiting_lease(second, &bob, 15_000);
    match &other {
        Some(other) => other.until_metric("a2a_waiters", 1.0).await,
        None => app.until_metric("a2a_waiters", 2.0).await,
    }
    let tasks = [task("alice", "bob"), task("alice", "bob")];
    let r = app
        .post("/a2a/tasks/batch", &alice, &json!({ "tasks": tasks }))
        .await;
    r.expect(201);
    let mut got = HashSet::new();
    got.insert(leased_at_once(first_poll, "the first").await);
    got.insert(leased_at_once(second_poll, "the second").await);
    let sent: HashSet<String> = tasks
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(got, sent, "each waiting lease got one task of the batch");
}
