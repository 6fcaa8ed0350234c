//! Taking in batches (docs/contract.md#batches): up to `max` tasks leased, or results drained,
//! in one transaction; a long-poll answers as soon as one is there. An attempt id makes a retry
//! of a take whose answer was lost answer what that answer held (the leases still held, the
//! results drained) instead of taking more.

use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use super::longpoll::Polled;
use super::{now_ms, Mailbox, WaitFor};
use crate::auth::Caller;
use crate::domain::answers::{
    LeasedTask, ResultBatchDrained, ResultBatchKind, TaskBatchKind, TaskBatchLeased,
};
use crate::domain::{A2ATask, A2ATaskResult, Lease, TaskState};
use crate::error::{ErrorCode, MailboxError};
use crate::store::{TaskRow, Tx};

/// How long an attempt id answers its first take again.
pub const ATTEMPT_WINDOW_MS: i64 = 5 * 60 * 1000;

/// A take's attempt id: its record's key (per caller) and what the take asked.
#[derive(Clone)]
pub struct Attempt {
    key: String,
    fingerprint: String,
}

impl Attempt {
    /// The attempt `id` of a take described by `asked` (its route and parameters). Its key
    /// starts with a line feed, which no `Idempotency-Key` header can hold: the two never meet.
    pub fn new(id: Uuid, asked: String) -> Attempt {
        Attempt {
            key: format!("\nattempt {id}"),
            fingerprint: format!("attempt {asked}"),
        }
    }

    /// The stored answer of the caller's earlier take with this id, while it is live.
    async fn replayed(&self, mailbox: &Mailbox, me: &str) -> Result<Option<String>, MailboxError> {
        let Some(record) = mailbox.store.key_record(me, &self.key).await? else {
            return Ok(None);
        };
        // An attempt's record is complete at birth and lives until `locked_until_ms`.
        if record.locked_until_ms <= now_ms() {
            return Ok(None);
        }
        if record.fingerprint != self.fingerprint {
            return Err(MailboxError::new(
                ErrorCode::IdempotencyKeyReused,
                "this attempt_id was already used for a different request",
            ));
        }
        Ok(record.response)
    }

    /// Records what the take answered, in its transaction.
    async fn record(
        &self,
        tx: &mut Tx,
        me: &str,
        now: i64,
        answer: &str,
    ) -> Result<(), MailboxError> {
        let until = now.saturating_add(ATTEMPT_WINDOW_MS);
        if !tx
            .reserve_key(me, &self.key, &self.fingerprint, now, until, until)
            .await?
        {
            return Err(MailboxError::new(
                ErrorCode::IdempotencyInFlight,
                "another request with this attempt_id is taking at the same time; retry it",
            ));
        }
        tx.complete_key(me, &self.key, answer).await
    }
}

impl Mailbox {
    /// `GET /a2a/tasks/next?max=`: leases up to `max` of the oldest queued tasks of
    /// `recipient`, each with its own lease, waiting up to `wait` for the first.
    pub(super) async fn lease_batch_untraced(
        &self,
        caller: &Caller,
        recipient: &str,
        max: u32,
        wait: Duration,
        attempt: Option<Attempt>,
    ) -> Result<TaskBatchLeased, MailboxError> {
        self.may_lease(caller, recipient)?;
        let me = caller.sub.as_str();
        let replayed = match &attempt {
            Some(a) => a.replayed(self, me).await?,
            None => None,
        };
        let leased = match replayed {
            Some(answer) => self.leases_still_held(&answer).await?,
            None => {
                let attempt = attempt.as_ref();
                self.long_poll(wait, (WaitFor::Task, recipient, caller), || {
                    self.lease_many_once(caller, recipient, max, attempt)
                })
                .await?
                .unwrap_or_default()
            }
        };
        Ok(TaskBatchLeased {
            kind: TaskBatchKind::Tag,
            leases: leased
                .into_iter()
                .map(|(task, lease)| LeasedTask { task, lease })
                .collect(),
        })
    }

