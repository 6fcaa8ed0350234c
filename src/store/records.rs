//! What the store reads back: the task row and its conversions to wire types, and the few
//! smaller records the named operations answer.

use sqlx::FromRow;
use uuid::Uuid;

use crate::domain::{
    A2ATask, A2ATaskResult, AgentId, Cancellation, Content, Lease, QueueEntry, QueueState,
    ResultStatus, TaskState, TaskStatus,
};
use crate::error::MailboxError;

#[derive(Debug, Clone, FromRow, serde::Deserialize)]
pub struct TaskRow {
    pub id: String,
    pub sender: String,
    pub recipient: String,
    pub body: String,
    pub state: String,
    pub attempt: i64,
    pub lease_id: Option<String>,
    pub leased_to: Option<String>,
    pub leased_at_ms: Option<i64>,
    pub heartbeat_at_ms: Option<i64>,
    pub deadline_ms: Option<i64>,
    pub duplicate_safety: Option<String>,
    pub idem_key: Option<String>,
    pub cache_key: Option<String>,
    pub replayed_from: Option<String>,
    pub result_status: Option<String>,
    pub result_content: Option<String>,
    pub result_error: Option<String>,
    pub result_by: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub canceled_by: Option<String>,
    pub cancel_reason: Option<String>,
    pub canceled_from: Option<String>,
    pub canceled_at_ms: Option<i64>,
}

/// Reads JSON text the service stored (a task's body, a result's content, an audit row's body,
/// a recorded answer): without a recursion limit, so whatever was accepted, rows written before
/// the nesting limit of free-form values included, reads back (docs/contract.md#free-form-json).
pub fn from_stored<T: serde::de::DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

fn corrupt(what: &str, id: &str) -> MailboxError {
    MailboxError::internal(format!("stored task {id} has an unreadable {what}"))
}

pub fn parse_uuid(s: &str) -> Result<Uuid, MailboxError> {
    Uuid::parse_str(s).map_err(|_| MailboxError::internal(format!("stored id {s:?} is not a uuid")))
}

fn ms(v: i64) -> u64 {
    v.max(0) as u64
}

impl TaskRow {
    pub fn state(&self) -> TaskState {
        TaskState::parse(&self.state).unwrap_or(TaskState::Resolved)
    }

    pub fn task(&self) -> Result<A2ATask, MailboxError> {
        from_stored(&self.body).map_err(|_| corrupt("body", &self.id))
    }

    pub fn lease(&self) -> Result<Option<Lease>, MailboxError> {
        if self.state() != TaskState::InFlight {
            return Ok(None);
        }
        let (Some(lease_id), Some(leased_to)) = (&self.lease_id, &self.leased_to) else {
            return Ok(None);
        };
        Ok(Some(Lease {
            lease_id: parse_uuid(lease_id)?,
            leased_to: AgentId::parse(leased_to).map_err(|_| corrupt("lessee", &self.id))?,
            leased_at_ms: ms(self.leased_at_ms.unwrap_or(0)),
            heartbeat_at_ms: ms(self.heartbeat_at_ms.unwrap_or(0)),
            attempt: self.attempt as u32,
        }))
    }

    pub fn result(&self) -> Result<Option<A2ATaskResult>, MailboxError> {
        let Some(status) = &self.result_status else {
            return Ok(None);
        };
        result_from_columns(
            &self.id,
            status,
            self.result_content.as_deref(),
            self.result_error.clone(),
        )
        .map(Some)
    }

    pub fn status(&self) -> Result<TaskStatus, MailboxError> {
        Ok(TaskStatus {
            task: self.task()?,
            state: self.state(),
            attempt: self.attempt as u32,
            lease: self.lease()?,
            result: self.result()?,
            cancellation: self.cancellation()?,
            created_at_ms: ms(self.created_at_ms),
            updated_at_ms: ms(self.updated_at_ms),
        })
    }

    /// How the task was canceled; `None` unless it is canceled.
    pub fn cancellation(&self) -> Result<Option<Cancellation>, MailboxError> {
        if self.state() != TaskState::Canceled {
            return Ok(None);
        }
        let by = self.canceled_by.as_deref().unwrap_or_default();
        let previous_state = self
            .canceled_from
            .as_deref()
            .and_then(TaskState::parse)
            .ok_or_else(|| corrupt("cancellation", &self.id))?;
        let lease_id = match previous_state {
            TaskState::InFlight => self.lease_id.as_deref().map(parse_uuid).transpose()?,
            _ => None,
        };
        Ok(Some(Cancellation {
            canceled_by: AgentId::parse(by).map_err(|_| corrupt("canceller", &self.id))?,
            reason: self.cancel_reason.clone(),
            previous_state,
            lease_id,
            canceled_at_ms: ms(self.canceled_at_ms.unwrap_or(0)),
        }))
    }

