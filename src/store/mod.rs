//! The storage seam: one SQLite and one PostgreSQL implementation behind the same small API.
//!
//! Business rules live in `mailbox/`; this module only opens pools, runs each engine's
//! migrations, starts transactions the way each engine needs (`BEGIN IMMEDIATE` on SQLite,
//! row locks on PostgreSQL) and runs SQL. Statements are shared text with `$n` parameters; the
//! few engine-specific fragments are written as markers that [`Engine::sql`] expands:
//!
//! - `/*SKIP_LOCKED*/` → `FOR UPDATE SKIP LOCKED` on PostgreSQL (claims), nothing on SQLite,
//!   where `BEGIN IMMEDIATE` already makes the transaction the only writer;
//! - `/*FOR_UPDATE*/` → `FOR UPDATE` on PostgreSQL, nothing on SQLite;
//! - `/*NEXT_QUEUE_SEQ*/`, `/*NEXT_RESULT_SEQ*/` → the next FIFO position of the queue or of the
//!   pending results: a sequence on PostgreSQL; on SQLite (one writer) one past the largest
//!   position among the rows now in that state, read from the state's partial index. Order only
//!   matters among rows in the same state, so that is enough for FIFO;
//! - `/*FIFO_QUEUE*/`, `/*FIFO_RESULT*/` → the global FIFO order of the operator views:
//!   `queue_seq + 0` / `result_seq + 0` on PostgreSQL, whose global FIFO indexes are on those
//!   expressions so that a claim (`ORDER BY queue_seq` for one recipient) can only use the
//!   per-recipient index; plain columns on SQLite.

mod fault;

use std::borrow::Cow;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{FromRow, PgPool, Postgres, Sqlite, SqlitePool, Transaction};

/// How long a statement waits for a lock held by someone else before the request answers 503
/// `storage_unavailable` (SQLite `busy_timeout`, PostgreSQL `lock_timeout`).
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// WAL pages after which the SQLite writer checkpoints (SQLite's default is 1,000). A
/// checkpoint runs inside the commit that crosses the threshold, so that group's requests wait
/// while it copies every distinct WAL page into the database and fsyncs it. In a deep queue a
/// group's pages are mostly distinct (a send dirties a random leaf of the task-id index), so a
/// 1,000-page checkpoint is a stall that lands in the p99; smaller, more frequent ones spread
/// the same work (BENCHMARKS.md, session 7: lease p99 at 1M ÷ 1k fell from 1.3-1.6x to
/// 1.1-1.2x, lifecycle throughput unchanged).
pub const SQLITE_WAL_AUTOCHECKPOINT: u32 = 300;

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

    pub fn sql(self, sql: &str) -> Cow<'_, str> {
        if !sql.contains("/*") {
            return Cow::Borrowed(sql);
        }
        let (skip_locked, for_update, queue_seq, result_seq, fifo_queue, fifo_result) = match self {
            Engine::Postgres => (
                "FOR UPDATE SKIP LOCKED",
                "FOR UPDATE",
                "nextval('a2a_queue_seq')",
                "nextval('a2a_result_seq')",
                "queue_seq + 0",
                "result_seq + 0",
            ),
            Engine::Sqlite => (
                "",
                "",
                "(SELECT COALESCE(MAX(queue_seq), 0) + 1 FROM tasks WHERE state = 'queued')",
                "(SELECT COALESCE(MAX(result_seq), 0) + 1 FROM tasks WHERE state = 'result_pending')",
                "queue_seq",
                "result_seq",
            ),
        };
        Cow::Owned(
            sql.replace("/*SKIP_LOCKED*/", skip_locked)
                .replace("/*FOR_UPDATE*/", for_update)
                .replace("/*NEXT_QUEUE_SEQ*/", queue_seq)
                .replace("/*NEXT_RESULT_SEQ*/", result_seq)
                .replace("/*FIFO_QUEUE*/", fifo_queue)
                .replace("/*FIFO_RESULT*/", fifo_result),
        )
    }
}

/// A bound parameter.
#[derive(Clone, Debug)]
pub enum Val {
    Str(String),
    Int(i64),
    OptStr(Option<String>),
    OptInt(Option<i64>),
}

impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Str(v.to_owned())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Str(v)
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Str(v.clone())
    }
}
impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(v)
    }
}
impl From<Option<String>> for Val {
    fn from(v: Option<String>) -> Val {
        Val::OptStr(v)
    }
}
impl From<Option<&str>> for Val {
    fn from(v: Option<&str>) -> Val {
        Val::OptStr(v.map(str::to_owned))
    }
}
impl From<Option<i64>> for Val {
    fn from(v: Option<i64>) -> Val {
        Val::OptInt(v)
    }
}
impl From<uuid::Uuid> for Val {
    fn from(v: uuid::Uuid) -> Val {
        Val::Str(v.to_string())
    }
}
impl From<Option<uuid::Uuid>> for Val {
    fn from(v: Option<uuid::Uuid>) -> Val {
        Val::OptStr(v.map(|u| u.to_string()))
    }
}

/// `args![a, b, c]` builds a parameter list.
#[macro_export]
macro_rules! args {
    ($($v:expr),* $(,)?) => { &[$($crate::store::Val::from($v)),*][..] };
}

macro_rules! bind_all {
    ($q:expr, $args:expr) => {{
        let mut q = $q;
        for a in $args {
            q = match a {
                Val::Str(s) => q.bind(s.as_str()),
                Val::Int(i) => q.bind(*i),
                Val::OptStr(s) => q.bind(s.as_deref()),
                Val::OptInt(i) => q.bind(*i),
            };
        }
        q
    }};
}

/// A row type that both engines can decode.
pub trait Row: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin {}
impl<T> Row for T where T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{}

#[derive(Clone)]
enum Pools {
    /// One writer connection (SQLite has one writer at a time anyway; queueing in the pool is
    /// cheaper than `SQLITE_BUSY` retries) and a few readers, which WAL lets run beside it.
    Sqlite {
        write: SqlitePool,
        read: SqlitePool,
        /// Write units go to the group-commit writer (see [`Db::run`]).
        writer: tokio::sync::mpsc::Sender<Box<dyn Unit>>,
    },
    Postgres(PgPool),
}

#[derive(Clone)]
pub struct Db {
    pools: Pools,
}

pub enum Tx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

pub struct PoolSettings {
    pub max_connections: u32,
    pub acquire_timeout: Duration,
}

impl Db {
    pub async fn connect(url: &str, settings: &PoolSettings) -> anyhow::Result<Db> {
        let pools = match Engine::from_url(url)? {
            Engine::Sqlite => {
                if url.contains(":memory:") || url.contains("mode=memory") {
                    anyhow::bail!(
                        "an in-memory SQLite database is not supported: the writer and the readers \
                         would each see their own, and nothing would be durable; use a file, \
                         e.g. sqlite://a2a-mailbox.db"
                    );
                }
                let opts = SqliteConnectOptions::from_str(url)?
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    // FULL: every commit is fsynced before it is acknowledged, so an acknowledged
                    // task, lease or result survives a power loss, not only a process crash.
                    .synchronous(SqliteSynchronous::Full)
                    .busy_timeout(LOCK_WAIT)
                    .foreign_keys(true);
                let write = SqlitePoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(settings.acquire_timeout)
                    .connect_with(
                        opts.clone()
                            .pragma("wal_autocheckpoint", SQLITE_WAL_AUTOCHECKPOINT.to_string()),
                    )
                    .await?;
                let read = SqlitePoolOptions::new()
                    .max_connections(settings.max_connections.clamp(1, 8))
                    .acquire_timeout(settings.acquire_timeout)
                    .connect_with(opts.read_only(true))
                    .await?;
                let (writer, units) = tokio::sync::mpsc::channel(4096);
                tokio::spawn(group_commit_writer(write.clone(), units));
                Pools::Sqlite {
                    write,
                    read,
                    writer,
                }
            }
            Engine::Postgres => {
                // A row or table lock held past this answers 503 (SQLSTATE 55P03) instead of
                // holding the request forever: the same bound SQLite's busy_timeout gives.
                let opts = PgConnectOptions::from_str(url)?
                    .options([("lock_timeout", format!("{}ms", LOCK_WAIT.as_millis()))]);
                // No ping on every checkout: it costs a round trip per transaction (measured:
                // 13.4k → 10.9k commits/s); a connection that died answers its next statement
                // with an error (503, retriable) and the pool replaces it.
                let pool = PgPoolOptions::new()
                    .max_connections(settings.max_connections)
                    .acquire_timeout(settings.acquire_timeout)
                    .test_before_acquire(false)
                    .connect_with(opts)
                    .await?;
                Pools::Postgres(pool)
            }
        };
        Ok(Db { pools })
    }

    pub fn engine(&self) -> Engine {
        match self.pools {
            Pools::Sqlite { .. } => Engine::Sqlite,
            Pools::Postgres(_) => Engine::Postgres,
        }
    }

