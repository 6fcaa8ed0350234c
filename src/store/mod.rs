//! The storage seam: every SQL statement and every migration concern of the service, behind
//! named operations that speak the service's own types.
//!
//! - [`Store`] opens the engine picked from the database URL, runs its migrations, serves the
//!   named reads (`reads.rs`) and the fast paths (`fast.rs`), and runs write units
//!   ([`Store::transact`], `unit.rs`).
//! - [`Tx`] is a write transaction; its named operations (`ops.rs`) are what a mailbox rule
//!   calls, in the order the rule decides.
//! - `sqlite/` and `postgres/` each hold their own statements, pools, migrations and way of
//!   committing: SQLite's group-commit writer, PostgreSQL's group-commit lane and its
//!   `step_many.sql`. Nothing outside this folder names an engine's SQL or branches on the engine.

mod audit;
mod fast;
mod fault;
mod listing;
mod new_task;
mod ops;
mod overview;
mod postgres;
mod readiness;
mod reads;
mod records;
pub(crate) mod runner;
mod sqlite;
mod statements;
mod unit;

use std::sync::Arc;
use std::time::Duration;

pub use fast::{LaneOutcome, Parked};
pub use listing::{ListColumn, PageAfter, TaskFilter};
pub use new_task::NewTask;
pub use ops::StoredResult;
pub use reads::AuditQuery;
pub use records::{
    parse_uuid, result_from_columns, AuditRow, CacheHit, Compacted, Drained, KeyRecord, LeaseView,
    QueueHead, TaskOrigin, TaskRow,
};
pub use runner::Tx;
pub use unit::Op;

use runner::{bind_all, typed_reads, Row, Val};
use statements::Statements;
use unit::Unit;

/// How long a statement waits for a lock held by someone else before the request answers 503
/// `storage_unavailable` (SQLite `busy_timeout`, PostgreSQL `lock_timeout`).
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The storage engines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

impl Engine {
    pub fn from_url(url: &str) -> anyhow::Result<Engine> {
        if url.starts_with("sqlite:") {
            Ok(Engine::Sqlite)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Ok(Engine::Postgres)
        } else {
            anyhow::bail!(
                "unsupported DATABASE_URL {url:?}: use sqlite://file.db, sqlite:///abs/path.db?mode=rwc or postgres://user@host:port/db"
            )
        }
    }

    /// The engine's name in `/version`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
        }
    }

    /// Whether the engine commits through a group-commit lane of its own, which wants a thread
    /// of its own (PostgreSQL; SQLite's writer is a task like any other).
    pub fn runs_a_lane(self) -> bool {
        self == Engine::Postgres
    }
}

pub struct PoolSettings {
    pub max_connections: u32,
    pub acquire_timeout: Duration,
}

#[derive(Clone)]
enum Inner {
    Sqlite(Arc<sqlite::Sqlite>),
    Postgres(Arc<postgres::Postgres>),
}

/// The database behind the mailbox. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Inner,
    readiness: Arc<readiness::Readiness>,
}

impl Store {
    /// Opens the database. Must be called inside the Tokio runtime that will serve it (it starts
    /// SQLite's writer, or PostgreSQL's notifier).
    pub async fn connect(
        url: &str,
        settings: &PoolSettings,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> anyhow::Result<Store> {
        let inner = match Engine::from_url(url)? {
            Engine::Sqlite => {
                Inner::Sqlite(Arc::new(sqlite::Sqlite::connect(url, settings).await?))
            }
            Engine::Postgres => Inner::Postgres(Arc::new(
                postgres::Postgres::connect(url, settings, metrics).await?,
            )),
        };
        Ok(Store {
            inner,
            readiness: Arc::default(),
        })
    }

    pub fn engine(&self) -> Engine {
        match self.inner {
            Inner::Sqlite(_) => Engine::Sqlite,
            Inner::Postgres(_) => Engine::Postgres,
        }
    }

    /// Runs the engine's migrations (and, on PostgreSQL, installs `step_many.sql`).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        match &self.inner {
            Inner::Sqlite(s) => s.migrate().await,
            Inner::Postgres(p) => p.migrate().await,
        }
    }

    pub async fn close(&self) {
        match &self.inner {
            Inner::Sqlite(s) => s.close().await,
            Inner::Postgres(p) => p.close().await,
        }
    }

    fn statements(&self) -> &'static Statements {
        match self.inner {
            Inner::Sqlite(_) => &sqlite::STATEMENTS,
            Inner::Postgres(_) => &postgres::STATEMENTS,
        }
    }

    /// Runs one write unit in a transaction of its own (PostgreSQL, where the server already
    /// groups concurrent commits into one WAL flush) or in the next group commit (SQLite).
    async fn run(&self, unit: Box<dyn Unit>) {
        match &self.inner {
            Inner::Sqlite(s) => s.run(unit).await,
            Inner::Postgres(p) => p.run(unit).await,
        }
    }

    // Reads outside a write run on the read pool (SQLite) or the pool (PostgreSQL).
    typed_reads!(fn read_optional, read_all(&self) on &self.inner;
        Inner::Sqlite(s) => &s.read,
        Inner::Postgres(p) => &p.pool,
    );

    /// The engine's plan of a read, one line per plan row (SQLite: `EXPLAIN QUERY PLAN`;
    /// PostgreSQL: `EXPLAIN`).
    async fn explain(&self, sql: &str, args: &[Val]) -> Result<String, sqlx::Error> {
        use sqlx::Row as _;
        let lines: Vec<String> = match &self.inner {
            Inner::Sqlite(s) => {
                let text = format!("EXPLAIN QUERY PLAN {sql}");
                let rows = bind_all!(sqlite: sqlx::query::<sqlx::Sqlite>(&text), args)
                    .fetch_all(&s.read)
                    .await?;
                rows.iter()
                    .map(|r| r.try_get::<String, _>(3))
                    .collect::<Result<_, _>>()?
            }
            Inner::Postgres(p) => {
                // With sequential scans and sorts priced out, the plan says whether an index
                // can serve the read in its order, whatever the table's size and statistics.
                let mut tx = p.pool.begin().await?;
                sqlx::query("SET LOCAL enable_seqscan = off")
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("SET LOCAL enable_sort = off")
                    .execute(&mut *tx)
                    .await?;
                let text = format!("EXPLAIN {sql}");
                let rows = bind_all!(postgres: sqlx::query::<sqlx::Postgres>(&text), args)
                    .fetch_all(&mut *tx)
                    .await?;
                tx.rollback().await?;
                rows.iter()
                    .map(|r| r.try_get::<String, _>(0))
                    .collect::<Result<_, _>>()?
            }
        };
        Ok(lines.join("\n"))
    }
}
