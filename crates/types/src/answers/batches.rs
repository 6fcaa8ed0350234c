//! The batch forms of leasing, answering, heartbeating and draining (docs/contract.md#batches):
//! their request bodies and their answers, one item per task in request order.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::{A2ATask, A2ATaskResult, ErrorCode, Lease};

kind_tag!(
    /// Always `"a2a_task_batch"`.
    TaskBatchKind = "a2a_task_batch"
);
kind_tag!(
    /// Always `"a2a_results_posted"`.
    ResultsPostedKind = "a2a_results_posted"
);
kind_tag!(
    /// Always `"a2a_leases_extended"`.
    LeasesExtendedKind = "a2a_leases_extended"
);
kind_tag!(
    /// Always `"a2a_result_batch"`.
    ResultBatchKind = "a2a_result_batch"
);

/// The most tasks one `GET /a2a/tasks/next?max=` leases, or results one
/// `GET /a2a/results/next?max=` drains.
pub const MAX_TAKE: u32 = 100;

/// The most items one `POST /a2a/results/batch` or `POST /a2a/tasks/heartbeat` holds.
pub const MAX_ITEMS: usize = 500;

/// A task leased by `GET /a2a/tasks/next?max=`, with its own lease.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2ALeasedTask))]
pub struct LeasedTask {
    pub task: A2ATask,
    pub lease: Lease,
}

/// `GET /a2a/tasks/next?max=N`: 0 to N leased tasks, oldest first, taken in one transaction.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskBatchLeased {
    pub kind: TaskBatchKind,
    pub leases: Vec<LeasedTask>,
}

/// The body of `POST /a2a/results/batch`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2AResultBatch))]
pub struct ResultBatch {
    /// 1 to 500 results, each as the body of `POST /a2a/results`, no task id twice.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<crate::PostResult>, min_items = 1, max_items = 500))]
    pub results: Vec<Value>,
}

/// One result of `POST /a2a/results/batch`, as a single `POST /a2a/results` would have answered
/// it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2AResultItem))]
pub struct ResultItem {
    pub task_id: Uuid,
    /// The single post's HTTP status: 201 stored, 200 a replay of the same result, or the
    /// status of its refusal.
    pub status: u16,
    /// The refusal's code (absent when stored or replayed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
    /// The refusal, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The same result was stored before: nothing changed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
}

/// `POST /a2a/results/batch`: one item per result, in request order.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResultsPosted {
    pub kind: ResultsPostedKind,
    pub results: Vec<ResultItem>,
}

/// One lease to extend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2ALeaseRef))]
pub struct LeaseRef {
    pub task_id: Uuid,
    pub lease_id: Uuid,
}

/// The body of `POST /a2a/tasks/heartbeat`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2AHeartbeatBatch))]
pub struct HeartbeatBatch {
    /// 1 to 500 leases, no task id twice.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<LeaseRef>, min_items = 1, max_items = 500))]
    pub leases: Vec<Value>,
}

/// One lease of `POST /a2a/tasks/heartbeat`, as a single heartbeat would have answered it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2ALeaseItem))]
pub struct LeaseItem {
    pub task_id: Uuid,
    /// The single heartbeat's HTTP status: 200 extended, or the status of its refusal.
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The refreshed lease (when extended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
}

/// `POST /a2a/tasks/heartbeat`: one item per lease, in request order.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LeasesExtended {
    pub kind: LeasesExtendedKind,
    pub leases: Vec<LeaseItem>,
}

/// `GET /a2a/results/next?max=N`: 0 to N results, oldest first, drained in one transaction.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResultBatchDrained {
    pub kind: ResultBatchKind,
    pub results: Vec<A2ATaskResult>,
}

/// `GET /a2a/tasks/next`: one leased task (without `max`), or a batch (with it).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum NextTasks {
    Batch(TaskBatchLeased),
    One(Box<super::TaskOpt>),
}

/// `GET /a2a/results/next`: one drained result (without `max`), or a batch (with it).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum NextResults {
    Batch(ResultBatchDrained),
    One(super::ResultOpt),
}