    pub fn pg_pool(&self) -> Option<&PgPool> {
        match &self.pools {
            Pools::Postgres(p) => Some(p),
            Pools::Sqlite { .. } => None,
        }
    }

    pub async fn migrate(&self) -> anyhow::Result<()> {
        match &self.pools {
            Pools::Sqlite { write, .. } => sqlx::migrate!("migrations/sqlite").run(write).await?,
            Pools::Postgres(pool) => sqlx::migrate!("migrations/postgres").run(pool).await?,
        }
        Ok(())
    }

    /// A read outside any write transaction (SQLite: on a reader connection).
    pub async fn fetch_all<T: Row>(&self, sql: &str, args: &[Val]) -> Result<Vec<T>, sqlx::Error> {
        let sql = self.engine().sql(sql);
        match &self.pools {
            Pools::Sqlite { read, .. } => {
                bind_all!(sqlx::query_as::<Sqlite, T>(&sql), args)
                    .fetch_all(read)
                    .await
            }
            Pools::Postgres(pool) => {
                bind_all!(sqlx::query_as::<Postgres, T>(&sql), args)
                    .fetch_all(pool)
                    .await
            }
        }
    }

    pub async fn fetch_optional<T: Row>(
        &self,
        sql: &str,
        args: &[Val],
    ) -> Result<Option<T>, sqlx::Error> {
        let sql = self.engine().sql(sql);
        match &self.pools {
            Pools::Sqlite { read, .. } => {
                bind_all!(sqlx::query_as::<Sqlite, T>(&sql), args)
                    .fetch_optional(read)
                    .await
            }
            Pools::Postgres(pool) => {
                bind_all!(sqlx::query_as::<Postgres, T>(&sql), args)
                    .fetch_optional(pool)
                    .await
            }
        }
    }

    /// `SELECT 1` against the database (readiness).
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        let _: Option<(i64,)> = self.fetch_optional("SELECT CAST(1 AS BIGINT)", &[]).await?;
        Ok(())
    }

    pub async fn close(&self) {
        match &self.pools {
            Pools::Sqlite { write, read, .. } => {
                read.close().await;
                write.close().await;
            }
            Pools::Postgres(pool) => pool.close().await,
        }
    }
}

impl Tx {
    pub fn engine(&self) -> Engine {
        match self {
            Tx::Sqlite(_) => Engine::Sqlite,
            Tx::Postgres(_) => Engine::Postgres,
        }
    }

    /// Runs a statement; answers the number of rows it changed.
    pub async fn execute(&mut self, sql: &str, args: &[Val]) -> Result<u64, sqlx::Error> {
        let sql = self.engine().sql(sql);
        Ok(match self {
            Tx::Sqlite(tx) => bind_all!(sqlx::query::<Sqlite>(&sql), args)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
            Tx::Postgres(tx) => bind_all!(sqlx::query::<Postgres>(&sql), args)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
        })
    }

    pub async fn fetch_optional<T: Row>(
        &mut self,
        sql: &str,
        args: &[Val],
    ) -> Result<Option<T>, sqlx::Error> {
        let sql = self.engine().sql(sql);
        match self {
            Tx::Sqlite(tx) => {
                bind_all!(sqlx::query_as::<Sqlite, T>(&sql), args)
                    .fetch_optional(&mut **tx)
                    .await
            }
            Tx::Postgres(tx) => {
                bind_all!(sqlx::query_as::<Postgres, T>(&sql), args)
                    .fetch_optional(&mut **tx)
                    .await
            }
        }
    }

    pub async fn fetch_all<T: Row>(
        &mut self,
        sql: &str,
        args: &[Val],
    ) -> Result<Vec<T>, sqlx::Error> {
        let sql = self.engine().sql(sql);
        match self {
            Tx::Sqlite(tx) => {
                bind_all!(sqlx::query_as::<Sqlite, T>(&sql), args)
                    .fetch_all(&mut **tx)
                    .await
            }
            Tx::Postgres(tx) => {
                bind_all!(sqlx::query_as::<Postgres, T>(&sql), args)
                    .fetch_all(&mut **tx)
                    .await
            }
        }
    }

    pub async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await,
            Tx::Postgres(tx) => tx.commit().await,
        }
    }

    pub async fn rollback(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(tx) => tx.rollback().await,
            Tx::Postgres(tx) => tx.rollback().await,
        }
    }
}

