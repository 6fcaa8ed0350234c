//! Following one task as it changes (an A2A stream, docs/contract.md#a2a-streaming): a waiting
//! request of its caller (docs/contract.md#waiting), parked as a follower of the task, so every
//! commit that changes it (a lease, a requeue, a result, a cancel) wakes it and nothing else
//! does.

use std::time::Duration;

use uuid::Uuid;

use super::wakeups::Waiter;
use super::{Mailbox, WaitFor};
use crate::auth::Caller;
use crate::domain::TaskStatus;
use crate::error::MailboxError;

/// A caller following a task: holds a place among the instance's waiting requests until dropped.
pub struct Follow<'a> {
    mailbox: &'a Mailbox,
    caller: &'a Caller,
    id: Uuid,
    parked: Waiter<'a>,
}

impl Mailbox {
    /// Starts following task `id` for `caller` (what the caller may see of it is checked at
    /// each look), or refuses at once as any waiting request past the limits: 429
    /// `too_many_waiting`, 503 `overloaded`.
    pub fn follow<'a>(&'a self, caller: &'a Caller, id: Uuid) -> Result<Follow<'a>, MailboxError> {
        let parked = self
            .wakeups
            .park(WaitFor::Follow, &id.to_string(), caller)?;
        Ok(Follow {
            mailbox: self,
            caller,
            id,
            parked,
        })
    }
}

impl Follow<'_> {
    /// The task as it is now. A commit that changes it from now on ends the next
    /// [`Follow::wait`] at once. Once the caller's token is no longer accepted, 401
    /// `unauthenticated`: the stream ends, and nothing more of the task reaches it.
    pub async fn look(&self) -> Result<TaskStatus, MailboxError> {
        if self.parked.expired() {
            return Err(MailboxError::unauthenticated(
                "the token expired while the request waited (its exp and 30 s of leeway have \
                 passed): nothing more is delivered; ask again with a new token",
            ));
        }
        self.parked.arm();
        self.mailbox.task_status(self.caller, self.id).await
    }

    /// Returns once a commit may have changed the task since the last look, or after `nap`, or
    /// when the caller's token stops being accepted.
    pub async fn wait(&self, nap: Duration) {
        self.parked.wait(nap).await;
    }
}
