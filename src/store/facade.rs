//! [`Store`]: the facade the mailbox calls. It holds one engine behind [`Backend`] and forwards
//! to it; the only place that looks at the engine is [`Engine::from_url`], which picks it from
//! the database URL. The named reads (`reads.rs`, `listing.rs`, `overview.rs`) and the fast
//! paths (`fast.rs`) are further methods of it.

use std::sync::Arc;

use super::backend::{Backend, Engine, PoolSettings};
use super::readiness::Readiness;
use super::runner::{args, Row, Val};
use super::statements::{self as sql, Statements};
use super::unit::{self, Op};
use super::{postgres, sqlite};
use crate::error::MailboxError;

/// The engines the service can open, in the order their URL prefixes are tried.
pub(super) const ENGINES: [Engine; 2] = [sqlite::ENGINE, postgres::ENGINE];

impl Engine {
    /// The engine a database URL names.
    pub fn from_url(url: &str) -> anyhow::Result<Engine> {
        ENGINES
            .into_iter()
            .find(|e| e.schemes.iter().any(|s| url.starts_with(s)))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "unsupported DATABASE_URL {url:?}: use sqlite://file.db, sqlite:///abs/path.db?mode=rwc or postgres://user@host:port/db"
                )
            })
    }
}

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

    /// The engine, for the fast paths (`fast.rs`).
    pub(super) fn backend(&self) -> &dyn Backend {
        &*self.backend
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
