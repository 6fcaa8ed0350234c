//! Batch send (§14): up to 500 tasks in one transaction, all or nothing. Every item passes the
//! gates of a single send ([`Mailbox::send_in`]), in array order; the first refusal decides the
//! answer, names its item's `index`, and nothing of the batch is kept but that refusal's own
//! audit rows, as a single send would leave them.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::{rule, Done, IdemRequest, Mailbox, Wake};
use crate::auth::Caller;
use crate::error::MailboxError;
use crate::store::Tx;

/// The most tasks one batch may hold.
pub const MAX_BATCH: usize = 500;

/// One item of a batch's answer, in request order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchItem {
    pub task_id: Uuid,
    /// The task already existed with this body: its first answer again.
    pub replayed: bool,
    /// Answered at once from the result cache with a copy of this task's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed_from: Option<Uuid>,
}

impl Mailbox {
    /// `POST /a2a/tasks/batch`: `tasks` as JSON, each checked like the body of a single send.
    pub async fn send_batch(
        &self,
        caller: &Caller,
        idem: Option<&IdemRequest>,
        tasks: Vec<Value>,
    ) -> Result<Done<Vec<BatchItem>>, MailboxError> {
        if tasks.is_empty() || tasks.len() > MAX_BATCH {
            return Err(MailboxError::invalid(format!(
                "a batch holds 1 to {MAX_BATCH} tasks, not {}",
                tasks.len()
            )));
        }
        refuse_repeated_ids(&tasks)?;
        self.write(
            caller,
            idem,
            rule!(|this, tx, c| this.send_batch_in(tx, &c, &tasks)),
        )
        .await
    }

    async fn send_batch_in(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        tasks: &[Value],
    ) -> Result<Done<Vec<BatchItem>>, MailboxError> {
        tx.begin_group().await?;
        let mut items = Vec::with_capacity(tasks.len());
        for (index, raw) in tasks.iter().enumerate() {
            match self.send_in(tx, caller, raw).await {
                Ok(done) => items.push(BatchItem {
                    task_id: done.value.task_id,
                    replayed: done.replayed,
                    replayed_from: done.value.replayed_from,
                }),
                Err(e) if e.is_refusal() => {
                    tx.undo_group().await?;
                    // The refused item alone again: it writes the audit rows of its refusal
                    // (it is refused the same way: repeated ids were refused above).
                    if self.send_in(tx, caller, raw).await.is_ok() {
                        tx.undo_group().await?;
                    }
                    tx.end_group().await?;
                    return Err(e.at_index(index));
                }
                Err(e) => return Err(e),
            }
        }
        tx.end_group().await?;
        let created = items.iter().any(|i| !i.replayed);
        let all_replayed = !created;
        Ok(Done {
            created,
            replayed: all_replayed,
            ..Done::created(items)
        }
        .waking(Wake::Everyone))
    }
}

/// Two items with one task id: 400 with the index of the second.
fn refuse_repeated_ids(tasks: &[Value]) -> Result<(), MailboxError> {
    let mut seen: HashMap<Uuid, usize> = HashMap::new();
    for (index, raw) in tasks.iter().enumerate() {
        let Some(id) = raw
            .get("id")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
        else {
            continue;
        };
        if let Some(first) = seen.insert(id, index) {
            return Err(MailboxError::invalid(format!(
                "task id {id} appears twice in the batch (items {first} and {index})"
            ))
            .at_index(index));
        }
    }
    Ok(())
}
