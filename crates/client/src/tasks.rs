//! Tasks (docs/contract.md#endpoints, docs/contract.md#cancellation, docs/contract.md#batch): send one or many, lease, heartbeat, read, peek, cancel.

use std::time::Duration;

use serde_json::{Map, Value};
use uuid::Uuid;

use crate::call::{json, Call};
use crate::{AgentId, Client, Error};
use a2a_mailbox_types::answers::{
    LeaseExtended, TaskCanceled, TaskOpt, TaskQueued, TaskStatusBody, Tasks, TasksQueued,
};
use a2a_mailbox_types::{
    A2ATask, BatchItem, CancelRequest, Content, DuplicateSafety, HeartbeatRequest, Idempotency,
    Lease, TaskBatch, TaskStatus, Trace,
};

/// The longest long-poll the mailbox accepts (`wait_ms` 0..=30000).
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// A task to send: everything but the id and the sender, which the client fills in.
///
/// ```
/// use a2a_mailbox_client::NewTask;
///
/// let task = NewTask::new("billing@acme", "refund order 1234")
///     .kind("refund")
///     .json(serde_json::json!({"order": 1234}))
///     .idempotent("refund-order-1234");
/// assert_eq!(task.content.len(), 1);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewTask {
    /// Whom the task is for (an AgentId, checked when sent).
    pub recipient: String,
    /// What to do, in words.
    pub intent_text: String,
    /// The typed kind of the task.
    pub task_kind: Option<String>,
    /// Structured input.
    pub content: Vec<Content>,
    /// The task this one is part of (a fan-out).
    pub parent: Option<Uuid>,
    /// The conversation; the client's own `context_id` when left out.
    pub context_id: Option<String>,
    /// Absolute deadline, epoch milliseconds.
    pub deadline_ms: Option<u64>,
    /// Whether running it twice is safe, and its key (absent: unsafe).
    pub idempotency: Option<Idempotency>,
    /// Free-form JSON kept with the task.
    pub metadata: Option<Map<String, Value>>,
    /// The sender's W3C trace context, handed to whoever leases the task.
    pub trace: Option<Trace>,
}

impl NewTask {
    /// A task for `recipient` described by `intent_text`.
    pub fn new(recipient: impl Into<String>, intent_text: impl Into<String>) -> NewTask {
        NewTask {
            recipient: recipient.into(),
            intent_text: intent_text.into(),
            ..NewTask::default()
        }
    }
    /// Sets the typed kind.
    pub fn kind(mut self, kind: impl Into<String>) -> NewTask {
        self.task_kind = Some(kind.into());
        self
    }
    /// Adds a text block to the content.
    pub fn text(mut self, text: impl Into<String>) -> NewTask {
        self.content.push(Content::Text { text: text.into() });
        self
    }
    /// Adds a JSON block to the content.
    pub fn json(mut self, value: Value) -> NewTask {
        self.content.push(Content::Json { value });
        self
    }
    /// Makes it a child of `parent`.
    pub fn parent(mut self, parent: Uuid) -> NewTask {
        self.parent = Some(parent);
        self
    }
    /// Sets the conversation id.
    pub fn context_id(mut self, context_id: impl Into<String>) -> NewTask {
        self.context_id = Some(context_id.into());
        self
    }
    /// Sets the absolute deadline (epoch milliseconds).
    pub fn deadline_ms(mut self, deadline_ms: u64) -> NewTask {
        self.deadline_ms = Some(deadline_ms);
        self
    }
    /// Declares it safe to run twice, under `key` (the result cache and the retry gate use it).
    pub fn idempotent(mut self, key: impl Into<String>) -> NewTask {
        self.idempotency = Some(Idempotency {
            duplicate_safety: DuplicateSafety::Idempotent,
            key: key.into(),
        });
        self
    }
    /// The W3C trace context of the span that sends the task: the worker that leases it finds
    /// it in the task's `trace`, to link its own span to. Never part of the task's identity: a
    /// retry under another span replays ([`Trace::parse`] makes one from a `traceparent`).
    pub fn trace(mut self, trace: Trace) -> NewTask {
        self.trace = Some(trace);
        self
    }

    /// Sets the free-form metadata object.
    pub fn metadata(mut self, metadata: Map<String, Value>) -> NewTask {
        self.metadata = Some(metadata);
        self
    }

    /// The task as it travels, with its id and sender.
    fn into_task(
        self,
        id: Uuid,
        sender: AgentId,
        context: Option<String>,
    ) -> Result<A2ATask, Error> {
        Ok(A2ATask {
            id,
            sender,
            recipient: AgentId::parse(&self.recipient).map_err(Error::InvalidInput)?,
            intent_text: self.intent_text,
            task_kind: self.task_kind,
            content: self.content,
            parent: self.parent,
            context_id: self.context_id.or(context),
            deadline_ms: self.deadline_ms,
            idempotency: self.idempotency,
            metadata: self.metadata,
            trace: self.trace,
        })
    }
}

/// The mailbox holds the task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The task's id, chosen by the client.
    pub task_id: Uuid,
    /// Set when the result cache answered the task at once (docs/contract.md#the-result-cache): the source task.
    pub replayed_from: Option<Uuid>,
    /// The mailbox already had this task (or this call): it answered its first answer again.
    pub replayed: bool,
}

/// A task leased by this client, with its lease.
#[derive(Clone, Debug, PartialEq)]
pub struct Leased {
    /// The task.
    pub task: A2ATask,
    /// The lease: post the result fenced by its `lease_id`, and heartbeat it.
    pub lease: Lease,
}

