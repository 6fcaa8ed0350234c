//! Example bodies shown in the document: one task, lease and result, reused by every operation
//! that answers them. The answers are built as the handlers build them, from the typed bodies of
//! `a2a-mailbox-types`.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::domain::answers::*;

pub const EXAMPLE_TASK_ID: &str = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90";
pub const EXAMPLE_LEASE_ID: &str = "5a3c2e1d-0f9b-4d8e-b7a6-1c2d3e4f5a6b";

pub fn example_task() -> Value {
    json!({
        "id": EXAMPLE_TASK_ID,
        "sender": "research@acme",
        "recipient": "billing@acme",
        "intent_text": "Refund order 1234: it was charged twice",
        "task_kind": "refund",
        "content": [
            {"type": "text", "text": "Order 1234 was charged twice on 2025-01-07."},
            {"type": "json", "value": {"order": 1234, "amount_cents": 4200}}
        ],
        "context_id": "conversation-42",
        "deadline_ms": 4102444800000_u64,
        "idempotency": {"duplicate_safety": "idempotent", "key": "refund-order-1234"}
    })
}

pub fn example_lease() -> Value {
    json!({
        "lease_id": EXAMPLE_LEASE_ID,
        "leased_to": "billing@acme",
        "leased_at_ms": 1736240000000_u64,
        "heartbeat_at_ms": 1736240000000_u64,
        "attempt": 1
    })
}

pub fn example_result() -> Value {
    json!({
        "task_id": EXAMPLE_TASK_ID,
        "status": "ok",
        "content": [{"type": "text", "text": "Refunded 42.00 EUR."}]
    })
}

pub fn example_post_result() -> Value {
    let mut r = example_result();
    r["lease_id"] = json!(EXAMPLE_LEASE_ID);
    r
}

/// An example as its type: a typo in an example fails the document's test.
pub(super) fn typed<T: DeserializeOwned>(example: Value) -> T {
    serde_json::from_value(example).expect("an example reads as its type")
}

/// A typed answer as the document shows it.
pub(super) fn shown(body: impl Serialize) -> Value {
    serde_json::to_value(body).expect("an example serialises")
}

fn id(text: &str) -> Uuid {
    text.parse().expect("an example id is a UUID")
}

const OTHER_TASK_ID: &str = "7d4f0c2e-1b3a-4c5d-9e8f-a0b1c2d3e4f5";
const PARENT_TASK_ID: &str = "9d2b6c1a-3e4f-4a5b-8c7d-0e1f2a3b4c5d";

pub fn example_task_queued() -> Value {
    shown(TaskQueued::new(id(EXAMPLE_TASK_ID), None))
}

pub fn example_task_queued_from_cache() -> Value {
    shown(TaskQueued::new(
        id(EXAMPLE_TASK_ID),
        Some(id(PARENT_TASK_ID)),
    ))
}

pub fn example_task_opt() -> Value {
    shown(TaskOpt {
        kind: TaskOptKind::Tag,
        task: Some(typed(example_task())),
        lease: Some(typed(example_lease())),
    })
}

pub fn example_task_opt_empty() -> Value {
    shown(TaskOpt {
        kind: TaskOptKind::Tag,
        task: None,
        lease: None,
    })
}

pub fn example_tasks() -> Value {
    shown(Tasks {
        kind: TasksKind::Tag,
        tasks: vec![typed(example_task())],
    })
}

/// One task's status, without its tag (as a page lists it).
fn task_status() -> Value {
    json!({
        "task": example_task(),
        "state": "in_flight",
        "attempt": 1,
        "lease": example_lease(),
        "result": null,
        "cancellation": null,
        "created_at_ms": 1736239990000_u64,
        "updated_at_ms": 1736240000000_u64
    })
}

pub fn example_task_status() -> Value {
    shown(TaskStatusBody {
        kind: TaskStatusKind::Tag,
        status: typed(task_status()),
    })
}

pub fn example_batch() -> Value {
    let mut second = example_task();
    second["id"] = json!("7d4f0c2e-1b3a-4c5d-9e8f-a0b1c2d3e4f5");
    second["recipient"] = json!("ledger@acme");
    json!({"tasks": [example_task(), second]})
}

pub fn example_tasks_queued() -> Value {
    shown(TasksQueued {
        kind: TasksQueuedKind::Tag,
        tasks: typed(json!([
            {"task_id": EXAMPLE_TASK_ID, "replayed": false},
            {"task_id": OTHER_TASK_ID, "replayed": true}
        ])),
    })
}

pub fn example_task_page() -> Value {
    shown(TaskPage {
        kind: TaskPageKind::Tag,
        tasks: vec![typed(task_status())],
        next_cursor: Some(format!("1736239990000.{EXAMPLE_TASK_ID}")),
    })
}

pub fn example_task_children() -> Value {
    shown(TaskChildren {
        kind: TaskChildrenKind::Tag,
        parent: id(PARENT_TASK_ID),
        counts: typed(json!(
            {"queued": 0, "in_flight": 1, "result_pending": 1, "resolved": 1, "canceled": 0}
        )),
        tasks: vec![typed(task_status())],
        next_cursor: None,
    })
}

