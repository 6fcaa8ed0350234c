//! The task row and its conversions to wire types.

use sqlx::FromRow;
use uuid::Uuid;

use crate::auth::Caller;
use crate::domain::{
    A2ATask, A2ATaskResult, AgentId, Content, Lease, QueueEntry, QueueState, ResultStatus,
    TaskState, TaskStatus,
};
use crate::error::MailboxError;

/// The columns every task query selects, in [`TaskRow`] order.
pub const TASK_COLS: &str = "id, sender, recipient, body, state, attempt, lease_id, leased_to, \
    leased_at_ms, heartbeat_at_ms, deadline_ms, duplicate_safety, idem_key, cache_key, replayed_from, \
    result_status, result_content, result_error, result_by, created_at_ms, updated_at_ms";

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
        serde_json::from_str(&self.body).map_err(|_| corrupt("body", &self.id))
    }

    /// Visible to its sender, its recipient, its current lessee and operators (§3).
    pub fn visible_to(&self, caller: &Caller) -> bool {
        let me = caller.sub.as_str();
        self.sender == me
            || self.recipient == me
            || self.leased_to.as_deref() == Some(me)
            || caller.is_operator()
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
            created_at_ms: ms(self.created_at_ms),
            updated_at_ms: ms(self.updated_at_ms),
        })
    }

    /// 409 `lease_mismatch` unless `given` is the current lease. The message names both leases,
    /// so an operator sees what changed since they looked.
    pub fn check_lease(&self, given: &str) -> Result<(), MailboxError> {
        if self.lease_id.as_deref() == Some(given) {
            return Ok(());
        }
        Err(MailboxError::new(
            crate::error::ErrorCode::LeaseMismatch,
            format!(
                "lease {given} is not the current lease of task {} (current lease: {})",
                self.id,
                self.lease_id.as_deref().unwrap_or("none")
            ),
        ))
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
        Some(c) => serde_json::from_str(c).map_err(|_| corrupt("result content", task_id))?,
        None => vec![],
    };
    Ok(A2ATaskResult {
        task_id: parse_uuid(task_id)?,
        status,
        content,
        error_message,
    })
}
