//! Batch send (docs/contract.md#batch): up to 500 tasks in one transaction, all or nothing. Every item passes the
//! gates of a single send ([`Mailbox::send_in`]), in array order; the first refusal decides the
//! answer, names its item's `index`, and nothing of the batch is kept but that refusal's own
//! audit rows, as a single send would leave them.

use serde_json::Value;
use uuid::Uuid;

use super::batch_items::refuse_repeated;
use super::send::{check_send, write_audits, Accepted};
use super::{rule, Cx, Done, Mailbox, Wake};
use crate::auth::Caller;
use crate::domain::answers::TaskQueued;
use crate::error::MailboxError;
use crate::mailbox::Author;
use crate::store::Tx;

/// The most tasks one batch may hold.
pub const MAX_BATCH: usize = 500;

pub use a2a_mailbox_types::BatchItem;

impl Mailbox {
    /// `POST /a2a/tasks/batch`: `tasks` as JSON, each checked like the body of a single send.
    pub(super) async fn send_batch_untraced(
        &self,
        by: Author<'_>,
        tasks: Vec<Value>,
    ) -> Result<Done<Vec<BatchItem>>, MailboxError> {
        if tasks.is_empty() || tasks.len() > MAX_BATCH {
            return Err(MailboxError::invalid(format!(
                "a batch holds 1 to {MAX_BATCH} tasks, not {}",
                tasks.len()
            )));
        }
        refuse_repeated(tasks.iter().enumerate().filter_map(|(index, raw)| {
            let id = raw.get("id").and_then(Value::as_str)?;
            Uuid::parse_str(id).ok().map(|id| (index, id))
        }))?;
        self.write(by, rule!(|this, cx| this.send_batch_in(cx, &tasks)))
            .await
    }

    async fn send_batch_in(
        &self,
        cx: Cx<'_>,
        tasks: &[Value],
    ) -> Result<Done<Vec<BatchItem>>, MailboxError> {
        let Cx { tx, caller, now } = cx;
        // The gates that need no database, item by item up to the first refusal.
        let mut accepted = Vec::with_capacity(tasks.len());
        let mut refused = None;
        for (index, raw) in tasks.iter().enumerate() {
            let checked = check_send(caller, raw, self.body_rules(None));
            match checked.outcome {
                Ok(task) => accepted.push((checked.audits, task)),
                Err(e) => {
                    refused = Some((index, checked.audits, e));
                    break;
                }
            }
        }
        // The accepted items' audit rows and stores, set-based; the first refusal in array
        // order decides: one of the stores (a conflicting id), else the gate that stopped above.
        tx.begin_group().await?;
        write_audits(tx, caller, now, accepted.iter().flat_map(|(a, _)| a)).await?;
        let refusal = match self.store_batch(tx, caller, &accepted, now).await? {
            Err((index, e)) => match accepted.get(index) {
                Some((audits, _)) => (index, audits, e),
                None => return Err(e.at_index(index)),
            },
            Ok((items, wake)) => match refused.as_ref() {
                None => {
                    tx.end_group().await?;
                    let created = items.iter().any(|i| !i.replayed);
                    return Ok(Done {
                        created,
                        replayed: !created,
                        ..Done::created(items)
                    }
                    .waking(wake));
                }
                Some((index, audits, e)) => (*index, audits, e.clone()),
            },
        };
        // Nothing of the batch is kept but the refused item's audit rows, as a single send of
        // it would leave them.
        let (index, audits, e) = refusal;
        tx.undo_group().await?;
        write_audits(tx, caller, now, audits).await?;
        tx.end_group().await?;
        Err(e.at_index(index))
    }

    /// Stores the accepted items in array order: runs of items without a cache key as one
    /// insert each, an item with one through the single send's own path. `Ok(Err((index, e)))`
    /// is the first item refused (its id is another task's).
    async fn store_batch(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        accepted: &[(Vec<(&'static str, Value)>, Accepted)],
        now: i64,
    ) -> Result<Result<(Vec<BatchItem>, Wake), (usize, MailboxError)>, MailboxError> {
        let mut items = Vec::with_capacity(accepted.len());
        let mut wakes = Vec::with_capacity(accepted.len());
        let (mut at, mut rest) = (0usize, accepted);
        while let Some((_, first)) = rest.first() {
            let run = rest
                .iter()
                .take_while(|(_, a)| a.cache_key.is_none())
                .count();
            let Some((this, later)) = rest.split_at_checked(run.max(1)) else {
                break;
            };
            let outcomes = if run == 0 {
                vec![self.store_send(tx, caller, first, now).await]
            } else {
                self.insert_run(tx, this, now).await?
            };
            for (offset, outcome) in outcomes.into_iter().enumerate() {
                match outcome {
                    Ok(done) => {
                        wakes.push(done.wake);
                        items.push(BatchItem {
                            task_id: done.value.task_id,
                            replayed: done.replayed,
                            replayed_from: done.value.replayed_from,
                        })
                    }
                    Err(e) if e.is_refusal() => return Ok(Err((at.saturating_add(offset), e))),
                    Err(e) => return Err(e),
                }
            }
            at = at.saturating_add(this.len());
            rest = later;
        }
        Ok(Ok((items, Wake::Many(wakes))))
    }

    /// Items without a cache key, inserted by one statement; an id that exists is answered as
    /// the single send answers it (a replay, or a conflict).
    async fn insert_run(
        &self,
        tx: &mut Tx,
        run: &[(Vec<(&'static str, Value)>, Accepted)],
        now: i64,
    ) -> Result<Vec<Result<Done<TaskQueued>, MailboxError>>, MailboxError> {
        let rows: Vec<_> = run.iter().map(|(_, a)| a.stored()).collect();
        let inserted = tx.insert_tasks(&rows, now).await?;
        self.metrics
            .add(&self.metrics.tasks_sent, inserted.len() as u64);
        let mut outcomes = Vec::with_capacity(run.len());
        for (_, a) in run {
            outcomes.push(if inserted.contains(&a.id) {
                Ok(Done::created(TaskQueued::new(a.task.id, None))
                    .waking(Wake::Recipient(a.task.recipient.to_string())))
            } else {
                self.replay_after_race(tx, &a.task, &a.body).await
            });
        }
        Ok(outcomes)
    }
}
