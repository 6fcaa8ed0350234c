//! Batches inside a write transaction: many tasks leased, or many results drained, by one
//! statement each (`claim_many!`, `drain_many!` in `transitions.rs`), answered oldest first; and
//! the rows a batch of results or heartbeats judges, locked by one statement.

use sqlx::FromRow;

use super::records::{Drained, TaskRow};
use super::runner::{args, Column, Tx, Val};
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

/// A drained result with its FIFO position.
#[derive(Debug, FromRow)]
struct DrainedAt {
    #[sqlx(flatten)]
    drained: Drained,
    result_seq: Option<i64>,
}

impl Tx {
    /// Leases up to `lease_ids.len()` of the recipient's oldest live tasks, the n-th with the
    /// n-th lease id; answers them oldest first.
    pub async fn claim_many(
        &mut self,
        recipient: &str,
        lease_ids: &[String],
        lessee: &str,
        now: i64,
    ) -> Result<Vec<TaskRow>> {
        let ids = serde_json::to_string(lease_ids).map_err(MailboxError::internal)?;
        let max = lease_ids.len() as i64;
        let stmt = self.sql().claim_many;
        let mut rows: Vec<TaskRow> = self
            .fetch_all(stmt, args![recipient, ids.as_str(), lessee, now, max])
            .await?;
        // The n-th lease id went to the n-th oldest: their order is the queue's.
        rows.sort_by_key(|r| {
            r.lease_id
                .as_ref()
                .and_then(|l| lease_ids.iter().position(|id| id == l))
        });
        Ok(rows)
    }

    /// The task rows of `ids` that exist, locked as [`Tx::task_for_update`] locks one.
    pub async fn tasks_for_update(&mut self, ids: &[String]) -> Result<Vec<TaskRow>> {
        let ids = Val::Column(Column::Texts(ids.iter().cloned().map(Some).collect()));
        let stmt = self.sql().tasks_for_update;
        Ok(self.fetch_all(stmt, &[ids]).await?)
    }

    /// Delivers up to `max` of the sender's oldest pending results; answers them oldest first.
    pub async fn drain_many(&mut self, sender: &str, now: i64, max: i64) -> Result<Vec<Drained>> {
        let stmt = self.sql().drain_many;
        let mut rows: Vec<DrainedAt> = self.fetch_all(stmt, args![sender, now, max]).await?;
        rows.sort_by_key(|r| r.result_seq);
        Ok(rows.into_iter().map(|r| r.drained).collect())
    }
}
