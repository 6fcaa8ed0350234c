//! Where a task stands: its state, its lease, and the views that show it.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{A2ATask, A2ATaskResult, AgentId};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Lease {
    pub lease_id: Uuid,
    pub leased_to: AgentId,
    pub leased_at_ms: u64,
    /// Lease age is measured from this instant; heartbeats refresh it.
    pub heartbeat_at_ms: u64,
    pub attempt: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Queued,
    InFlight,
    ResultPending,
    Resolved,
    /// Terminal: the sender (or an operator) took it back; it has no result.
    Canceled,
}

impl TaskState {
    /// Every state, in the order of a task's life.
    pub const ALL: [TaskState; 5] = [
        TaskState::Queued,
        TaskState::InFlight,
        TaskState::ResultPending,
        TaskState::Resolved,
        TaskState::Canceled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::InFlight => "in_flight",
            TaskState::ResultPending => "result_pending",
            TaskState::Resolved => "resolved",
            TaskState::Canceled => "canceled",
        }
    }
    pub fn parse(s: &str) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|t| t.as_str() == s)
    }
    /// Whether the task's life is over for its sender: answered or canceled.
    pub fn is_settled(self) -> bool {
        !matches!(self, TaskState::Queued | TaskState::InFlight)
    }
}

/// The state filter of `GET /a2a/queue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum QueueState {
    Queued,
    InFlight,
}

/// One task of the queue snapshot. Lease fields are present only when `state` is `in_flight`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskStatus {
    pub task: A2ATask,
    pub state: TaskState,
    pub attempt: u32,
    /// The current lease; `null` unless the task is in flight.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub lease: Option<Lease>,
    /// The result; `null` until the task is answered.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub result: Option<A2ATaskResult>,
    /// Who canceled the task, when and why; `null` unless it is `canceled`.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub cancellation: Option<Cancellation>,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
}

/// How a task was canceled (`POST /a2a/tasks/{id}/cancel`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Cancellation {
    pub canceled_by: AgentId,
    /// The reason the canceller gave, if any.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub reason: Option<String>,
    /// `queued` or `in_flight`: the state the task was canceled in.
    pub previous_state: TaskState,
    /// The lease that the cancellation ended (a task canceled in flight); else `null`.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub lease_id: Option<Uuid>,
    pub canceled_at_ms: u64,
}

/// The body of `POST /a2a/tasks/{id}/cancel`; the body may also be left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = A2ACancelRequest))]
pub struct CancelRequest {
    /// Why the task is canceled: kept in its `cancellation` and the audit row. Not blank, at most
    /// 1,024 characters, no NUL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 1024,
            pattern = r"^[^\u0000]*[^\u0000\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\u0000]*$",
            example = "the customer withdrew the request"
        )
    )]
    pub reason: Option<String>,
}
