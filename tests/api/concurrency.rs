//! Races (docs/contract.md#endpoints, docs/contract.md#idempotency): concurrency is tested, not
//! assumed.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::common::*;

/// Sends `tasks` with `workers` concurrent clients; asserts each is a 201.
async fn send_all(api: &Api, token: &str, tasks: Vec<Value>, workers: usize) {
    let tasks = Arc::new(tasks);
    let cursor = Arc::new(AtomicUsize::new(0));
    let mut set = JoinSet::new();
    for _ in 0..workers {
        let (api, token, tasks, cursor) =
            (api.clone(), token.to_owned(), tasks.clone(), cursor.clone());
        set.spawn(async move {
            loop {
                let i = cursor.fetch_add(1, Ordering::SeqCst);
                let Some(t) = tasks.get(i) else { break };
                api.send_ok(&token, t).await;
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r.expect("a sender panicked");
    }
}

both_engines!(eight_concurrent_leasers_lease_1000_tasks_exactly_once);
async fn eight_concurrent_leasers_lease_1000_tasks_exactly_once(app: TestApp) {
    const N: usize = 1000;
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let mut tasks: Vec<Value> = (0..N).map(|_| task("alice", "bob")).collect();
    let sent: HashSet<String> = tasks
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    let for_carol = task("alice", "carol");
    tasks.push(for_carol.clone());
    send_all(&app, &alice, tasks, 8).await;

    // 1,001 tasks: the limit clamps to 1,000 instead of refusing or returning everything.
    let ops = app.ops();
    let q = app.queue(&ops, "?limit=5000").await;
    assert_eq!(
        q["tasks"].as_array().unwrap().len(),
        1000,
        "limit=5000 is clamped to 1000"
    );
    let q = app.queue(&ops, "?limit=1000").await;
    assert_eq!(q["tasks"].as_array().unwrap().len(), 1000);

    let mut set = JoinSet::new();
    for w in 0..8 {
        let api = app.api.clone();
        // Half the leasers are bob himself, half hold a2a.lease.bob.
        let (token, query) = if w % 2 == 0 {
            (api.bob(), "?wait_ms=0")
        } else {
            (
                api.token(&format!("worker-{w}"), json!(["a2a.lease.bob"])),
                "?recipient=bob&wait_ms=0",
            )
        };
        set.spawn(async move {
            let mut got = Vec::new();
            loop {
                let r = api.next(&token, query).await;
                let b = r.expect(200);
                if b["task"].is_null() {
                    break;
                }
                assert_eq!(
                    b["lease"]["attempt"], 1,
                    "first lease of a task: {}",
                    r.text
                );
                got.push((
                    b["task"]["id"].as_str().unwrap().to_owned(),
                    b["lease"]["lease_id"].as_str().unwrap().to_owned(),
                ));
            }
            got
        });
    }
    let mut leased = Vec::new();
    while let Some(r) = set.join_next().await {
        leased.extend(r.expect("a leaser panicked"));
    }
    let ids: HashSet<&String> = leased.iter().map(|(id, _)| id).collect();
    let lease_ids: HashSet<&String> = leased.iter().map(|(_, l)| l).collect();
    assert_eq!(
        ids.len(),
        leased.len(),
        "{} leases but only {} distinct tasks: some task was leased twice",
        leased.len(),
        ids.len()
    );
    assert_eq!(lease_ids.len(), leased.len(), "lease ids must be unique");
    assert_eq!(
        leased.len(),
        N,
        "every task is leased exactly once, none lost"
    );
    assert!(
        ids.iter().all(|id| sent.contains(*id)),
        "bob's leasers only get bob's tasks"
    );
    assert!(
        app.lease(&app.bob()).await.is_none(),
        "nothing left for bob"
    );
    let (carols, _) = app.lease_some(&app.carol()).await;
    assert_eq!(carols, for_carol["id"].as_str().unwrap());
}

both_engines!(twenty_concurrent_identical_sends_create_exactly_one_task);
async fn twenty_concurrent_identical_sends_create_exactly_one_task(app: TestApp) {
    let alice = app.alice();
    let t = task("alice", "bob");
    let mut set = JoinSet::new();
    for _ in 0..20 {
        let (api, alice, t) = (app.api.clone(), alice.clone(), t.clone());
        set.spawn(async move { api.send(&alice, &t).await });
    }
    let mut answers = Vec::new();
    while let Some(r) = set.join_next().await {
        answers.push(r.expect("a sender panicked"));
    }
    let created = answers.iter().filter(|r| r.status == 201).count();
    let replays: Vec<&Resp> = answers.iter().filter(|r| r.status == 200).collect();
    let others: Vec<String> = answers
        .iter()
        .filter(|r| r.status != 201 && r.status != 200)
        .map(|r| format!("{} {}", r.status, r.text))
        .collect();
    assert!(
        others.is_empty(),
        "unexpected answers to identical sends: {others:?}"
    );
    assert_eq!(created, 1, "exactly one send creates the task");
    assert_eq!(replays.len(), 19);
    let expected = json!({"kind": "a2a_task_queued", "task_id": t["id"]});
    for r in &answers {
        assert_eq!(r.body, expected, "every answer is the first answer");
    }
    for r in replays {
        assert!(
            r.replayed(),
            "a 200 replay says Idempotent-Replayed: {:?}",
            r.headers
        );
    }
    let q = app.queue(&app.ops(), "?limit=1000").await;
    assert_eq!(
        queue_ids(&q),
        vec![t["id"].as_str().unwrap()],
        "one task: {q}"
    );
    app.lease_some(&app.bob()).await;
    assert!(
        app.lease(&app.bob()).await.is_none(),
        "and it is delivered once"
    );
}

both_engines!(concurrent_sends_of_one_id_with_different_bodies_create_one_task);
async fn concurrent_sends_of_one_id_with_different_bodies_create_one_task(app: TestApp) {
    let alice = app.alice();
    let base = task("alice", "bob");
    let mut set = JoinSet::new();
    for i in 0..10 {
        let (api, alice) = (app.api.clone(), alice.clone());
        let mut t = base.clone();
        t["intent_text"] = json!(format!("variant {i}"));
        set.spawn(async move { (api.send(&alice, &t).await, t) });
    }
    let mut winners = Vec::new();
    while let Some(r) = set.join_next().await {
        let (r, t) = r.expect("a sender panicked");
        match r.status {
            201 => winners.push(t),
            409 => assert_error(&r, 409, "task_id_conflict"),
            _ => panic!("unexpected answer {} {}", r.status, r.text),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one variant wins");
    let s = app.status_ok(base["id"].as_str().unwrap()).await;
    assert_eq!(
        s["task"]["intent_text"], winners[0]["intent_text"],
        "the winner is stored"
    );
}

both_engines!(concurrent_identical_results_are_posted_once);
async fn concurrent_identical_results_are_posted_once(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&bob).await;
    let mut res = result(&id, "ok", "done");
    res["lease_id"] = lease["lease_id"].clone();
    let mut set = JoinSet::new();
    for _ in 0..10 {
        let (api, bob, res) = (app.api.clone(), bob.clone(), res.clone());
        set.spawn(async move { api.post_result(&bob, &res).await });
    }
    let mut statuses = Vec::new();
    while let Some(r) = set.join_next().await {
        let r = r.expect("a poster panicked");
        assert_eq!(
            r.body,
            json!({"kind": "a2a_result_posted", "task_id": id}),
            "{}",
            r.text
        );
        statuses.push(r.status);
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    assert!(app.drain(&alice).await.is_some());
    assert!(app.drain(&alice).await.is_none(), "one result only");
}

both_engines!(concurrent_drains_deliver_each_result_once);
async fn concurrent_drains_deliver_each_result_once(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let mut ids = HashSet::new();
    for _ in 0..6 {
        ids.insert(app.send_ok(&alice, &task("alice", "bob")).await);
    }
    for _ in 0..6 {
        let (id, _) = app.lease_some(&bob).await;
        app.post_result(&bob, &result(&id, "ok", "x"))
            .await
            .expect(201);
    }
    let mut set = JoinSet::new();
    for _ in 0..4 {
        let (api, alice) = (app.api.clone(), alice.clone());
        set.spawn(async move {
            let mut got = Vec::new();
            while let Some(r) = api.drain(&alice).await {
                got.push(r["task_id"].as_str().unwrap().to_owned());
            }
            got
        });
    }
    let mut drained = Vec::new();
    while let Some(r) = set.join_next().await {
        drained.extend(r.expect("a drainer panicked"));
    }
    let distinct: HashSet<String> = drained.iter().cloned().collect();
    assert_eq!(
        distinct.len(),
        drained.len(),
        "a result was drained twice: {drained:?}"
    );
    assert_eq!(distinct, ids, "every result is drained");
}

both_engines!(task_lives_through_waiting_polls_deliver_every_task_and_result_once);
/// The benchmark's closed loop (BENCHMARKS.md), with more waiters than tasks: pairs of agents
/// hand tasks and results to each other through long-polls that are already waiting, and three
/// more workers share one recipient's queue with long-polls of their own. On PostgreSQL a
/// waiting poll is answered by the batch that queued its task or stored its result (see
/// `batching.rs`); on both engines every task is leased once, to its recipient's waiters only,
/// and every result reaches its sender once.
async fn task_lives_through_waiting_polls_deliver_every_task_and_result_once(app: TestApp) {
    const PAIRS: usize = 6;
    const LIVES: usize = 12;
    const SHARED: usize = 24;
    let mut set = JoinSet::new();
    for p in 0..PAIRS {
        let api = app.api.clone();
        let (sender, worker) = (format!("alice-{p}"), format!("worker-{p}"));
        let s_token = app.token(&sender, json!(["a2a.send.*"]));
        let w_token = app.token(&worker, json!(["a2a.respond.*"]));
        set.spawn(async move {
            for life in 0..LIVES {
                let t = task(&sender, &worker);
                let id = t["id"].as_str().unwrap().to_owned();
                // The worker is already waiting when the task is sent, and the sender is
                // already waiting when the result is posted.
                let lease = {
                    let (api, w_token) = (api.clone(), w_token.clone());
                    tokio::spawn(async move { api.next(&w_token, "?wait_ms=20000").await })
                };
                api.send_ok(&s_token, &t).await;
                let r = lease.await.unwrap();
                let got = r.expect(200);
                assert_eq!(
                    got["task"]["id"].as_str(),
                    Some(id.as_str()),
                    "{worker} life {life}"
                );
                assert_eq!(got["lease"]["leased_to"].as_str(), Some(worker.as_str()));
                let drain = {
                    let (api, s_token) = (api.clone(), s_token.clone());
                    tokio::spawn(async move {
                        api.get("/a2a/results/next?wait_ms=20000", &s_token).await
                    })
                };
                let mut answer = result(&id, "ok", &format!("{worker}:{life}"));
                answer["lease_id"] = got["lease"]["lease_id"].clone();
                api.post_result(&w_token, &answer).await.expect(201);
                let r = drain.await.unwrap();
                let drained = &r.expect(200)["result"];
                assert_eq!(
                    drained["task_id"].as_str(),
                    Some(id.as_str()),
                    "{sender} life {life}"
                );
                assert_eq!(drained["content"][0]["text"], format!("{worker}:{life}"));
            }
        });
    }
    // Three workers wait on one shared queue (two of them lease it on its owner's behalf) while
    // its tasks are sent one by one.
    let mut shared = JoinSet::new();
    for w in 0..3 {
        let api = app.api.clone();
        let token = if w == 0 {
            app.token("pool", json!(["a2a.respond.*"]))
        } else {
            app.token(
                &format!("helper-{w}"),
                json!(["a2a.lease.pool", "a2a.respond.*"]),
            )
        };
        shared.spawn(async move {
            let mut mine = Vec::new();
            loop {
                let r = api.next(&token, "?recipient=pool&wait_ms=3000").await;
                let b = r.expect(200);
                match b["task"]["id"].as_str() {
                    Some(id) => mine.push(id.to_owned()),
                    None => return mine,
                }
            }
        });
    }
    let boss = app.token("boss", json!(["a2a.send.pool"]));
    let mut sent = HashSet::new();
    for _ in 0..SHARED {
        sent.insert(app.send_ok(&boss, &task("boss", "pool")).await);
    }
    while let Some(r) = set.join_next().await {
        r.expect("a pair failed");
    }
    let mut leased = HashSet::new();
    while let Some(r) = shared.join_next().await {
        for id in r.expect("a shared-queue worker failed") {
            assert!(leased.insert(id.clone()), "task {id} was leased twice");
        }
    }
    assert_eq!(leased, sent, "every shared task leased exactly once");
    for id in &leased {
        assert_eq!(app.status_ok(id).await["state"], "in_flight");
    }
    let q = app.queue(&app.ops(), "?state=queued&limit=1000").await;
    assert_eq!(
        q["tasks"].as_array().unwrap().len(),
        0,
        "nothing left queued: {q}"
    );
    assert_eq!(
        q["results"].as_array().unwrap().len(),
        0,
        "every result drained: {q}"
    );
}
