//! The worker loop: it answers tasks fenced by their lease, and stops a handler whose task is
//! canceled (its heartbeat answers `task_canceled`), then goes on with the next task.

use std::time::Duration;

use a2a_mailbox_client::types::{ResultStatus, TaskState};
use a2a_mailbox_client::{Leased, NewTask, Reply, Worker};
use tokio::sync::mpsc;

use super::{connect, SOON};
use crate::common::TestApp;

/// Says when it is dropped, that is when the worker stops the handler holding it.
struct Dropped(mpsc::UnboundedSender<uuid::Uuid>, uuid::Uuid);

impl Drop for Dropped {
    fn drop(&mut self) {
        let _ = self.0.send(self.1);
    }
}

both_engines!(the_worker_stops_a_canceled_task_and_answers_the_next);
async fn the_worker_stops_a_canceled_task_and_answers_the_next(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.bob());
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let (dropped_tx, mut dropped) = mpsc::unbounded_channel();
    let handler = move |leased: Leased| {
        let (started_tx, dropped_tx) = (started_tx.clone(), dropped_tx.clone());
        async move {
            let id = leased.task.id;
            let _guard = Dropped(dropped_tx, id);
            started_tx.send(id).unwrap();
            if leased.task.intent_text == "forever" {
                std::future::pending::<()>().await;
            }
            Reply::text(format!("{} done", leased.task.intent_text))
        }
    };
    let worker = Worker::new(bob)
        .poll_wait(Duration::from_secs(1))
        .heartbeat_every(Duration::from_millis(50));
    let running = tokio::spawn(async move { worker.run(handler).await });

    let long = alice.send(NewTask::new("bob", "forever")).await.unwrap();
    assert_eq!(started.recv().await, Some(long.task_id));
    let status = alice.get_task(long.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::InFlight);
    alice
        .cancel(long.task_id, Some("not needed"))
        .await
        .unwrap();
    let stopped = tokio::time::timeout(SOON, dropped.recv()).await;
    assert_eq!(
        stopped.unwrap(),
        Some(long.task_id),
        "the handler was stopped"
    );

    // The loop goes on: the next task is answered under its lease.
    let short = alice.send(NewTask::new("bob", "short")).await.unwrap();
    let result = alice.next_result(SOON).await.unwrap().expect("a result");
    assert_eq!(
        (result.task_id, result.status),
        (short.task_id, ResultStatus::Ok)
    );
    let status = alice.get_task(long.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::Canceled);
    assert!(
        status.result.is_none(),
        "nothing was posted for the canceled task"
    );
    assert!(!running.is_finished());
    running.abort();
}
