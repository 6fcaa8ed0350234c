//! Answering and heartbeating in batches (docs/contract.md#batches): many results, or many
//! leases, in one transaction. A malformed item or one task id twice refuses the whole request
//! (the HTTP layer reads the items, [`refuse_repeated`] here); otherwise each item is judged as
//! its single form judges it ([`Mailbox::judge_result`], [`Mailbox::judge_heartbeat`]), with its
//! own gates, fence, audit rows and answer, and what is accepted commits together. An
//! `Idempotency-Key` covers the whole request. The items' rows are read and locked by one
//! statement, and what they write is made by a few ([`Tx::defer_writes`]).

use std::collections::HashMap;

use uuid::Uuid;

use super::{rule, Cx, Done, Mailbox, Wake};
use crate::domain::answers::{LeaseRef, ResultPosted, MAX_ITEMS};
use crate::domain::free_form::content_within;
use crate::domain::{Lease, PostResult};
use crate::error::MailboxError;
use crate::mailbox::Author;
use crate::store::{TaskRow, Tx};

/// Each item's answer, in request order: its task id and its single form's outcome.
pub type ItemOutcomes<T> = Vec<(Uuid, Result<Done<T>, MailboxError>)>;

impl Mailbox {
    /// `POST /a2a/results/batch`.
    pub(super) async fn post_results_untraced(
        &self,
        by: Author<'_>,
        results: Vec<PostResult>,
    ) -> Result<Done<ItemOutcomes<ResultPosted>>, MailboxError> {
        within_items("results", results.len())?;
        refuse_repeated(results.iter().map(|r| r.task_id).enumerate())?;
        for (index, r) in results.iter().enumerate() {
            content_within(&r.content, self.cfg.max_json_depth).map_err(|e| e.at_index(index))?;
        }
        self.write(
            by,
            rule!(|this, cx| async move {
                let Cx { tx, caller, now } = cx;
                let mut rows = locked_rows(tx, results.iter().map(|r| r.task_id)).await?;
                let mut outcomes = Vec::with_capacity(results.len());
                let mut wakes = Vec::new();
                for r in &results {
                    let cx = Cx {
                        tx: &mut *tx,
                        caller,
                        now,
                    };
                    let row = rows.remove(&r.task_id.to_string());
                    match this.judge_result(cx, r, row).await {
                        Err(e) if !e.is_refusal() => return Err(e),
                        Ok(done) => {
                            wakes.push(done.wake.clone());
                            outcomes.push((r.task_id, Ok(done)));
                        }
                        refused => outcomes.push((r.task_id, refused)),
                    }
                }
                Ok(Done::changed(outcomes).waking(Wake::Many(wakes)))
            }),
        )
        .await
    }

    /// `POST /a2a/tasks/heartbeat`.
    pub async fn heartbeats(
        &self,
        by: Author<'_>,
        leases: Vec<LeaseRef>,
    ) -> Result<Done<ItemOutcomes<Lease>>, MailboxError> {
        within_items("leases", leases.len())?;
        refuse_repeated(leases.iter().map(|l| l.task_id).enumerate())?;
        self.write(
            by,
            rule!(|this, cx| async move {
                let Cx { tx, caller, now } = cx;
                let mut rows = locked_rows(tx, leases.iter().map(|l| l.task_id)).await?;
                let mut outcomes = Vec::with_capacity(leases.len());
                for l in &leases {
                    let cx = Cx {
                        tx: &mut *tx,
                        caller,
                        now,
                    };
                    let row = rows.remove(&l.task_id.to_string());
                    match this.judge_heartbeat(cx, l.task_id, l.lease_id, row).await {
                        Err(e) if !e.is_refusal() => return Err(e),
                        outcome => outcomes.push((l.task_id, outcome)),
                    }
                }
                Ok(Done::changed(outcomes))
            }),
        )
        .await
    }
}

/// The rows of the batch's tasks, read and locked by one statement, by id; what the items write
/// from here on (audit rows, stored results) is written together at the end of the unit.
async fn locked_rows(
    tx: &mut Tx,
    ids: impl Iterator<Item = Uuid>,
) -> Result<HashMap<String, TaskRow>, MailboxError> {
    let ids: Vec<String> = ids.map(|id| id.to_string()).collect();
    let rows = tx.tasks_for_update(&ids).await?;
    tx.defer_writes();
    Ok(rows.into_iter().map(|r| (r.id.clone(), r)).collect())
}

/// A batch of items holds 1 to [`MAX_ITEMS`].
fn within_items(what: &str, n: usize) -> Result<(), MailboxError> {
    if n == 0 || n > MAX_ITEMS {
        return Err(MailboxError::invalid(format!(
            "a batch holds 1 to {MAX_ITEMS} {what}, not {n}"
        )));
    }
    Ok(())
}

/// Two items with one task id (each id with its item's index): 400 with the index of the
/// second.
pub(crate) fn refuse_repeated(
    ids: impl Iterator<Item = (usize, Uuid)>,
) -> Result<(), MailboxError> {
    let mut seen: HashMap<Uuid, usize> = HashMap::new();
    for (index, id) in ids {
        if let Some(first) = seen.insert(id, index) {
            return Err(MailboxError::invalid(format!(
                "task id {id} appears twice in the batch (items {first} and {index})"
            ))
            .at_index(index));
        }
    }
    Ok(())
}
