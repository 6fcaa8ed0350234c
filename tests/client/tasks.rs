//! Tasks: send, send a chosen task again, batch, peek, lease (long-poll), heartbeat, read,
//! cancel; refusals carry the contract's code and come back at once.

use std::time::{Duration, Instant};

use a2a_mailbox_client::types::{DuplicateSafety, TaskState};
use a2a_mailbox_client::{AgentId, ErrorCode, NewTask};
use serde_json::json;

use super::{connect, SOON};
use crate::common::TestApp;

both_engines!(a_task_is_sent_peeked_leased_heartbeated_and_read);
async fn a_task_is_sent_peeked_leased_heartbeated_and_read(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.token("bob", json!(["a2a.respond.alice"])));
    let mut meta = serde_json::Map::new();
    meta.insert("ticket".into(), json!("SUP-981"));
    let new = NewTask::new("bob", "summarise the Q3 report")
        .kind("summarise")
        .text("the report")
        .json(json!({"pages": 12}))
        .idempotent("q3-summary")
        .context_id("conversation-1")
        .deadline_ms(u64::MAX >> 2)
        .metadata(meta.clone());
    let sent = alice.send(new).await.unwrap();
    assert!(!sent.replayed && sent.replayed_from.is_none());
    assert_eq!(
        sent.task_id.get_version_num(),
        7,
        "the client picks UUIDv7 ids"
    );

    let status = alice.get_task(sent.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::Queued);
    assert_eq!(
        status.task.sender.as_str(),
        "alice",
        "the sender is the token's sub"
    );
    assert_eq!(status.task.metadata, Some(meta));
    assert_eq!(status.task.content.len(), 2);
    let idem = status.task.idempotency.clone().unwrap();
    assert_eq!(idem.duplicate_safety, DuplicateSafety::Idempotent);

    // The same task sent again is answered like the first time.
    let again = alice.send_task(&status.task).await.unwrap();
    assert_eq!(again.task_id, sent.task_id);
    assert!(again.replayed);

    let recent = bob.recent_tasks(10).await.unwrap();
    assert_eq!(
        recent.iter().map(|t| t.id).collect::<Vec<_>>(),
        [sent.task_id]
    );

    let leased = bob
        .next_task(Duration::ZERO)
        .await
        .unwrap()
        .expect("a task");
    assert_eq!((leased.task.id, leased.lease.attempt), (sent.task_id, 1));
    assert!(bob.next_task(Duration::ZERO).await.unwrap().is_none());
    let lease = bob
        .heartbeat(sent.task_id, leased.lease.lease_id)
        .await
        .unwrap();
    assert_eq!(lease.lease_id, leased.lease.lease_id);
    assert!(lease.heartbeat_at_ms >= leased.lease.heartbeat_at_ms);
    let status = bob.get_task(sent.task_id).await.unwrap();
    assert_eq!(status.state, TaskState::InFlight);
    assert_eq!(status.lease.unwrap().lease_id, lease.lease_id);

    // A stale lease id: 409 lease_mismatch, not retriable.
    let e = bob
        .heartbeat(sent.task_id, uuid::Uuid::now_v7())
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::LeaseMismatch) && !e.retriable(), "{e}");
    assert_eq!(e.status(), Some(409));
}

both_engines!(a_long_poll_answers_when_a_task_arrives);
async fn a_long_poll_answers_when_a_task_arrives(app: TestApp) {
    let alice = connect(&app, app.alice());
    let ops = connect(&app, app.token("ops", json!(["a2a.lease.bob"])));
    let bob = AgentId::parse("bob").unwrap();
    let waiting = tokio::spawn(async move { ops.lease_next(Some(&bob), SOON).await });
    // The poll is parked (or not yet sent): either way it must hand over the task sent now.
    let sent = alice.send(NewTask::new("bob", "late")).await.unwrap();
    let leased = waiting.await.unwrap().unwrap().expect("the task");
    assert_eq!(leased.task.id, sent.task_id);
    assert_eq!(leased.lease.leased_to.as_str(), "ops");
}

both_engines!(a_batch_is_sent_at_once_and_a_refusal_names_its_index);
async fn a_batch_is_sent_at_once_and_a_refusal_names_its_index(app: TestApp) {
    let alice = connect(&app, app.alice());
    let items = alice
        .send_batch(
            (0..3)
                .map(|i| NewTask::new("bob", format!("part {i}")))
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!(items.len(), 3);
    assert!(items.iter().all(|i| !i.replayed));
    assert_eq!(alice.checkpoint().active_task_ids.len(), 3);
    let recent = alice.recent_tasks(10).await.unwrap();
    let ids: Vec<_> = recent.iter().map(|t| t.id).collect();
    assert_eq!(ids, items.iter().map(|i| i.task_id).collect::<Vec<_>>());

    // The second task is for carol, whom alice may not send to: nothing is stored.
    let started = Instant::now();
    let e = alice
        .send_batch(vec![NewTask::new("bob", "ok"), NewTask::new("carol", "no")])
        .await
        .unwrap_err();
    let a2a_mailbox_client::Error::Api(api) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(
        (api.code, api.index, api.retriable),
        (ErrorCode::CapabilityMissing, Some(1), false)
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a refusal is not retried"
    );
    assert_eq!(alice.recent_tasks(10).await.unwrap().len(), 3);
    assert_eq!(alice.checkpoint().active_task_ids.len(), 3);

    // An invalid recipient is refused before any call.
    let e = alice
        .send(NewTask::new("not an id", "x"))
        .await
        .unwrap_err();
    assert!(
        matches!(e, a2a_mailbox_client::Error::InvalidInput(_)),
        "{e:?}"
    );
}

both_engines!(canceling_a_task_ends_it_once_and_an_answered_one_is_not_cancelable);
async fn canceling_a_task_ends_it_once_and_an_answered_one_is_not_cancelable(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.bob());
    let sent = alice.send(NewTask::new("bob", "never mind")).await.unwrap();
    let canceled = alice.cancel(sent.task_id, Some("withdrawn")).await.unwrap();
    assert_eq!(canceled.task_id, sent.task_id);
    assert_eq!(canceled.cancellation.reason.as_deref(), Some("withdrawn"));
    assert_eq!(canceled.cancellation.previous_state, TaskState::Queued);
    assert!(
        alice.checkpoint().active_task_ids.is_empty(),
        "canceled: nothing to drain"
    );
    let again = alice.cancel(sent.task_id, Some("withdrawn")).await.unwrap();
    assert_eq!(again.cancellation, canceled.cancellation);
    assert_eq!(
        alice.get_task(sent.task_id).await.unwrap().state,
        TaskState::Canceled
    );

    // bob cannot cancel alice's task; an answered task is not cancelable.
    let other = alice.send(NewTask::new("bob", "do it")).await.unwrap();
    let e = bob.cancel(other.task_id, None).await.unwrap_err();
    assert!(e.is(ErrorCode::SenderMismatch), "{e}");
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    let reply = a2a_mailbox_client::Reply::text("done");
    bob.post_result(&reply.for_task(other.task_id, Some(leased.lease.lease_id)))
        .await
        .unwrap();
    let e = alice.cancel(other.task_id, None).await.unwrap_err();
    assert!(e.is(ErrorCode::NotCancelable), "{e}");
    let e = alice.get_task(uuid::Uuid::now_v7()).await.unwrap_err();
    assert!(e.is(ErrorCode::NotFound) && e.status() == Some(404), "{e}");
}
