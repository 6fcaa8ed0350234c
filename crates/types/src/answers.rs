//! The answer bodies the handlers build: one schema per `kind` tag, so the document names every
//! success shape a client can generate a type for.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{
    A2ATask, A2ATaskResult, AuditEvent, BatchItem, Cancellation, ChildCounts, Lease, QueueEntry,
    RepairOutcome, RetryReport, TaskStatus,
};

/// A one-value enum: the `kind` tag of an answer.
macro_rules! kind_tag {
    ($(#[$doc:meta])* $name:ident = $value:tt) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub enum $name {
            #[default]
            #[serde(rename = $value)]
            Tag,
        }
    };
}

mod batches;
pub use batches::{
    HeartbeatBatch, LeaseItem, LeaseRef, LeasedTask, LeasesExtended, LeasesExtendedKind,
    NextResults, NextTasks, ResultBatch, ResultBatchDrained, ResultBatchKind, ResultItem,
    ResultsPosted, ResultsPostedKind, TaskBatchKind, TaskBatchLeased, MAX_ITEMS, MAX_TAKE,
};

kind_tag!(
    /// Always `"error"`.
    ErrorKind = "error"
);
kind_tag!(
    /// Always `"a2a_task_queued"`.
    TaskQueuedKind = "a2a_task_queued"
);
kind_tag!(
    /// Always `"a2a_task_opt"`.
    TaskOptKind = "a2a_task_opt"
);
kind_tag!(
    /// Always `"a2a_tasks"`.
    TasksKind = "a2a_tasks"
);
kind_tag!(
    /// Always `"a2a_task_status"`.
    TaskStatusKind = "a2a_task_status"
);
kind_tag!(
    /// Always `"a2a_tasks_queued"`.
    TasksQueuedKind = "a2a_tasks_queued"
);
kind_tag!(
    /// Always `"a2a_task_page"`.
    TaskPageKind = "a2a_task_page"
);
kind_tag!(
    /// Always `"a2a_task_children"`.
    TaskChildrenKind = "a2a_task_children"
);
kind_tag!(
    /// Always `"a2a_task_canceled"`.
    TaskCanceledKind = "a2a_task_canceled"
);
kind_tag!(
    /// Always `"a2a_result_posted"`.
    ResultPostedKind = "a2a_result_posted"
);
kind_tag!(
    /// Always `"a2a_result_opt"`.
    ResultOptKind = "a2a_result_opt"
);
kind_tag!(
    /// Always `"a2a_results"`.
    ResultsKind = "a2a_results"
);
kind_tag!(
    /// Always `"a2a_queue"`.
    QueueKind = "a2a_queue"
);
kind_tag!(
    /// Always `"a2a_lease_extended"`.
    LeaseExtendedKind = "a2a_lease_extended"
);
kind_tag!(
    /// Always `"a2a_repaired"`.
    RepairedKind = "a2a_repaired"
);
kind_tag!(
    /// Always `"a2a_auto_retried"`.
    AutoRetriedKind = "a2a_auto_retried"
);
kind_tag!(
    /// Always `"a2a_compacted"`.
    CompactedKind = "a2a_compacted"
);
kind_tag!(
    /// Always `"audit_events"`.
    AuditEventsKind = "audit_events"
);
kind_tag!(
    /// Always `"health"`.
    HealthKind = "health"
);
kind_tag!(
    /// Always `"ready"`.
    ReadyKind = "ready"
);
kind_tag!(
    /// Always `"version"`.
    VersionKind = "version"
);

/// Always `"ok"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum OkStatus {
    Ok,
}

/// The storage engine behind this instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EngineName {
    Sqlite,
    Postgres,
}

/// `POST /a2a/tasks`: the task is queued (or was answered from the result cache).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"kind": "a2a_task_queued", "task_id": "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90"})))]
pub struct TaskQueued {
    // Defaults when absent: an `Idempotency-Key` record stored before the tag was part of the
    // mailbox's answer still reads.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub kind: TaskQueuedKind,
    pub task_id: Uuid,
    /// Present only when the result cache answered the task (docs/contract.md#the-result-cache): the id of the task whose
    /// cached result was copied. No lease ever happens for such a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub replayed_from: Option<Uuid>,
}

/// `GET /a2a/tasks/next`: the leased task and its lease, or both `null` when nothing arrived
/// within `wait_ms`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskOpt {
    pub kind: TaskOptKind,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub task: Option<A2ATask>,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub lease: Option<Lease>,
}

/// `GET /a2a/tasks/recent`: queued tasks visible to the caller, oldest first.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Tasks {
    pub kind: TasksKind,
    pub tasks: Vec<A2ATask>,
}

/// `GET /a2a/tasks/{id}`: the task's status, tagged.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskStatusBody {
    pub kind: TaskStatusKind,
    #[serde(flatten)]
    pub status: TaskStatus,
}

