//! [`Store`]: the facade the mailbox calls. It holds one engine behind [`Backend`] and forwards
//! to it; the only place that looks at the engine is [`Engine::from_url`] (`engines.rs`), which
//! picks it from the database URL. The named reads (`reads.rs`, `listing.rs`, `overview.rs`)
//! are further methods of it; the engine's own operations (the one-write paths and holds, its
//! metrics, the other instances) are forwarded below, documented on [`Backend`].

use std::sync::Arc;

use super::backend::{Backend, Engine, Hold, PoolSettings};
use super::new_task::NewTask;
use super::ops::StoredResult;
use super::readiness::Readiness;
use super::records::{Committed, Drained, TaskRow};
use super::rows::Row;
use super::runner::{args, Val};
use super::statements::{self as sql, Statements};
use super::unit::{self, Op};
use crate::error::MailboxError;

/// The database behind the mailbox. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn Backend>,
    readiness: Arc<Readiness>,
}

impl Store {
    /// Opens the database. Must be called inside the Tokio runtime that will serve it (it starts
    /// SQLite's writer, or PostgreSQL's notifier).
    pub async fn connect(
        url: &str,
        settings: &PoolSettings,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> anyhow::Result<Store> {
        let engine = Engine::from_url(url)?;
        Ok(Store {
            backend: (engine.open)(url, settings, metrics).await?,
            readiness: Arc::default(),
        })
    }

    pub fn engine(&self) -> Engine {
        self.backend.engine()
    }

    /// Runs the engine's migrations (and, on PostgreSQL, installs `step_many.sql`).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        self.backend.migrate().await
    }

    pub async fn close(&self) {
        self.backend.close().await;
    }

    /// This engine's statements (those whose text differs by engine).
    pub(super) fn statements(&self) -> &'static Statements {
        self.backend.statements()
    }

    /// Runs a write operation as one unit of work: `Ok(value)` commits, `Err` undoes everything
    /// the operation wrote.
    pub async fn transact<R: Send + 'static>(&self, op: Op<R>) -> Result<R, MailboxError> {
        unit::transact(op, unit::Undo::Alone, |u| self.backend.run(u)).await
    }

    /// [`Store::transact`] for an operation that refuses nothing (its only failures are faults):
    /// if it fails, its whole group is undone (`Undo::WithGroup`).
    pub async fn transact_refusing_nothing<R: Send + 'static>(
        &self,
        op: Op<R>,
    ) -> Result<R, MailboxError> {
        unit::transact(op, unit::Undo::WithGroup, |u| self.backend.run(u)).await
    }

    /// The first row a read answers, outside any write.
    pub(super) async fn read_optional<T: Row>(
        &self,
        sql: &str,
        args: &[Val],
    ) -> Result<Option<T>, sqlx::Error> {
        let mut row = None;
        self.backend.read(sql, args, &mut row).await?;
        Ok(row)
    }

    /// Every row a read answers, outside any write.
    pub(super) async fn read_all<T: Row>(
        &self,
        sql: &str,
        args: &[Val],
    ) -> Result<Vec<T>, sqlx::Error> {
        let mut rows = Vec::new();
        self.backend.read(sql, args, &mut rows).await?;
        Ok(rows)
    }

    /// The engine's plan of a read, one line per plan row (SQLite: `EXPLAIN QUERY PLAN`;
    /// PostgreSQL: `EXPLAIN`).
    pub(super) async fn explain(&self, sql: &str, args: &[Val]) -> Result<String, sqlx::Error> {
        self.backend.explain(sql, args).await
    }

    /// Whether the database answers and a write commits, learnt by at most one check a
    /// second however many callers ask (`readiness.rs`): a read, then one harmless row written
    /// and committed through the path every write takes (SQLite's writer, a PostgreSQL
    /// connection), so readiness fails while writes would (a full disk, a writer that cannot
    /// commit, a database that refuses writes) and recovers with them.
    pub async fn readiness(&self) -> Result<(), MailboxError> {
        self.readiness
            .check(async {
                let _: Option<(i64,)> = self.read_optional(sql::PING, &[]).await?;
                let now = crate::clock::now_ms();
                self.transact(Box::new(move |tx| {
                    Box::pin(async move {
                        tx.execute(sql::TOUCH_READINESS, args![now]).await?;
                        Ok(())
                    })
                }))
                .await
            })
            .await
    }
}

/// The engine's own operations, each documented on [`Backend`].
impl Store {
    /// See [`Backend::send_one`].
    pub async fn send_one(
        &self,
        task: NewTask,
        audit_body: String,
    ) -> Result<Option<Committed<()>>, MailboxError> {
        self.backend.send_one(task, audit_body).await
    }

    /// See [`Backend::store_result_one`].
    pub async fn store_result_one(
        &self,
        id: &str,
        result: &StoredResult<'_>,
        caller: &str,
        lease_guard: Option<&str>,
        audit_halves: (String, String),
    ) -> Result<Option<Committed<String>>, MailboxError> {
        self.backend
            .store_result_one(id, result, caller, lease_guard, audit_halves)
            .await
    }

    /// See [`Backend::claim_or_hold`].
    pub async fn claim_or_hold(
        &self,
        recipient: &str,
        lease_id: &str,
        caller: &str,
    ) -> (Result<Option<TaskRow>, MailboxError>, Option<Hold>) {
        self.backend
            .claim_or_hold(recipient, lease_id, caller)
            .await
    }

    /// See [`Backend::drain_or_hold`].
    pub async fn drain_or_hold(
        &self,
        sender: &str,
    ) -> (Result<Option<Drained>, MailboxError>, Option<Hold>) {
        self.backend.drain_or_hold(sender).await
    }

    /// See [`Backend::start_on_http_worker`].
    pub fn start_on_http_worker(&self) {
        self.backend.start_on_http_worker();
    }

    /// The engine's own metric samples, read at scrape time (see [`Backend::commit_metrics`]).
    pub fn commit_metrics(&self, out: &mut Vec<crate::metrics::Reading>) {
        self.backend.commit_metrics(out);
    }

    /// See [`Backend::notify_peers`].
    pub fn notify_peers(&self, now: String, soon: String) {
        self.backend.notify_peers(now, soon);
    }

    /// See [`Backend::has_peers`].
    pub fn has_peers(&self) -> bool {
        self.backend.has_peers()
    }

    /// See [`Backend::on_peer_commit`].
    pub fn on_peer_commit(&self, woken: impl Fn(&str) + Send + 'static) {
        self.backend.on_peer_commit(Box::new(woken));
    }
}
