//! Reading tasks: one task's status, the queued tasks, the queue snapshot and the gauges.

use uuid::Uuid;

use super::{not_found, now_ms, visible_to, Mailbox};
use crate::auth::Caller;
use crate::domain::answers::{Queue, QueueKind, Tasks, TasksKind};
use crate::domain::{QueueState, TaskStatus};
use crate::error::MailboxError;
use crate::metrics::Reading;
use crate::store::TaskRow;

/// Filters of the queue snapshot.
#[derive(Clone, Debug, Default)]
pub struct QueueFilter {
    pub limit: i64,
    pub min_lease_age_ms: Option<i64>,
    /// Only leases idle for less than this (the dashboard's buckets of lease age).
    pub max_lease_age_ms: Option<i64>,
    pub deadline_within_ms: Option<i64>,
    pub state: Option<QueueState>,
}

impl Mailbox {
    /// Whom a caller sees in the listings: everyone (operators), or its own tasks.
    pub(super) fn seen_by(caller: &Caller) -> Option<&str> {
        (!caller.is_operator()).then(|| caller.sub.as_str())
    }

    /// `GET /a2a/tasks/{id}`: 404 when missing or invisible (identical answers).
    pub async fn task_status(&self, caller: &Caller, id: Uuid) -> Result<TaskStatus, MailboxError> {
        match self.store.task(&id.to_string()).await? {
            Some(row) if visible_to(&row, caller) => row.status(),
            _ => Err(not_found(id)),
        }
    }

    /// `GET /a2a/tasks/recent`: queued tasks visible to the caller, oldest first.
    pub async fn recent_tasks(&self, caller: &Caller, limit: i64) -> Result<Tasks, MailboxError> {
        let rows = self.store.queued(Self::seen_by(caller), limit).await?;
        Ok(Tasks {
            kind: TasksKind::Tag,
            tasks: rows.iter().map(TaskRow::task).collect::<Result<_, _>>()?,
        })
    }

    /// `GET /a2a/queue`: queued tasks first (FIFO), then in-flight ones oldest lease first, and
    /// the pending results; all visibility-filtered. Filters apply before the limit.
    pub async fn queue(&self, caller: &Caller, f: &QueueFilter) -> Result<Queue, MailboxError> {
        let now = now_ms();
        let seen_by = Self::seen_by(caller);
        let deadline_max = f.deadline_within_ms.map(|w| now.saturating_add(w));
        let heartbeat_max = f.min_lease_age_ms.map(|a| now.saturating_sub(a));
        let heartbeat_min = f.max_lease_age_ms.map(|a| now.saturating_sub(a));
        let mut tasks: Vec<TaskRow> = Vec::new();
        if f.state != Some(QueueState::InFlight) {
            tasks = self
                .store
                .snapshot_queued(seen_by, f.limit, deadline_max)
                .await?;
        }
        let room = f.limit.saturating_sub(tasks.len() as i64);
        if f.state != Some(QueueState::Queued) && room > 0 {
            let in_flight = self
                .store
                .snapshot_in_flight(seen_by, room, deadline_max, (heartbeat_max, heartbeat_min))
                .await?;
            tasks.extend(in_flight);
        }
        let results = self.store.snapshot_results(seen_by, f.limit).await?;
        Ok(Queue {
            kind: QueueKind::Tag,
            tasks: tasks
                .iter()
                .map(TaskRow::queue_entry)
                .collect::<Result<_, _>>()?,
            results: results
                .iter()
                .filter_map(|r| r.result().transpose())
                .collect::<Result<_, _>>()?,
        })
    }

    /// Queue gauges for `/metrics`, after the storage engine's own samples. Each reads one
    /// partial index: depths are index-only counts of one state's rows and the ages come from
    /// the first entry of an ordered index, so no query walks the whole table.
    pub async fn gauges(&self) -> Result<Vec<Reading>, MailboxError> {
        let now = now_ms();
        let mut out = Vec::new();
        self.store.commit_metrics(&mut out);
        for state in ["queued", "in_flight", "result_pending"] {
            out.push(Reading::gauge(
                "a2a_queue_depth",
                "Tasks per state.",
                format!("{{state=\"{state}\"}}"),
                self.store.count_in_state(state).await? as f64,
            ));
        }
        let (queued_at, leased_at) = self.store.oldest().await?;
        let age =
            |at: Option<i64>| at.map_or(0.0, |at| now.saturating_sub(at).max(0) as f64 / 1000.0);
        out.push(Reading::gauge(
            "a2a_oldest_queued_age_seconds",
            "Age of the task at the head of the queue (since it was queued or requeued).",
            String::new(),
            age(queued_at),
        ));
        out.push(Reading::gauge(
            "a2a_oldest_lease_age_seconds",
            "Age of the oldest in-flight lease, measured from its last heartbeat.",
            String::new(),
            age(leased_at),
        ));
        Ok(out)
    }
}
