//! Concurrent batch leases never share a task (docs/contract.md#batches): 32 workers taking 16 at
//! a time from 10,000 tasks, across two instances on PostgreSQL. And the batch routes' own body
//! limit.

use std::collections::HashSet;

use tokio::task::JoinSet;

use serde_json::json;

use super::batches::{answer, lease_batch, queue_tasks};
use crate::common::*;

both_engines!(concurrent_batch_leases_never_share_a_task);
async fn concurrent_batch_leases_never_share_a_task(mut app: TestApp) {
    const TASKS: usize = 10_000;
    const WORKERS: usize = 32;
    let sent: HashSet<String> = queue_tasks(&app, "bob", TASKS).await.into_iter().collect();
    // On PostgreSQL half the workers lease through a second instance on the same database.
    let other = match app.engine {
        Engine::Postgres => Some(app.second_instance().await),
        Engine::Sqlite => None,
    };
    let bob = app.bob();
    let mut set = JoinSet::new();
    for w in 0..WORKERS {
        let api = match (&other, w % 2) {
            (Some(o), 1) => o.api.clone(),
            _ => app.api.clone(),
        };
        let bob = bob.clone();
        set.spawn(async move {
            let mut mine = Vec::new();
            loop {
                let leased = lease_batch(&api, &bob, "?max=16").await;
                if leased.is_empty() {
                    return mine;
                }
                mine.extend(leased.into_iter().map(|(id, _)| id));
            }
        });
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    while let Some(mine) = set.join_next().await {
        for id in mine.unwrap() {
            total += 1;
            assert!(seen.insert(id.clone()), "task {id} was leased twice");
        }
    }
    assert_eq!(total, TASKS);
    assert_eq!(seen, sent, "every task leased exactly once");
}

fn small_bodies() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_MAX_BODY_BYTES", "4000")
        .env("A2A_MAILBOX_BATCH_BODY_LIMIT_BYTES", "40000")
}

both_engines!(
    batch_routes_take_bodies_up_to_their_own_limit,
    config = small_bodies
);
async fn batch_routes_take_bodies_up_to_their_own_limit(app: TestApp) {
    queue_tasks(&app, "bob", 1).await;
    let bob = app.bob();
    let leased = lease_batch(&app, &bob, "?max=1").await;
    let (id, lease) = &leased[0];
    let big = answer(id, lease, &"x".repeat(10_000));
    assert_error(&app.post_result(&bob, &big).await, 413, "payload_too_large");
    let r = app
        .post("/a2a/results/batch", &bob, &json!({"results": [big]}))
        .await;
    assert_eq!(r.expect(200)["results"][0]["status"], 201);
    let huge = answer(id, lease, &"x".repeat(50_000));
    let r = app
        .post("/a2a/results/batch", &bob, &json!({"results": [huge]}))
        .await;
    assert_error(&r, 413, "payload_too_large");
}
