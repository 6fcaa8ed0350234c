//! Where a task stands: its state, its lease, and the views that show it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{A2ATask, A2ATaskResult, AgentId};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Lease {
    pub lease_id: Uuid,
    pub leased_to: AgentId,
    pub leased_at_ms: u64,
    /// Lease age is measured from this instant; heartbeats refresh it.
    pub heartbeat_at_ms: u64,
    pub attempt: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Queued,
    InFlight,
    ResultPending,
    Resolved,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::InFlight => "in_flight",
            TaskState::ResultPending => "result_pending",
            TaskState::Resolved => "resolved",
        }
    }
    pub fn parse(s: &str) -> Option<TaskState> {
        match s {
            "queued" => Some(TaskState::Queued),
            "in_flight" => Some(TaskState::InFlight),
            "result_pending" => Some(TaskState::ResultPending),
            "resolved" => Some(TaskState::Resolved),
            _ => None,
        }
    }
}

/// The state filter of `GET /a2a/queue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueState {
    Queued,
    InFlight,
}

/// One task of the queue snapshot. Lease fields are present only when `state` is `in_flight`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueueEntry {
    pub state: QueueState,
    pub task: A2ATask,
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leased_to: Option<AgentId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leased_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_at_ms: Option<u64>,
}

/// Everything a client resuming from a checkpoint needs to know about one task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskStatus {
    pub task: A2ATask,
    pub state: TaskState,
    pub attempt: u32,
    /// The current lease; `null` unless the task is in flight.
    #[schema(required = true)]
    pub lease: Option<Lease>,
    /// The result; `null` until the task is answered.
    #[schema(required = true)]
    pub result: Option<A2ATaskResult>,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
}