pub fn example_task_canceled() -> Value {
    let cancellation = json!({
        "canceled_by": "research@acme",
        "reason": "the customer withdrew the request",
        "previous_state": "in_flight",
        "lease_id": EXAMPLE_LEASE_ID,
        "canceled_at_ms": 1736240005000_u64
    });
    shown(TaskCanceled::new(id(EXAMPLE_TASK_ID), typed(cancellation)))
}

pub fn example_result_opt() -> Value {
    shown(ResultOpt {
        kind: ResultOptKind::Tag,
        result: Some(typed(example_result())),
    })
}

pub fn example_result_opt_empty() -> Value {
    shown(ResultOpt {
        kind: ResultOptKind::Tag,
        result: None,
    })
}

pub fn example_results() -> Value {
    shown(Results {
        kind: ResultsKind::Tag,
        results: vec![typed(example_result())],
    })
}

pub fn example_queue() -> Value {
    let mut in_flight = json!({"state": "in_flight", "task": example_task()});
    for (k, v) in example_lease().as_object().expect("an object") {
        in_flight[k.as_str()] = v.clone();
    }
    shown(Queue {
        kind: QueueKind::Tag,
        tasks: vec![typed(in_flight)],
        results: vec![],
    })
}

pub fn example_lease_extended() -> Value {
    let mut lease = example_lease();
    lease["heartbeat_at_ms"] = json!(1736240030000_u64);
    shown(LeaseExtended {
        kind: LeaseExtendedKind::Tag,
        lease: typed(lease),
    })
}

pub fn example_repair_requeue() -> Value {
    json!({
        "task_id": EXAMPLE_TASK_ID,
        "reason": "worker billing-7 crashed mid-task; a second refund attempt is acceptable",
        "command": {"action": "requeue", "lease_id": EXAMPLE_LEASE_ID, "duplicate_risk": "operator_accepted"}
    })
}

pub fn example_repair_force_error() -> Value {
    json!({
        "task_id": EXAMPLE_TASK_ID,
        "reason": "the billing agent is decommissioned",
        "command": {"action": "force_error", "lease_id": EXAMPLE_LEASE_ID, "message": "billing is no longer served"}
    })
}

pub fn example_repaired_requeued() -> Value {
    shown(Repaired {
        kind: RepairedKind::Tag,
        outcome: typed(json!({
            "task_id": EXAMPLE_TASK_ID, "action": "requeued", "state": "queued", "attempt": 1
        })),
    })
}

pub fn example_repaired_forced_error() -> Value {
    shown(Repaired {
        kind: RepairedKind::Tag,
        outcome: typed(json!({
            "task_id": EXAMPLE_TASK_ID, "action": "forced_error", "state": "result_pending", "attempt": 1,
            "result": {"task_id": EXAMPLE_TASK_ID, "status": "error", "content": [],
                       "error_message": "billing is no longer served"}
        })),
    })
}

pub fn example_auto_retried() -> Value {
    shown(AutoRetried {
        kind: AutoRetriedKind::Tag,
        report: typed(json!({
            "policy": {"enabled": true, "min_lease_age_ms": 300000, "max_attempts": 3,
                       "max_requeues": 1, "scan_limit": 100},
            "considered": 2,
            "requeued": [{"task_id": EXAMPLE_TASK_ID, "lease_id": EXAMPLE_LEASE_ID, "attempt": 1,
                          "idempotency_key": "refund-order-1234"}],
            "skipped": [{"task_id": PARENT_TASK_ID, "reason": "lease_too_young",
                         "attempt": 1, "lease_age_ms": 12000}],
            "coalesced": false
        })),
    })
}

pub fn example_compacted() -> Value {
    shown(Compacted {
        kind: CompactedKind::Tag,
        dropped: 42,
    })
}

pub fn example_audit_events() -> Value {
    shown(AuditEvents {
        kind: AuditEventsKind::Tag,
        events: typed(json!([
            {"id": "01944a3e-8c00-7d2e-9f1a-3b4c5d6e7f80", "timestamp_ms": 1736240040000_u64,
             "issuer": "operator", "kind": {
                "type": "a2a_repair_applied", "task_id": EXAMPLE_TASK_ID, "action": "requeue",
                "reason": "worker billing-7 crashed mid-task; a second refund attempt is acceptable",
                "lease_id": EXAMPLE_LEASE_ID, "duplicate_risk": "operator_accepted", "attempt": 1}},
            {"id": "01944a3d-cb30-7a1b-8c2d-3e4f5a6b7c8d", "timestamp_ms": 1736239990000_u64,
             "issuer": "research@acme", "kind": {
                "type": "capability_check", "scope_id": "a2a-send:billing@acme",
                "required_actions": ["a2a.send.billing@acme"], "missing_actions": [], "passed": true}}
        ])),
    })
}

pub fn example_health() -> Value {
    shown(Health {
        kind: HealthKind::Tag,
        status: OkStatus::Ok,
    })
}

pub fn example_ready() -> Value {
    shown(Ready {
        kind: ReadyKind::Tag,
        status: OkStatus::Ok,
    })
}

pub fn example_version() -> Value {
    shown(Version {
        kind: VersionKind::Tag,
        name: "a2a-mailbox".to_owned(),
        version: "0.1.0".to_owned(),
        engine: crate::store::DEFAULT_ENGINE.answers_as(),
        transports: vec![
            "tcp:127.0.0.1:8080".to_owned(),
            "unix:/run/a2a/mailbox.sock".to_owned(),
        ],
    })
}
