//! Example bodies of the batch forms: a batch of leases, of results posted, of heartbeats and
//! of drained results, built from the same task, lease and result as every other example.

use serde_json::{json, Value};

use super::examples::{
    example_lease, example_post_result, example_result, example_task, shown, typed,
    EXAMPLE_LEASE_ID, EXAMPLE_TASK_ID,
};
use crate::domain::answers::*;

pub fn example_task_batch() -> Value {
    shown(TaskBatchLeased {
        kind: TaskBatchKind::Tag,
        leases: vec![LeasedTask {
            task: typed(example_task()),
            lease: typed(example_lease()),
        }],
    })
}

pub fn example_result_batch() -> Value {
    shown(ResultBatchDrained {
        kind: ResultBatchKind::Tag,
        results: vec![typed(example_result())],
    })
}

pub fn example_result_batch_body() -> Value {
    json!({"results": [example_post_result()]})
}

pub fn example_results_posted() -> Value {
    json!({"kind": "a2a_results_posted", "results": [
        {"task_id": EXAMPLE_TASK_ID, "status": 201},
        {"task_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "status": 409,
            "code": "lease_mismatch",
            "message": "lease 1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b is not the current lease of task \
                7c9e6679-7425-40de-944b-e07fc1f90ae7 (current lease: 9b2d6a1c-5e3f-4a7b-8c9d-0e1f2a3b4c5d)"}
    ]})
}

pub fn example_heartbeat_batch() -> Value {
    json!({"leases": [{"task_id": EXAMPLE_TASK_ID, "lease_id": EXAMPLE_LEASE_ID}]})
}

pub fn example_leases_extended() -> Value {
    json!({"kind": "a2a_leases_extended", "leases": [
        {"task_id": EXAMPLE_TASK_ID, "status": 200, "lease": example_lease()}
    ]})
}