    async fn lease_many_once(
        &self,
        caller: &Caller,
        recipient: &str,
        max: u32,
        attempt: Option<&Attempt>,
    ) -> Result<Polled<Vec<(A2ATask, Lease)>>, MailboxError> {
        // A cheap read, so an empty poll never takes a write transaction.
        if !self.store.any_queued(recipient).await? {
            return Ok(Polled::Empty);
        }
        let me = caller.sub.to_string();
        let r = recipient.to_owned();
        let key = attempt.cloned();
        let op: crate::store::Op<_> = Box::new(move |tx| {
            Box::pin(async move { lease_many_in(tx, &me, &r, max, key.as_ref()).await })
        });
        // Without an attempt a take refuses nothing: its only failures are faults.
        let (rows, expired) = if attempt.is_some() {
            self.store.transact(op).await?
        } else {
            self.store.transact_refusing_nothing(op).await?
        };
        self.expired(&expired);
        if rows.is_empty() {
            return Ok(Polled::Empty);
        }
        let leased = rows
            .into_iter()
            .map(|row| self.leased(row))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Polled::Found(leased))
    }

    /// The leases of a replayed take that their task still holds.
    async fn leases_still_held(&self, answer: &str) -> Result<Vec<(A2ATask, Lease)>, MailboxError> {
        let taken: Vec<(String, String)> =
            serde_json::from_str(answer).map_err(MailboxError::internal)?;
        let mut held = Vec::with_capacity(taken.len());
        for (id, lease_id) in taken {
            let Some(row) = self.store.task(&id).await? else {
                continue;
            };
            if row.state() == TaskState::InFlight && row.lease_id.as_deref() == Some(&lease_id) {
                if let Some(lease) = row.lease()? {
                    held.push((row.task()?, lease));
                }
            }
        }
        Ok(held)
    }

    /// `GET /a2a/results/next?max=`: drains up to `max` of the oldest pending results of the
    /// caller's tasks, waiting up to `wait` for the first.
    pub(super) async fn drain_batch_untraced(
        &self,
        caller: &Caller,
        max: u32,
        wait: Duration,
        attempt: Option<Attempt>,
    ) -> Result<ResultBatchDrained, MailboxError> {
        let me = caller.sub.as_str();
        let replayed = match &attempt {
            Some(a) => a.replayed(self, me).await?,
            None => None,
        };
        let results = match replayed {
            Some(answer) => serde_json::from_str(&answer).map_err(MailboxError::internal)?,
            None => {
                let attempt = attempt.as_ref();
                self.long_poll(wait, (WaitFor::Result, me, caller), || {
                    self.drain_many_once(me, max, attempt)
                })
                .await?
                .unwrap_or_default()
            }
        };
        Ok(ResultBatchDrained {
            kind: ResultBatchKind::Tag,
            results,
        })
    }

    async fn drain_many_once(
        &self,
        me: &str,
        max: u32,
        attempt: Option<&Attempt>,
    ) -> Result<Polled<Vec<A2ATaskResult>>, MailboxError> {
        if !self.store.any_pending(me).await? {
            return Ok(Polled::Empty);
        }
        let who = me.to_owned();
        let key = attempt.cloned();
        let op: crate::store::Op<_> = Box::new(move |tx| {
            Box::pin(async move {
                let now = now_ms();
                let drained = tx.drain_many(&who, now, i64::from(max)).await?;
                let results = drained
                    .into_iter()
                    .map(crate::store::Drained::result)
                    .collect::<Result<Vec<_>, _>>()?;
                if let (Some(a), false) = (&key, results.is_empty()) {
                    let answer = serde_json::to_string(&results).map_err(MailboxError::internal)?;
                    a.record(tx, &who, now, &answer).await?;
                }
                Ok(results)
            })
        });
        let results = if attempt.is_some() {
            self.store.transact(op).await?
        } else {
            self.store.transact_refusing_nothing(op).await?
        };
        Ok(if results.is_empty() {
            Polled::Empty
        } else {
            Polled::Found(results)
        })
    }
}

/// One batch claim: resolves the queue's expired head tasks (docs/contract.md#deadlines), then
/// leases up to `max` live ones, oldest first. Answers the leased rows and the sender and id of
/// each task it expired.
async fn lease_many_in(
    tx: &mut Tx,
    me: &str,
    recipient: &str,
    max: u32,
    attempt: Option<&Attempt>,
) -> Result<(Vec<TaskRow>, Vec<(String, String)>), MailboxError> {
    let now = now_ms();
    let mut expired = Vec::new();
    while let Some(head) = tx.queue_head(recipient).await? {
        if head.deadline_ms.is_none_or(|d| d >= now) {
            break;
        }
        tx.expire(&head.id, now).await?;
        expired.push((head.sender, head.id));
    }
    let rows = tx.claim_many(recipient, me, now, i64::from(max)).await?;
    if let (Some(a), false) = (attempt, rows.is_empty()) {
        let taken: Vec<_> = rows.iter().map(|r| json!([r.id, r.lease_id])).collect();
        a.record(tx, me, now, &json!(taken).to_string()).await?;
    }
    Ok((rows, expired))
}
