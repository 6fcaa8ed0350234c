//! The batch worker: it never holds more leases than it has slots, answers every task, and
//! stops a canceled task's handler while its other slots go on working.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use a2a_mailbox_client::types::{QueueState, ResultStatus, TaskState};
use a2a_mailbox_client::{Client, Leased, NewTask, Outcome, QueueQuery, Reply, Worker};
use tokio::sync::{mpsc, Semaphore};

use super::batches::send_many;
use super::{connect, SOON};
use crate::common::TestApp;

/// How many tasks are in flight (an operator's view).
async fn in_flight(ops: &Client) -> usize {
    let query = QueueQuery {
        state: Some(QueueState::InFlight),
        limit: Some(100),
        ..QueueQuery::default()
    };
    ops.queue(&query).await.unwrap().tasks.len()
}

both_engines!(the_batch_worker_never_holds_more_leases_than_slots);
async fn the_batch_worker_never_holds_more_leases_than_slots(app: TestApp) {
    let alice = connect(&app, app.alice());
    let ops = connect(&app, app.ops());
    let sent = send_many(&alice, 20, "slot").await;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let handler = {
        let gate = gate.clone();
        move |leased: Leased| {
            let (started_tx, gate) = (started_tx.clone(), gate.clone());
            async move {
                started_tx.send(leased.task.id).unwrap();
                gate.acquire().await.unwrap().forget();
                Reply::text(format!("{} done", leased.task.intent_text))
            }
        }
    };
    let (outcome_tx, mut outcomes) = mpsc::unbounded_channel();
    let worker = Worker::new(connect(&app, app.bob()))
        .poll_wait(Duration::from_secs(1))
        .heartbeat_every(Duration::from_millis(50))
        .slots(3);
    let running = tokio::spawn(async move {
        worker
            .run_with(handler, move |o| outcome_tx.send(o).unwrap())
            .await
    });

    // Three handlers block; the worker holds three leases and no more.
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(
            tokio::time::timeout(SOON, started.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    assert_eq!(in_flight(&ops).await, 3);
    let first: HashSet<_> = seen.iter().copied().collect();
    assert_eq!(first, sent[..3].iter().copied().collect());
    // One by one: a freed slot is leased again, never more than three held.
    for _ in 3..20 {
        gate.add_permits(1);
        let id = tokio::time::timeout(SOON, started.recv())
            .await
            .unwrap()
            .unwrap();
        seen.push(id);
        let held = in_flight(&ops).await;
        assert!(held <= 3, "{held} leases held by a worker of 3 slots");
        assert!(started.try_recv().is_err(), "a fourth handler runs");
    }
    gate.add_permits(20);
    let mut answered = HashSet::new();
    while answered.len() < 20 {
        match tokio::time::timeout(SOON, outcomes.recv())
            .await
            .unwrap()
            .unwrap()
        {
            Outcome::Answered { task_id } => assert!(answered.insert(task_id)),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen.iter().copied().collect::<HashSet<_>>(), answered);
    let mut drained = Vec::new();
    while drained.len() < 20 {
        drained.extend(alice.drain_results(100, SOON).await.unwrap());
    }
    assert!(drained.iter().all(|r| r.status == ResultStatus::Ok));
    assert_eq!(in_flight(&ops).await, 0);
    assert!(!running.is_finished());
    running.abort();
}

both_engines!(the_batch_worker_stops_a_canceled_task_and_answers_the_others);
async fn the_batch_worker_stops_a_canceled_task_and_answers_the_others(app: TestApp) {
    let alice = connect(&app, app.alice());
    let long = alice.send(NewTask::new("bob", "forever")).await.unwrap();
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let handler = move |leased: Leased| {
        let started_tx = started_tx.clone();
        async move {
            started_tx.send(leased.task.id).unwrap();
            if leased.task.intent_text == "forever" {
                std::future::pending::<()>().await;
            }
            Reply::text("done")
        }
    };
    let (outcome_tx, mut outcomes) = mpsc::unbounded_channel();
    let worker = Worker::new(connect(&app, app.bob()))
        .poll_wait(Duration::from_secs(1))
        .heartbeat_every(Duration::from_millis(50))
        .slots(2);
    let running = tokio::spawn(async move {
        worker
            .run_with(handler, move |o| outcome_tx.send(o).unwrap())
            .await
    });
    assert_eq!(started.recv().await, Some(long.task_id));
    // The other slot goes on working while the first is stuck.
    let short = send_many(&alice, 3, "short").await;
    let mut answered = HashSet::new();
    while answered.len() < 3 {
        match tokio::time::timeout(SOON, outcomes.recv())
            .await
            .unwrap()
            .unwrap()
        {
            Outcome::Answered { task_id } => answered.insert(task_id),
            other => panic!("{other:?}"),
        };
    }
    assert_eq!(answered, short.iter().copied().collect());
    alice
        .cancel(long.task_id, Some("not needed"))
        .await
        .unwrap();
    let stopped = tokio::time::timeout(SOON, outcomes.recv()).await.unwrap();
    assert_eq!(
        stopped,
        Some(Outcome::Canceled {
            task_id: long.task_id
        })
    );
    let status = alice.get_task(long.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::Canceled);
    assert!(status.result.is_none());
    // Its slot is free again.
    let next = alice.send(NewTask::new("bob", "after")).await.unwrap();
    let outcome = tokio::time::timeout(SOON, outcomes.recv()).await.unwrap();
    assert_eq!(
        outcome,
        Some(Outcome::Answered {
            task_id: next.task_id
        })
    );
    assert!(!running.is_finished());
    running.abort();
}
