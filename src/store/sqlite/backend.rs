//! SQLite's side of the seam: its writer runs every write unit, its readers the reads, and the
//! one-write paths are one statement text each (`SEND_FAST`, `RESULT_FAST`, `DRAIN`) run as a
//! unit of the next group commit. A long-poll's claim is held beside the writer for a send
//! (`parked.rs`, `send.rs`), and otherwise goes down the mailbox's own transaction; a drain is
//! not held.

use futures_util::future::BoxFuture;
use sqlx::Row as _;

use super::send::SendUnit;
use super::statements::{DRAIN, RESULT_FAST, STATEMENTS};
use super::{Sqlite, ENGINE};
use crate::error::MailboxError;
use crate::store::backend::{Backend, Engine, Hold};
use crate::store::dialect::{fetch, query};
use crate::store::new_task::NewTask;
use crate::store::ops::StoredResult;
use crate::store::records::{Committed, Drained, TaskRow};
use crate::store::rows::Rows;
use crate::store::runner::{args, Val};
use crate::store::statements::{Statements, ANY_PENDING};
use crate::store::unit::{transact, Op, Undo, Unit};

type Result<T> = std::result::Result<T, MailboxError>;

impl Sqlite {
    /// Runs `op`, which refuses nothing, as a unit of the next group commit undone with its
    /// group ([`Undo::WithGroup`]).
    async fn transact_refusing_nothing<R: Send + 'static>(&self, op: Op<R>) -> Result<R> {
        transact(op, Undo::WithGroup, |unit| self.run(unit)).await
    }

    async fn drain(&self, sender: &str) -> Result<Option<Drained>> {
        // A cheap read first, so an empty poll never waits for the single writer.
        let mut pending: Option<(String,)> = None;
        fetch(&self.read, ANY_PENDING, args![sender], &mut pending).await?;
        if pending.is_none() {
            return Ok(None);
        }
        let a = args![sender, crate::clock::now_ms()].to_vec();
        self.transact_refusing_nothing(Box::new(move |tx| {
            Box::pin(async move { Ok(tx.fetch_optional(DRAIN, &a).await?) })
        }))
        .await
    }
}

impl Backend for Sqlite {
    fn engine(&self) -> Engine {
        ENGINE
    }

    fn statements(&self) -> &'static Statements {
        &STATEMENTS
    }

    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::migrate!("migrations/sqlite").run(&self.write).await?;
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.read.close().await;
            self.write.close().await;
        })
    }

    fn run(&self, unit: Box<dyn Unit>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Err(e) = self.writer.send(unit).await {
                e.0.done(Err("the database writer has stopped".into()));
            }
        })
    }

    fn read<'a>(
        &'a self,
        sql: &'a str,
        args: &'a [Val],
        rows: &'a mut dyn Rows,
    ) -> BoxFuture<'a, std::result::Result<(), sqlx::Error>> {
        Box::pin(fetch(&self.read, sql, args, rows))
    }

    fn explain<'a>(
        &'a self,
        sql: &'a str,
        args: &'a [Val],
    ) -> BoxFuture<'a, std::result::Result<String, sqlx::Error>> {
        Box::pin(async move {
            let text = format!("EXPLAIN QUERY PLAN {sql}");
            let rows = query::<sqlx::Sqlite>(&text, args)
                .fetch_all(&self.read)
                .await?;
            let lines = rows
                .iter()
                .map(|r| r.try_get::<String, _>(3))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(lines.join("\n"))
        })
    }

    fn send_one(
        &self,
        t: NewTask,
        audit_body: String,
    ) -> BoxFuture<'_, Result<Option<Committed<()>>>> {
        Box::pin(async move {
            let mut a = t.columns();
            a.extend_from_slice(args![crate::clock::now_ms(), audit_body.as_str()]);
            let (unit, sent) = SendUnit::new(a, t.recipient, &self.holds, &self.metrics);
            self.run(Box::new(unit)).await;
            sent.await
                .unwrap_or_else(|_| Err(MailboxError::internal("a send was dropped unanswered")))
        })
    }

    fn store_result_one<'a>(
        &'a self,
        id: &'a str,
        r: &'a StoredResult<'a>,
        caller: &'a str,
        lease_guard: Option<&'a str>,
        audit_halves: (String, String),
    ) -> BoxFuture<'a, Result<Option<Committed<String>>>> {
        let a = args![
            id,
            r.status,
            r.content,
            r.error_message,
            caller,
            crate::clock::now_ms(),
            lease_guard,
            audit_halves.0,
            audit_halves.1
        ]
        .to_vec();
        Box::pin(async move {
            let stored: Vec<(String,)> = self
                .transact_refusing_nothing(Box::new(move |tx| {
                    Box::pin(async move { Ok(tx.fetch_all(RESULT_FAST, &a).await?) })
                }))
                .await?;
            Ok(stored.into_iter().next().map(|(sender,)| Committed {
                made: sender,
                handed: false,
            }))
        })
    }

    /// Holds the claim (`parked.rs`) and tries nothing: the mailbox reads whether anything is
    /// queued and, if so, leaves the hold and claims in its own transaction.
    fn claim_or_hold<'a>(
        &'a self,
        recipient: &'a str,
        lease_id: &'a str,
        caller: &'a str,
    ) -> BoxFuture<'a, (Result<Option<TaskRow>>, Option<Hold>)> {
        let hold = self.holds.park(recipient, lease_id, caller);
        Box::pin(std::future::ready((Ok(None), Some(hold))))
    }

    /// A cheap read first, so an empty poll never waits for the single writer; no hold.
    fn drain_or_hold<'a>(
        &'a self,
        sender: &'a str,
    ) -> BoxFuture<'a, (Result<Option<Drained>>, Option<Hold>)> {
        Box::pin(async move { (self.drain(sender).await, None) })
    }
}
