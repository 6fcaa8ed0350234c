//! Checkpoints: saved to a file, read back by a new client after the mailbox restarts, and
//! refused, before any call, for another agent.

use std::time::Duration;

use a2a_mailbox_client::types::TaskState;
use a2a_mailbox_client::{Checkpoint, Client, Error, NewTask, Reply};
use serde_json::json;

use super::{connect, SOON};
use crate::common::TestApp;

both_engines!(a_checkpoint_resumes_the_tasks_in_flight_across_a_restart);
async fn a_checkpoint_resumes_the_tasks_in_flight_across_a_restart(mut app: TestApp) {
    let file = app.dir.join("alice.checkpoint.json");
    let (answered, pending, canceled) = {
        let alice = Client::builder(&app.address, app.alice())
            .context_id("conversation-7")
            .build()
            .unwrap();
        let bob = connect(&app, app.bob());
        let mut ids = Vec::new();
        for i in 0..3 {
            ids.push(
                alice
                    .send(NewTask::new("bob", format!("job {i}")))
                    .await
                    .unwrap()
                    .task_id,
            );
        }
        let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
        let reply = Reply::text("first").for_task(leased.task.id, Some(leased.lease.lease_id));
        bob.post_result(&reply).await.unwrap();
        alice.cancel(ids[2], None).await.unwrap();
        let checkpoint = alice.checkpoint();
        assert_eq!(checkpoint.active_task_ids, ids[..2]);
        assert_eq!(checkpoint.context_id.as_deref(), Some("conversation-7"));
        checkpoint.save(&file).unwrap();
        // alice stops here without draining anything.
        (ids[0], ids[1], ids[2])
    };
    app.restart().await;

    let saved = Checkpoint::load(&file).unwrap();
    let (alice, resumed) = Client::from_checkpoint(&app.address, app.alice(), saved)
        .await
        .unwrap();
    let states: Vec<_> = resumed.tasks.iter().map(|s| (s.task.id, s.state)).collect();
    assert_eq!(
        states,
        [
            (answered, TaskState::ResultPending),
            (pending, TaskState::Queued)
        ]
    );
    assert!(resumed.gone.is_empty());
    assert_eq!(
        resumed.tasks[1].task.context_id.as_deref(),
        Some("conversation-7")
    );
    assert_eq!(
        alice.checkpoint().context_id.as_deref(),
        Some("conversation-7")
    );
    assert!(!alice.checkpoint().active_task_ids.contains(&canceled));

    // The rest is drained; every drained task leaves the checkpoint.
    let bob = connect(&app, app.bob());
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    let reply = Reply::text("second").for_task(pending, Some(leased.lease.lease_id));
    bob.post_result(&reply).await.unwrap();
    let mut drained = Vec::new();
    while !alice.checkpoint().active_task_ids.is_empty() {
        drained.push(alice.next_result(SOON).await.unwrap().unwrap().task_id);
    }
    assert_eq!(drained, [answered, pending]);

    // Resuming a checkpoint of only terminal tasks leaves nothing active.
    let mut old = Checkpoint::load(&file).unwrap();
    old.active_task_ids.push(uuid::Uuid::now_v7());
    let fresh = connect(&app, app.alice());
    let resumed = fresh.resume(&old).await.unwrap();
    assert_eq!(resumed.tasks.len(), 2);
    assert_eq!(resumed.gone.len(), 1, "an unknown id is reported gone");
    assert!(fresh.checkpoint().active_task_ids.is_empty());
}

both_engines!(a_checkpoint_of_another_agent_is_refused_without_a_call);
async fn a_checkpoint_of_another_agent_is_refused_without_a_call(app: TestApp) {
    let alice = connect(&app, app.alice());
    alice.send(NewTask::new("bob", "mine")).await.unwrap();
    let checkpoint = alice.checkpoint();
    let carol = app.token("carol", json!(["a2a.send.bob"]));
    // Nothing listens at this address: the refusal cannot come from a call.
    let refused = Client::from_checkpoint("http://127.0.0.1:9", carol.clone(), checkpoint.clone())
        .await
        .unwrap_err();
    match &refused {
        Error::CheckpointAgentMismatch { checkpoint, token } => {
            assert_eq!((checkpoint.as_str(), token.as_str()), ("alice", "carol"));
        }
        other => panic!("{other:?}"),
    }
    assert!(!refused.retriable());
    let live = connect(&app, carol);
    let e = live.resume(&checkpoint).await.unwrap_err();
    assert!(matches!(e, Error::CheckpointAgentMismatch { .. }), "{e:?}");
    assert!(live.checkpoint().active_task_ids.is_empty());
}

/// The environment that makes [`a_sender_that_dies_after_sending`] act: the mailbox, the token and
/// the checkpoint file, separated by newlines.
const CHILD: &str = "A2A_CLIENT_TEST_DYING_SENDER";

/// Run as a child process by the next test: sends two tasks, saves its checkpoint and dies at
/// once (an abort: nothing is drained, nothing is cleaned up). Without [`CHILD`] it does nothing.
#[tokio::test]
async fn a_sender_that_dies_after_sending() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let [base, token, file]: [&str; 3] =
        spec.splitn(3, '\n').collect::<Vec<_>>().try_into().unwrap();
    let alice = super::connect_to(base, token.to_owned());
    for i in 0..2 {
        alice
            .send(NewTask::new("bob", format!("job {i}")))
            .await
            .unwrap();
    }
    alice.checkpoint().save(std::path::Path::new(file)).unwrap();
    std::process::abort();
}

both_engines!(a_sender_process_that_dies_resumes_from_its_checkpoint_file);
async fn a_sender_process_that_dies_resumes_from_its_checkpoint_file(app: TestApp) {
    let file = app.dir.join("dying-sender.checkpoint.json");
    let spec = format!("{}\n{}\n{}", app.address, app.alice(), file.display());
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "client::checkpoint::a_sender_that_dies_after_sending",
            "--nocapture",
        ])
        .env(CHILD, spec)
        .output()
        .unwrap();
    assert!(!child.status.success(), "the sender died: {child:?}");
    let saved = Checkpoint::load(&file).unwrap();
    assert_eq!(saved.active_task_ids.len(), 2, "it checkpointed both sends");
    let (alice, resumed) = Client::from_checkpoint(&app.address, app.alice(), saved)
        .await
        .unwrap();
    assert!(resumed.tasks.iter().all(|s| s.state == TaskState::Queued));
    let bob = connect(&app, app.bob());
    for _ in 0..2 {
        let leased = bob.next_task(SOON).await.unwrap().unwrap();
        let reply = Reply::text("done").for_task(leased.task.id, Some(leased.lease.lease_id));
        bob.post_result(&reply).await.unwrap();
    }
    let mut drained = Vec::new();
    while !alice.checkpoint().active_task_ids.is_empty() {
        drained.push(alice.next_result(SOON).await.unwrap().unwrap().task_id);
    }
    let mut sent = Checkpoint::load(&file).unwrap().active_task_ids;
    sent.sort();
    drained.sort();
    assert_eq!(
        drained, sent,
        "the new process drained what the dead one sent"
    );
}