    pub fn queue_entry(&self) -> Result<QueueEntry, MailboxError> {
        let lease = self.lease()?;
        Ok(QueueEntry {
            state: if lease.is_some() {
                QueueState::InFlight
            } else {
                QueueState::Queued
            },
            task: self.task()?,
            attempt: self.attempt as u32,
            lease_id: lease.as_ref().map(|l| l.lease_id),
            leased_to: lease.as_ref().map(|l| l.leased_to.clone()),
            leased_at_ms: lease.as_ref().map(|l| l.leased_at_ms),
            heartbeat_at_ms: lease.as_ref().map(|l| l.heartbeat_at_ms),
        })
    }
}

/// Rebuilds a result from its stored columns.
pub fn result_from_columns(
    task_id: &str,
    status: &str,
    content: Option<&str>,
    error_message: Option<String>,
) -> Result<A2ATaskResult, MailboxError> {
    let status = ResultStatus::parse(status).ok_or_else(|| corrupt("result status", task_id))?;
    let content: Vec<Content> = match content {
        Some(c) => from_stored(c).map_err(|_| corrupt("result content", task_id))?,
        None => vec![],
    };
    Ok(A2ATaskResult {
        task_id: parse_uuid(task_id)?,
        status,
        content,
        error_message,
        trace: None,
    })
}

/// The sender and accepted body of an existing task, for a send that reuses its id.
/// A `COUNT(*) AS n`.
#[derive(FromRow)]
pub(super) struct Count {
    pub(super) n: i64,
}

#[derive(Debug, FromRow)]
pub struct TaskOrigin {
    pub sender: String,
    pub body: String,
    pub replayed_from: Option<String>,
}

/// What the fast result path needs to know of a task before it answers it.
#[derive(Debug, FromRow)]
pub struct LeaseView {
    pub sender: String,
    pub state: String,
    pub leased_to: Option<String>,
    pub lease_id: Option<String>,
    pub cache_key: Option<String>,
}

/// A live entry of the receiver-side result cache.
#[derive(Debug, FromRow)]
pub struct CacheHit {
    pub source_task_id: String,
    pub status: String,
    pub content: String,
    pub error_message: Option<String>,
}

/// The head of a recipient's queue.
#[derive(Debug, FromRow)]
pub struct QueueHead {
    pub id: String,
    pub sender: String,
    pub deadline_ms: Option<i64>,
}

/// A fast write that committed what it made (a task; a result, named by its task's sender), and
/// whether the same commit handed it to a long-poll parked in the engine's lane: then nobody
/// else needs waking for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed<T> {
    pub made: T,
    pub handed: bool,
}

/// A drained result.
#[derive(Debug, FromRow)]
pub struct Drained {
    pub id: String,
    pub result_status: Option<String>,
    pub result_content: Option<String>,
    pub result_error: Option<String>,
    /// The result's own trace context, as JSON text.
    pub result_trace: Option<String>,
}

impl Drained {
    /// The result the sender receives, with its trace context.
    pub fn result(self) -> Result<A2ATaskResult, MailboxError> {
        let mut result = result_from_columns(
            &self.id,
            self.result_status.as_deref().unwrap_or("error"),
            self.result_content.as_deref(),
            self.result_error,
        )?;
        result.trace = self
            .result_trace
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok());
        Ok(result)
    }
}

/// An `Idempotency-Key` record that another request holds or completed.
#[derive(Debug, FromRow)]
pub struct KeyRecord {
    pub fingerprint: String,
    pub state: String,
    /// The stored outcome, once complete.
    pub response: Option<String>,
    pub locked_until_ms: i64,
}

/// One audit row as stored.
#[derive(Debug, FromRow)]
pub struct AuditRow {
    /// The row's UUID (`event_id`; the integer `id` is only its order).
    pub event_id: String,
    pub timestamp_ms: i64,
    pub issuer: String,
    pub kind: String,
    pub body: String,
}

/// What a compaction dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Compacted {
    pub resolved_tasks: u64,
    pub result_cache_entries: u64,
    pub idempotency_keys: u64,
    /// Audit rows older than the retention.
    pub audit_rows: u64,
}
