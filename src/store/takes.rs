//! Batches inside a write transaction: many tasks leased, or many results drained, by one
//! statement each (`claim_many!`, `drain_many!` in `transitions.rs`), answered oldest first; and
//! the rows a batch of results or heartbeats judges, locked by one statement.

use sqlx::FromRow;

use super::records::{Drained, TaskRow};
use super::runner::{args, Column, Tx, Val};
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

/// A leased row with its FIFO position.
#[derive(Debug, FromRow)]
struct LeasedAt {
    #[sqlx(flatten)]
    row: TaskRow,
    queue_seq: Option<i64>,
}

/// A drained result with its FIFO position.
#[derive(Debug, FromRow)]
struct DrainedAt {
    #[sqlx(flatten)]
    drained: Drained,
    result_seq: Option<i64>,
}

impl Tx {
    /// Leases up to `max` of the recipient's oldest live tasks, each with a new lease id;
    /// answers them oldest first.
    pub async fn claim_many(
        &mut self,
        recipient: &str,
        lessee: &str,
        now: i64,
        max: i64,
    ) -> Result<Vec<TaskRow>> {
        let stmt = self.sql().claim_many;
        let mut rows: Vec<LeasedAt> = self
            .fetch_all(stmt, args![recipient, lessee, now, max])
            .await?;
        rows.sort_by_key(|r| r.queue_seq);
        Ok(rows.into_iter().map(|r| r.row).collect())
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
