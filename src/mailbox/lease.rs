//! Leasing (docs/contract.md#endpoints, docs/contract.md#deadlines): the oldest live task of a
//! recipient, with a new lease id and the next attempt; a queued task past its deadline is resolved
//! with an error instead of being leased.

use std::time::Duration;

use uuid::Uuid;

use super::longpoll::{PollHold, Polled};
use super::takes::Attempt;
use super::{now_ms, Mailbox, WaitFor, Wake};
use crate::auth::{Caller, ScopeCtx};
use crate::domain::answers::{TaskOpt, TaskOptKind};
use crate::domain::{A2ATask, Lease};
use crate::error::MailboxError;
use crate::store::{TaskRow, Tx};

impl Mailbox {
    /// `GET /a2a/tasks/next`: leases the oldest queued task of `recipient`, waiting up to `wait`.
    /// With an attempt id, a retry answers the lease the first take got (if still held).
    pub(super) async fn lease_next_untraced(
        &self,
        caller: &Caller,
        recipient: &str,
        wait: Duration,
        attempt: Option<Attempt>,
    ) -> Result<TaskOpt, MailboxError> {
        let leased = match attempt {
            Some(a) => self
                .lease_batch_untraced(caller, recipient, 1, wait, Some(a))
                .await?
                .leases
                .pop()
                .map(|l| (l.task, l.lease)),
            None => {
                self.may_lease(caller, recipient)?;
                self.long_poll(wait, (WaitFor::Task, recipient, caller), || {
                    self.lease_once(caller, recipient)
                })
                .await?
            }
        };
        let (task, lease) = leased.map_or((None, None), |(t, l)| (Some(t), Some(l)));
        Ok(TaskOpt {
            kind: TaskOptKind::Tag,
            task,
            lease,
        })
    }

    /// Leasing for another recipient needs `a2a.lease.<recipient>`.
    pub(super) fn may_lease(&self, caller: &Caller, recipient: &str) -> Result<(), MailboxError> {
        if recipient != caller.sub.as_str() {
            caller.require(
                &format!("a2a.lease.{recipient}"),
                &ScopeCtx {
                    peer: Some(recipient),
                    ..Default::default()
                },
            )?;
        }
        Ok(())
    }

    async fn lease_once(
        &self,
        caller: &Caller,
        recipient: &str,
    ) -> Result<Polled<(A2ATask, Lease)>, MailboxError> {
        // The common case, where the store has a fast path (PostgreSQL's lane): the head of
        // the queue is live and becomes the lease (no audit row: a lease is recorded in the task
        // row). If it finds nothing (SQLite tries nothing), it stays parked for a later send,
        // which leases its task to it in the same commit.
        let lease_id = Uuid::new_v4().to_string();
        let (claimed, hold) = self
            .store
            .claim_or_hold(recipient, &lease_id, caller.sub.as_str())
            .await;
        if let Some(row) = claimed? {
            return Ok(Polled::Found(self.leased(row)?));
        }
        let parked = hold.map(|hold| PollHold {
            hold,
            settle: |mailbox, outcome| {
                outcome
                    .claimed()?
                    .map(|row| mailbox.leased(row))
                    .transpose()
            },
        });
        // A cheap read, so an empty poll never takes a write transaction (SQLite: never waits
        // for the single writer). Something queued but not claimed above is an expired head
        // (or a head another claim holds): the transaction below walks it.
        if !self.store.any_queued(recipient).await? {
            return Ok(parked.map_or(Polled::Empty, Polled::Waiting));
        }
        // Unparked first: if it was riding in a batch meanwhile, what it took is this poll's.
        if let Some(found) = PollHold::leave(parked, self).await? {
            return Ok(Polled::Found(found));
        }
        let c = caller.clone();
        let r = recipient.to_owned();
        // A claim refuses nothing (an empty queue is an answer): its only failures are faults.
        let (leased, expired) = self
            .store
            .transact_refusing_nothing(Box::new(move |tx| {
                Box::pin(async move { lease_in(tx, &c, &r).await })
            }))
            .await?;
        self.expired(&expired);
        Ok(match leased {
            Some(row) => Polled::Found(self.leased(row)?),
            None => Polled::Empty,
        })
    }

    /// Queued tasks a claim resolved because their deadline passed (each its sender and id):
    /// counted, and their senders, who have an error result to drain, woken.
    pub(super) fn expired(&self, expired: &[(String, String)]) {
        self.metrics
            .add(&self.metrics.deadlines_expired, expired.len() as u64);
        self.woke(&Wake::Many(
            expired
                .iter()
                .map(|(sender, task)| Wake::result(sender, task))
                .collect(),
        ));
    }

    /// A leased row: the task and its lease, counted; whoever follows the sender's tasks is
    /// told.
    pub(super) fn leased(&self, row: TaskRow) -> Result<(A2ATask, Lease), MailboxError> {
        let lease = row
            .lease()?
            .ok_or_else(|| MailboxError::internal("claimed row has no lease"))?;
        self.metrics.inc(&self.metrics.leases);
        self.woke(&Wake::leased(&row.id));
        Ok((row.task()?, lease))
    }
}

/// One claim transaction: walks the head of the recipient's queue, resolving tasks whose
/// deadline has passed (docs/contract.md#deadlines), and leases the first live one. Answers the leased row and the
/// sender and id of each task it expired.
async fn lease_in(
    tx: &mut Tx,
    caller: &Caller,
    recipient: &str,
) -> Result<(Option<TaskRow>, Vec<(String, String)>), MailboxError> {
    let now = now_ms();
    let me = caller.sub.as_str();
    // The head of the queue is live and becomes the lease.
    let lease_id = Uuid::new_v4().to_string();
    if let Some(row) = tx.claim_head(recipient, &lease_id, me, now).await? {
        return Ok((Some(row), Vec::new()));
    }
    // Otherwise the queue is empty or its head has expired: walk it.
    let mut expired = Vec::new();
    loop {
        let Some(head) = tx.queue_head(recipient).await? else {
            return Ok((None, expired));
        };
        if head.deadline_ms.is_some_and(|d| d < now) {
            tx.expire(&head.id, now).await?;
            expired.push((head.sender, head.id));
            continue;
        }
        let lease_id = Uuid::new_v4().to_string();
        let row = tx.lease_task(&head.id, &lease_id, me, now).await?;
        return Ok((Some(row), expired));
    }
}