/// One write unit: runs inside a transaction and says whether its changes are kept
/// (`true`: success, or a refusal that only wrote audit rows) or must be undone (`false`).
/// `done` is told whether the transaction that carried it committed; only then may the unit
/// answer its caller, so nothing is acknowledged before it is durable.
pub trait Unit: Send {
    fn run<'t>(&'t mut self, tx: &'t mut Tx) -> futures_util::future::BoxFuture<'t, bool>;
    fn done(self: Box<Self>, committed: Result<(), String>);
}

/// The largest number of units one SQLite transaction carries.
const MAX_GROUP: usize = 128;

impl Db {
    /// Runs one write unit in a transaction of its own (PostgreSQL, where the server already
    /// groups concurrent commits into one WAL flush) or in the next group commit (SQLite).
    pub async fn run(&self, mut unit: Box<dyn Unit>) {
        match &self.pools {
            Pools::Sqlite { writer, .. } => {
                if let Err(e) = writer.send(unit).await {
                    e.0.done(Err("the database writer has stopped".into()));
                }
            }
            Pools::Postgres(pool) => {
                let mut tx = match pool.begin().await {
                    Ok(tx) => Tx::Postgres(tx),
                    Err(e) => return unit.done(Err(e.to_string())),
                };
                let keep = unit.run(&mut tx).await;
                let committed = if keep {
                    tx.commit().await.map_err(|e| e.to_string())
                } else {
                    let _ = tx.rollback().await;
                    Ok(())
                };
                unit.done(committed);
            }
        }
    }
}

/// SQLite group commit. SQLite has one writer at a time and, with `synchronous=FULL`, pays one
/// fsync per commit. The writer takes every unit that is waiting (up to [`MAX_GROUP`]), runs each
/// inside its own SAVEPOINT of one `BEGIN IMMEDIATE` transaction (a unit that fails is rolled
/// back to its savepoint without touching the others), commits once, and only then lets each
/// unit answer. Durability is unchanged, every acknowledged write is fsynced; the cost of the
/// fsync is shared by all the requests that arrived while the previous one was running.
async fn group_commit_writer(
    pool: SqlitePool,
    mut units: tokio::sync::mpsc::Receiver<Box<dyn Unit>>,
) {
    use futures_util::FutureExt;
    let mut batch: Vec<Box<dyn Unit>> = Vec::with_capacity(MAX_GROUP);
    while let Some(first) = units.recv().await {
        batch.push(first);
        while batch.len() < MAX_GROUP {
            match units.try_recv() {
                Ok(u) => batch.push(u),
                Err(_) => break,
            }
        }
        let mut tx = match pool.begin_with("BEGIN IMMEDIATE").await {
            Ok(tx) => Tx::Sqlite(tx),
            Err(e) => {
                let msg = e.to_string();
                for u in batch.drain(..) {
                    u.done(Err(msg.clone()));
                }
                continue;
            }
        };
        // Each unit runs inside its own savepoint. Closing one savepoint and opening the next
        // is a single call to the connection's worker thread (the cost that matters here):
        // SQLite runs every statement of a multi-statement text.
        let mut ran = Vec::with_capacity(batch.len());
        let mut failed: Option<String> = None;
        let mut previous_kept: Option<bool> = None;
        for mut unit in batch.drain(..) {
            if failed.is_some() {
                ran.push(unit);
                continue;
            }
            let open = match previous_kept {
                None => "SAVEPOINT unit",
                Some(true) => "RELEASE unit; SAVEPOINT unit",
                Some(false) => "ROLLBACK TO unit; RELEASE unit; SAVEPOINT unit",
            };
            if let Err(e) = tx.execute(open, &[]).await {
                failed = Some(e.to_string());
                ran.push(unit);
                continue;
            }
            let keep = std::panic::AssertUnwindSafe(unit.run(&mut tx))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("a write unit panicked; its changes are rolled back");
                    false
                });
            previous_kept = Some(keep);
            ran.push(unit);
        }
        let close = match previous_kept {
            Some(true) => "RELEASE unit",
            _ => "ROLLBACK TO unit; RELEASE unit",
        };
        if failed.is_none() && previous_kept.is_some() {
            if let Err(e) = tx.execute(close, &[]).await {
                failed = Some(e.to_string());
            }
        }
        // A savepoint that cannot be opened or closed means the connection is unusable: the
        // whole group is rolled back and every unit in it answers 503 (retriable).
        let committed = match failed {
            Some(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
            None => tx.commit().await.map_err(|e| e.to_string()),
        };
        for unit in ran {
            unit.done(committed.clone());
        }
    }
}
