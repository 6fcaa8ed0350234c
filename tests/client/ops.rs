//! Operator calls: the queue snapshot, requeue and force_error, the retry gate and the
//! scheduler tick, compaction, the audit feed, the version.

use std::time::Duration;

use a2a_mailbox_client::types::{
    DuplicateRisk, QueueState, RepairAction, RepairedState, ResultStatus, RetryPolicy, SkipReason,
};
use a2a_mailbox_client::{AuditQuery, ErrorCode, NewTask, QueueQuery};

use super::connect;
use crate::common::{full_ops, TestApp};

both_engines!(an_operator_sees_the_queue_repairs_leases_and_compacts);
async fn an_operator_sees_the_queue_repairs_leases_and_compacts(app: TestApp) {
    let alice = connect(&app, app.alice());
    let bob = connect(&app, app.bob());
    let ops = connect(&app, full_ops(&app));
    let first = alice
        .send(NewTask::new("bob", "one").idempotent("k1"))
        .await
        .unwrap();
    let second = alice.send(NewTask::new("bob", "two")).await.unwrap();
    let leased = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    assert_eq!(leased.task.id, first.task_id);

    let snap = ops.queue(&QueueQuery::default()).await.unwrap();
    let states: Vec<_> = snap.tasks.iter().map(|e| (e.task.id, e.state)).collect();
    assert_eq!(
        states,
        [
            (second.task_id, QueueState::Queued),
            (first.task_id, QueueState::InFlight)
        ]
    );
    let only_in_flight = QueueQuery {
        state: Some(QueueState::InFlight),
        limit: Some(5),
        ..QueueQuery::default()
    };
    assert_eq!(ops.queue(&only_in_flight).await.unwrap().tasks.len(), 1);

    // A dry run of the retry gate changes nothing.
    let report = ops.retry_stale(&RetryPolicy::default()).await.unwrap();
    assert_eq!(report.considered, 1);
    assert_eq!(report.skipped[0].reason, SkipReason::Disabled);
    let tick = ops.scheduler_tick().await.unwrap();
    assert!(tick.requeued.is_empty());

    // requeue under the current lease, then force an error on the next lease.
    let outcome = ops
        .requeue(
            first.task_id,
            "worker died",
            DuplicateRisk::Idempotent,
            Some(leased.lease.lease_id),
        )
        .await
        .unwrap();
    assert_eq!(
        (outcome.action, outcome.state),
        (RepairAction::Requeued, RepairedState::Queued)
    );
    let e = ops
        .requeue(
            first.task_id,
            "again",
            DuplicateRisk::OperatorAccepted,
            None,
        )
        .await
        .unwrap_err();
    assert!(e.is(ErrorCode::NotInFlight), "{e}");
    let _second = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    let again = bob.next_task(Duration::ZERO).await.unwrap().unwrap();
    assert_eq!((again.task.id, again.lease.attempt), (first.task_id, 2));
    let outcome = ops
        .force_error(first.task_id, "stuck", "given up", None)
        .await
        .unwrap();
    assert_eq!(outcome.action, RepairAction::ForcedError);
    assert_eq!(outcome.result.unwrap().status, ResultStatus::Error);
    let result = alice.next_result(Duration::ZERO).await.unwrap().unwrap();
    assert_eq!(result.error_message.as_deref(), Some("given up"));

    // The drained task is compacted; the repairs are in the audit feed.
    assert!(ops.compact().await.unwrap() >= 1);
    let rows = ops
        .audit(&AuditQuery {
            kind: Some("a2a_repair_applied".into()),
            limit: Some(10),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.kind["type"] == "a2a_repair_applied"));
    let e = alice.compact().await.unwrap_err();
    assert!(e.is(ErrorCode::CapabilityMissing), "{e}");

    let version = alice.version().await.unwrap();
    assert_eq!(version.name, "a2a-mailbox");
    assert_eq!(version.transports.len(), 1);
}
