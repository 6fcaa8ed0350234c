//! Example bodies shown in the document: one task, lease and result, reused by every operation
//! that answers them.

use serde_json::{json, Value};

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

pub fn example_task_opt() -> Value {
    json!({"kind": "a2a_task_opt", "task": example_task(), "lease": example_lease()})
}

pub fn example_tasks() -> Value {
    json!({"kind": "a2a_tasks", "tasks": [example_task()]})
}

pub fn example_task_status() -> Value {
    json!({
        "kind": "a2a_task_status",
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

pub fn example_batch() -> Value {
    let mut second = example_task();
    second["id"] = json!("7d4f0c2e-1b3a-4c5d-9e8f-a0b1c2d3e4f5");
    second["recipient"] = json!("ledger@acme");
    json!({"tasks": [example_task(), second]})
}

pub fn example_tasks_queued() -> Value {
    json!({
        "kind": "a2a_tasks_queued",
        "tasks": [
            {"task_id": EXAMPLE_TASK_ID, "replayed": false},
            {"task_id": "7d4f0c2e-1b3a-4c5d-9e8f-a0b1c2d3e4f5", "replayed": true}
        ]
    })
}

pub fn example_task_page() -> Value {
    let mut status = example_task_status();
    status.as_object_mut().map(|s| s.remove("kind"));
    json!({
        "kind": "a2a_task_page",
        "tasks": [status],
        "next_cursor": "1736239990000.0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90"
    })
}

pub fn example_task_children() -> Value {
    let mut status = example_task_status();
    status.as_object_mut().map(|s| s.remove("kind"));
    json!({
        "kind": "a2a_task_children",
        "parent": "9d2b6c1a-3e4f-4a5b-8c7d-0e1f2a3b4c5d",
        "counts": {"queued": 0, "in_flight": 1, "result_pending": 1, "resolved": 1, "canceled": 0},
        "tasks": [status],
        "next_cursor": null
    })
}

pub fn example_task_canceled() -> Value {
    json!({
        "kind": "a2a_task_canceled",
        "task_id": EXAMPLE_TASK_ID,
        "cancellation": {
            "canceled_by": "research@acme",
            "reason": "the customer withdrew the request",
            "previous_state": "in_flight",
            "lease_id": EXAMPLE_LEASE_ID,
            "canceled_at_ms": 1736240005000_u64
        }
    })
}

pub fn example_result_opt() -> Value {
    json!({"kind": "a2a_result_opt", "result": example_result()})
}

pub fn example_results() -> Value {
    json!({"kind": "a2a_results", "results": [example_result()]})
}

pub fn example_queue() -> Value {
    let mut in_flight = json!({"state": "in_flight", "task": example_task()});
    for (k, v) in example_lease().as_object().expect("an object") {
        in_flight[k.as_str()] = v.clone();
    }
    json!({"kind": "a2a_queue", "tasks": [in_flight], "results": []})
}

pub fn example_lease_extended() -> Value {
    let mut lease = example_lease();
    lease["heartbeat_at_ms"] = json!(1736240030000_u64);
    json!({"kind": "a2a_lease_extended", "lease": lease})
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
    json!({"kind": "a2a_repaired", "outcome": {
        "task_id": EXAMPLE_TASK_ID, "action": "requeued", "state": "queued", "attempt": 1
    }})
}

pub fn example_repaired_forced_error() -> Value {
    json!({"kind": "a2a_repaired", "outcome": {
        "task_id": EXAMPLE_TASK_ID, "action": "forced_error", "state": "result_pending", "attempt": 1,
        "result": {"task_id": EXAMPLE_TASK_ID, "status": "error", "content": [],
                   "error_message": "billing is no longer served"}
    }})
}

pub fn example_auto_retried() -> Value {
    json!({"kind": "a2a_auto_retried", "report": {
        "policy": {"enabled": true, "min_lease_age_ms": 300000, "max_attempts": 3, "max_requeues": 1, "scan_limit": 100},
        "considered": 2,
        "requeued": [{"task_id": EXAMPLE_TASK_ID, "lease_id": EXAMPLE_LEASE_ID, "attempt": 1,
                      "idempotency_key": "refund-order-1234"}],
        "skipped": [{"task_id": "9d2b6c1a-3e4f-4a5b-8c7d-0e1f2a3b4c5d", "reason": "lease_too_young",
                     "attempt": 1, "lease_age_ms": 12000}],
        "coalesced": false
    }})
}

pub fn example_audit_events() -> Value {
    json!({"kind": "audit_events", "events": [
        {"id": 7, "timestamp_ms": 1736240040000_u64, "issuer": "operator", "kind": {
            "type": "a2a_repair_applied", "task_id": EXAMPLE_TASK_ID, "action": "requeue",
            "reason": "worker billing-7 crashed mid-task; a second refund attempt is acceptable",
            "lease_id": EXAMPLE_LEASE_ID, "duplicate_risk": "operator_accepted", "attempt": 1}},
        {"id": 6, "timestamp_ms": 1736239990000_u64, "issuer": "research@acme", "kind": {
            "type": "capability_check", "scope_id": "a2a-send:billing@acme",
            "required_actions": ["a2a.send.billing@acme"], "missing_actions": [], "passed": true}}
    ]})
}
