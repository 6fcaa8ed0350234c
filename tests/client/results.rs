//! Results: posted fenced by the lease, drained by a long-poll, peeked at; a drained task
//! leaves the sender's checkpoint.

use std::time::Duration;

use a2a_mailbox_client::types::{ResultStatus, TaskState};
use a2a_mailbox_client::{ErrorCode, NewTask, Reply};

use super::{connect, SOON};
use crate::common::TestApp;

both_engines!(a_result_is_posted_under_its_lease_and_drained_once);
async fn a_result_is_posted_under_its_lease_and_drained_once(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.bob());
    let sent = alice
        .send(NewTask::new("bob", "add 2 and 2"))
        .await
        .unwrap();
    assert_eq!(alice.checkpoint().active_task_ids, [sent.task_id]);
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();

    // Not the current lease: refused at once, nothing posted.
    let wrong = Reply::text("5").for_task(sent.task_id, Some(uuid::Uuid::now_v7()));
    let e = bob.post_result(&wrong).await.unwrap_err();
    assert!(e.is(ErrorCode::LeaseMismatch) && !e.retriable(), "{e}");

    // A long-poll of the sender is answered by the result posted meanwhile.
    let drainer = alice.clone();
    let drained = tokio::spawn(async move { drainer.next_result(SOON).await });
    let reply = Reply::text("4").for_task(sent.task_id, Some(leased.lease.lease_id));
    let posted = bob.post_result(&reply).await.unwrap();
    assert_eq!(posted.task_id, sent.task_id);
    // Posting the same result again answers like the first time.
    bob.post_result(&reply).await.unwrap();
    let result = drained.await.unwrap().unwrap().expect("the result");
    assert_eq!(
        (result.task_id, result.status),
        (sent.task_id, ResultStatus::Ok)
    );
    assert!(alice.checkpoint().active_task_ids.is_empty());
    assert!(alice.next_result(Duration::ZERO).await.unwrap().is_none());
    assert_eq!(
        alice.get_task(sent.task_id).await.unwrap().state,
        TaskState::Resolved
    );
}

both_engines!(pending_results_can_be_peeked_before_they_are_drained);
async fn pending_results_can_be_peeked_before_they_are_drained(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.bob());
    let sent = alice.send(NewTask::new("bob", "try")).await.unwrap();
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    let reply = Reply::error("cannot").for_task(sent.task_id, Some(leased.lease.lease_id));
    bob.post_result(&reply).await.unwrap();
    let pending = alice.recent_results(10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].status, ResultStatus::Error);
    assert_eq!(pending[0].error_message.as_deref(), Some("cannot"));
    // Peeking drains nothing: the task is still to resume.
    assert_eq!(alice.checkpoint().active_task_ids, [sent.task_id]);
    let status = alice.get_task(sent.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::ResultPending);
    assert_eq!(alice.checkpoint().active_task_ids, [sent.task_id]);
}
