//! Reading tasks as their sender follows them one by one (the A2A facade, docs/contract.md#a2a): the sender's
//! read of an answered task delivers its result, as a drain would, and a sender may wait for a
//! task to be answered.

use std::time::Duration;

use uuid::Uuid;

use super::{now_ms, Mailbox, WaitFor};
use crate::auth::Caller;
use crate::domain::{TaskState, TaskStatus};
use crate::error::MailboxError;

impl Mailbox {
    /// Delivers to the caller the pending results among `tasks` that the caller sent: each
    /// becomes `resolved`, as if drained, and so does its entry in `tasks`. A result drained
    /// meanwhile is left alone. Tasks of other senders are not touched.
    pub async fn deliver(
        &self,
        caller: &Caller,
        tasks: &mut [TaskStatus],
    ) -> Result<(), MailboxError> {
        let me = caller.sub.as_str();
        let mine =
            |t: &TaskStatus| t.state == TaskState::ResultPending && t.task.sender.as_str() == me;
        let ids: Vec<String> = tasks
            .iter()
            .filter(|t| mine(t))
            .map(|t| t.task.id.to_string())
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let (sender, now) = (me.to_owned(), now_ms());
        self.store
            .transact(Box::new(move |tx| {
                Box::pin(async move { tx.deliver(&ids, &sender, now).await })
            }))
            .await?;
        for t in tasks.iter_mut().filter(|t| mine(t)) {
            t.state = TaskState::Resolved;
            t.updated_at_ms = now.max(0) as u64;
        }
        Ok(())
    }

    /// The task as [`Mailbox::task_status`] reads it, once it is settled or `wait` has passed,
    /// whichever comes first. Parked while it waits (docs/contract.md#waiting), as a follower of
    /// the task: it reads the task again only when a commit changes it. Once the caller's token
    /// is no longer accepted it answers the task as it last read it, and reads no more.
    pub async fn await_settled(
        &self,
        caller: &Caller,
        id: Uuid,
        wait: Duration,
    ) -> Result<TaskStatus, MailboxError> {
        let deadline = crate::clock::deadline_after(wait);
        let mut status = self.task_status(caller, id).await?;
        if status.state.is_settled() || wait.is_zero() {
            return Ok(status);
        }
        let me = self
            .wakeups
            .park(WaitFor::Follow, &id.to_string(), caller)?;
        let deadline = me.bound(deadline);
        loop {
            me.arm();
            if me.expired() {
                return Ok(status);
            }
            status = self.task_status(caller, id).await?;
            let now = tokio::time::Instant::now();
            if status.state.is_settled() || now >= deadline {
                return Ok(status);
            }
            me.wait(deadline.saturating_duration_since(now)).await;
        }
    }
}
