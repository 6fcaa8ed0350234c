//! The worker loop: lease, work while heartbeating, answer fenced by the lease.

use std::future::Future;
use std::time::Duration;

use uuid::Uuid;

use crate::{BatchWorker, Client, Error, Leased, Reply};
use a2a_mailbox_types::{AgentId, ErrorCode};

/// How one leased task ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The handler's reply was posted.
    Answered {
        /// The task.
        task_id: Uuid,
    },
    /// The task was canceled while the handler worked: the handler was stopped (its future
    /// dropped) and nothing was posted.
    Canceled {
        /// The task.
        task_id: Uuid,
    },
    /// The lease ended otherwise (an operator requeued the task or forced an error): the
    /// handler was stopped, or its reply refused.
    LeaseLost {
        /// The task.
        task_id: Uuid,
        /// What the mailbox answered.
        error: Error,
    },
}

/// Leases tasks one at a time and runs a handler on each: heartbeats the lease while the
/// handler runs, stops the handler when the heartbeat answers `task_canceled`, and posts its
/// reply fenced by the lease.
///
/// ```no_run
/// # async fn demo(client: a2a_mailbox_client::Client) -> Result<(), a2a_mailbox_client::Error> {
/// use a2a_mailbox_client::{Leased, Reply, Worker};
///
/// Worker::new(client)
///     .run(|leased: Leased| async move {
///         Reply::text(format!("done: {}", leased.task.intent_text))
///     })
///     .await
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Worker {
    client: Client,
    recipient: Option<AgentId>,
    poll: Duration,
    heartbeat: Duration,
}

impl Worker {
    /// A worker for the tasks addressed to the client's agent; it long-polls 20 s at a time and
    /// heartbeats every 10 s.
    pub fn new(client: Client) -> Worker {
        Worker {
            client,
            recipient: None,
            poll: Duration::from_secs(20),
            heartbeat: Duration::from_secs(10),
        }
    }

    /// Works on the tasks of `recipient` instead (needs `a2a.lease.<recipient>`).
    pub fn recipient(mut self, recipient: AgentId) -> Worker {
        self.recipient = Some(recipient);
        self
    }

    /// How long one lease attempt waits for a task (at most 30 s).
    pub fn poll_wait(mut self, wait: Duration) -> Worker {
        self.poll = wait;
        self
    }

    /// How often the lease is extended while the handler runs.
    pub fn heartbeat_every(mut self, every: Duration) -> Worker {
        self.heartbeat = every;
        self
    }

    /// Works on up to `n` tasks at once, leasing, heartbeating and answering them in batches
    /// (see [`BatchWorker`]); 0 counts as 1.
    pub fn slots(self, n: u32) -> BatchWorker {
        BatchWorker::new(self.client, self.recipient, self.poll, self.heartbeat, n)
    }

    /// Works until an error that retrying cannot cure (a refused token, a missing capability);
    /// waits and goes on after a mailbox that stays unreachable.
    pub async fn run<H, F>(&self, handler: H) -> Result<(), Error>
    where
        H: Fn(Leased) -> F,
        F: Future<Output = Reply>,
    {
        loop {
            match self.run_once(&handler).await {
                Ok(_) => {}
                Err(e) if e.retriable() => tokio::time::sleep(self.heartbeat).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// Leases one task (waiting up to the poll wait) and works on it; `None` when none came.
    pub async fn run_once<H, F>(&self, handler: &H) -> Result<Option<Outcome>, Error>
    where
        H: Fn(Leased) -> F,
        F: Future<Output = Reply>,
    {
        let Some(leased) = self
            .client
            .lease_next(self.recipient.as_ref(), self.poll)
            .await?
        else {
            return Ok(None);
        };
        let task_id = leased.task.id;
        let lease_id = leased.lease.lease_id;
        let processing = crate::otel::processing(&leased.task);
        let work = processing.run(handler(leased));
        let reply = tokio::select! {
            reply = work => reply,
            stop = self.heartbeats(task_id, lease_id) => return Ok(Some(stop)),
        };
        let posted = self
            .client
            .post_result(&reply.for_task(task_id, Some(lease_id)))
            .await;
        match posted {
            Ok(_) => Ok(Some(Outcome::Answered { task_id })),
            Err(e) => ended(task_id, e).map(Some),
        }
    }

    /// Extends the lease every period until the mailbox says the lease is over.
    async fn heartbeats(&self, task_id: Uuid, lease_id: Uuid) -> Outcome {
        loop {
            tokio::time::sleep(self.heartbeat).await;
            if let Err(e) = self.client.heartbeat(task_id, lease_id).await {
                // A mailbox that stays unreachable is no reason to stop: try again next time.
                if let Ok(stop) = ended(task_id, e) {
                    return stop;
                }
            }
        }
    }
}

/// What an answer about a lease means: the task was canceled, the lease is gone, or (`Err`)
/// another failure.
pub(crate) fn ended(task_id: Uuid, e: Error) -> Result<Outcome, Error> {
    match e.code() {
        Some(ErrorCode::TaskCanceled) => Ok(Outcome::Canceled { task_id }),
        Some(
            ErrorCode::LeaseMismatch
            | ErrorCode::NotInFlight
            | ErrorCode::NotLessee
            | ErrorCode::NotFound
            | ErrorCode::UnknownTask,
        ) => Ok(Outcome::LeaseLost { task_id, error: e }),
        _ => Err(e),
    }
}