impl Client {
    /// Sends a task. The client picks its id (a UUIDv7) and its `Idempotency-Key` once, and
    /// reuses both on every retry, so a retried send never makes a second task.
    ///
    /// ```no_run
    /// # async fn demo(client: a2a_mailbox_client::Client) -> Result<(), a2a_mailbox_client::Error> {
    /// use a2a_mailbox_client::NewTask;
    /// let sent = client.send(NewTask::new("bob", "translate").text("bonjour")).await?;
    /// let status = client.get_task(sent.task_id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send(&self, task: NewTask) -> Result<Sent, Error> {
        let task = self.complete(task, Uuid::now_v7())?;
        self.send_task(&task).await
    }

    /// Sends a task whose id the caller chose (above every retrying layer, e.g. kept in its own
    /// storage). Sending the same task again answers the first answer (`replayed`).
    pub async fn send_task(&self, task: &A2ATask) -> Result<Sent, Error> {
        let answered = self
            .call::<TaskQueued>(Call::post("/a2a/tasks", Some(json(task))))
            .await?;
        self.ledger().track(task.id);
        Ok(Sent {
            task_id: answered.value.task_id,
            replayed_from: answered.value.replayed_from,
            replayed: answered.replayed,
        })
    }

    /// Sends up to 500 tasks in one transaction, all or nothing (docs/contract.md#batch); ids are chosen
    /// here. A refusal names the failing task's position in [`ApiError::index`](crate::ApiError).
    pub async fn send_batch(&self, tasks: Vec<NewTask>) -> Result<Vec<BatchItem>, Error> {
        let tasks = tasks
            .into_iter()
            .map(|t| self.complete(t, Uuid::now_v7()))
            .collect::<Result<Vec<_>, _>>()?;
        let body = TaskBatch {
            tasks: tasks.iter().map(json).collect(),
        };
        let answered = self
            .call::<TasksQueued>(Call::post("/a2a/tasks/batch", Some(json(&body))))
            .await?;
        let mut ledger = self.ledger();
        for t in &tasks {
            ledger.track(t.id);
        }
        Ok(answered.value.tasks)
    }

    /// Leases the oldest task addressed to this agent, waiting up to `wait` (at most 30 s) for
    /// one to arrive; `None` when none did.
    pub async fn next_task(&self, wait: Duration) -> Result<Option<Leased>, Error> {
        self.lease_next(None, wait).await
    }

    /// Leases the oldest task addressed to `recipient` (default: this agent), which needs
    /// `a2a.lease.<recipient>` for another agent.
    pub async fn lease_next(
        &self,
        recipient: Option<&AgentId>,
        wait: Duration,
    ) -> Result<Option<Leased>, Error> {
        let query = recipient
            .map(|r| vec![("recipient", r.to_string())])
            .unwrap_or_default();
        let call = Call::get("/a2a/tasks/next")
            .query(query)
            .consuming(wait.min(MAX_WAIT));
        let opt = self.call::<TaskOpt>(call).await?.value;
        Ok(match (opt.task, opt.lease) {
            (Some(task), Some(lease)) => Some(Leased { task, lease }),
            _ => None,
        })
    }

    /// Extends a lease: 409 `task_canceled` says to stop working on the task.
    pub async fn heartbeat(&self, task_id: Uuid, lease_id: Uuid) -> Result<Lease, Error> {
        let body = json(&HeartbeatRequest { lease_id });
        let path = format!("/a2a/tasks/{task_id}/heartbeat");
        Ok(self
            .call::<LeaseExtended>(Call::post(path, Some(body)))
            .await?
            .value
            .lease)
    }

    /// A task's state, lease, result and cancellation (404 `not_found` when not visible).
    pub async fn get_task(&self, task_id: Uuid) -> Result<TaskStatus, Error> {
        let status = self
            .call::<TaskStatusBody>(Call::get(format!("/a2a/tasks/{task_id}")))
            .await?
            .value
            .status;
        self.ledger().observe(&status);
        Ok(status)
    }

    /// Queued tasks visible to this agent, oldest first (at most `limit`); consumes nothing.
    pub async fn recent_tasks(&self, limit: u32) -> Result<Vec<A2ATask>, Error> {
        let call = Call::get("/a2a/tasks/recent").query(vec![("limit", limit.to_string())]);
        Ok(self.call::<Tasks>(call).await?.value.tasks)
    }

    /// Cancels a queued or in-flight task (its sender, or an operator); canceling it again
    /// answers the first answer, an answered task is 409 `not_cancelable`.
    pub async fn cancel(&self, task_id: Uuid, reason: Option<&str>) -> Result<TaskCanceled, Error> {
        let body = json(&CancelRequest {
            reason: reason.map(str::to_owned),
        });
        let path = format!("/a2a/tasks/{task_id}/cancel");
        let canceled = self
            .call::<TaskCanceled>(Call::post(path, Some(body)))
            .await?;
        self.ledger().forget(task_id);
        Ok(canceled.value)
    }

    /// `task` with its id, this agent as the sender, and the client's context id by default.
    /// The task as sent; without a trace context of its own, it takes the current span's
    /// (feature `otel`), else the client's ([`ClientBuilder::trace`](crate::ClientBuilder::trace)).
    fn complete(&self, mut task: NewTask, id: Uuid) -> Result<A2ATask, Error> {
        if task.trace.is_none() {
            task.trace = crate::otel::current().or_else(|| self.inner.trace.clone());
        }
        let context = self.ledger().context_id.clone();
        task.into_task(id, self.agent_id().clone(), context)
    }
}