/// `POST /a2a/tasks/batch`: one item per task, in request order.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TasksQueued {
    pub kind: TasksQueuedKind,
    pub tasks: Vec<BatchItem>,
}

/// `GET /a2a/tasks`: one page of tasks, newest first.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskPage {
    pub kind: TaskPageKind,
    pub tasks: Vec<TaskStatus>,
    /// Pass it as `cursor` for the next page; `null` on the last page.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub next_cursor: Option<String>,
}

/// `GET /a2a/tasks/{id}/children`: the children's tally and one page of them.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskChildren {
    pub kind: TaskChildrenKind,
    pub parent: Uuid,
    /// Every visible child by state, whatever the `state` filter and the page.
    pub counts: ChildCounts,
    pub tasks: Vec<TaskStatus>,
    /// Pass it as `cursor` for the next page; `null` on the last page.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub next_cursor: Option<String>,
}

/// `POST /a2a/tasks/{id}/cancel`: the task is canceled (now, or already by an earlier call).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TaskCanceled {
    // Defaults when absent: an `Idempotency-Key` record stored before the tag was part of the
    // mailbox's answer still reads.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub kind: TaskCanceledKind,
    pub task_id: Uuid,
    pub cancellation: Cancellation,
}

/// `POST /a2a/results`: the result is stored for the sender.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"kind": "a2a_result_posted", "task_id": "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90"})))]
pub struct ResultPosted {
    // Defaults when absent: an `Idempotency-Key` record stored before the tag was part of the
    // mailbox's answer still reads.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub kind: ResultPostedKind,
    pub task_id: Uuid,
}

/// `GET /a2a/results/next`: the drained result, or `null` when none arrived within `wait_ms`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResultOpt {
    pub kind: ResultOptKind,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub result: Option<A2ATaskResult>,
}

/// `GET /a2a/results/recent`: pending results of the caller's tasks, oldest first.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Results {
    pub kind: ResultsKind,
    pub results: Vec<A2ATaskResult>,
}

/// `GET /a2a/queue`: a read-only, visibility-filtered snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Queue {
    pub kind: QueueKind,
    /// Queued tasks first (FIFO), then in-flight ones, oldest lease first.
    pub tasks: Vec<QueueEntry>,
    /// Pending results (the filters never apply to them; `limit` does).
    pub results: Vec<A2ATaskResult>,
}

/// `POST /a2a/tasks/{id}/heartbeat`: the refreshed lease.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LeaseExtended {
    pub kind: LeaseExtendedKind,
    pub lease: Lease,
}

/// `POST /a2a/repair`: what the repair did.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Repaired {
    pub kind: RepairedKind,
    pub outcome: RepairOutcome,
}

/// `POST /a2a/retry-stale` and `POST /a2a/scheduler/tick`: the scan's report.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AutoRetried {
    pub kind: AutoRetriedKind,
    pub report: RetryReport,
}

/// `POST /a2a/compact`: how many rows were dropped.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Compacted {
    pub kind: CompactedKind,
    /// Resolved and canceled tasks, expired result-cache entries, expired `Idempotency-Key`
    /// records and audit rows older than the retention.
    pub dropped: u64,
}

/// `GET /audit/recent`: audit rows, newest first.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEvents {
    pub kind: AuditEventsKind,
    pub events: Vec<AuditEvent>,
}

/// `GET /healthz`: the process serves requests.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Health {
    pub kind: HealthKind,
    pub status: OkStatus,
}

/// `GET /readyz`: the database answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Ready {
    pub kind: ReadyKind,
    pub status: OkStatus,
}

/// `GET /version`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Version {
    pub kind: VersionKind,
    #[cfg_attr(feature = "openapi", schema(example = "a2a-mailbox"))]
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(example = "0.1.0"))]
    pub version: String,
    pub engine: EngineName,
    /// What this instance listens on: `tcp:HOST:PORT` and `unix:/PATH` (docs/contract.md#transports).
    #[cfg_attr(feature = "openapi", schema(example = json!(["tcp:127.0.0.1:8080", "unix:/run/a2a/mailbox.sock"])))]
    pub transports: Vec<String>,
}

impl TaskQueued {
    /// The task `task_id` is queued, or (`replayed_from`) answered from the result cache.
    pub fn new(task_id: Uuid, replayed_from: Option<Uuid>) -> TaskQueued {
        TaskQueued {
            kind: TaskQueuedKind::Tag,
            task_id,
            replayed_from,
        }
    }
}

impl ResultPosted {
    /// The result of `task_id` is stored for its sender.
    pub fn new(task_id: Uuid) -> ResultPosted {
        ResultPosted {
            kind: ResultPostedKind::Tag,
            task_id,
        }
    }
}

impl TaskCanceled {
    /// `task_id` is canceled, as `cancellation` says.
    pub fn new(task_id: Uuid, cancellation: Cancellation) -> TaskCanceled {
        TaskCanceled {
            kind: TaskCanceledKind::Tag,
            task_id,
            cancellation,
        }
    }
}
