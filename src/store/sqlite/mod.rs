//! SQLite: one writer connection behind a group-commit writer (`writer.rs`), a checkpointer
//! beside it (`checkpointer.rs`), and a few readers that WAL lets run beside both. Its
//! [`Backend`] (`backend.rs`) runs every statement of its own (`statements.rs`) and the shared
//! ones on them, bound and decoded as its [`Dialect`](crate::store::dialect::Dialect) says
//! (`dialect.rs`).

mod backend;
mod checkpointer;
mod dialect;
mod parked;
mod send;
mod statements;
mod writer;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

use crate::metrics::Metrics;
use crate::store::backend::{Backend, Engine, PoolSettings, LOCK_WAIT};
use crate::store::unit::Unit;

/// SQLite: `sqlite:` URLs, a file of one process, committed by a task like any other.
pub(crate) const ENGINE: Engine = Engine {
    name: "sqlite",
    answers_as: crate::domain::answers::EngineName::Sqlite,
    schemes: &["sqlite:"],
    wants_own_thread: false,
    open,
    unavailable,
    local_file,
};

/// The database file a `sqlite:` URL names (`sqlite://file.db`, `sqlite:///abs/path.db?…`).
fn local_file(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
}

/// SQLITE_BUSY (5), SQLITE_LOCKED (6), SQLITE_NOMEM (7), SQLITE_READONLY (8), SQLITE_IOERR (10),
/// SQLITE_FULL (13), SQLITE_CANTOPEN (14), SQLITE_PROTOCOL (15), and their extended codes.
fn unavailable(db: &dyn sqlx::error::DatabaseError) -> bool {
    db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
        && db
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| matches!(c & 0xff, 5 | 6 | 7 | 8 | 10 | 13 | 14 | 15))
}

fn open<'a>(
    url: &'a str,
    settings: &'a PoolSettings,
    metrics: Arc<Metrics>,
) -> BoxFuture<'a, anyhow::Result<Arc<dyn Backend>>> {
    Box::pin(async move {
        let sqlite: Arc<dyn Backend> = Arc::new(Sqlite::connect(url, settings, metrics).await?);
        Ok(sqlite)
    })
}

// The writer's `temp_store` is `memory`. A write unit undone alone (`writer.rs`: all but those
// that refuse nothing, the fast send, result and drain and a lease) runs in a savepoint of its
// own, and SQLite copies every page it changes into that savepoint's sub-journal. That journal
// lives in memory up to 64 KiB and, past that, spills to a temporary file for the rest of the
// group's transaction: one `pwrite` per page changed by every later unit. A task's write changes
// about sixteen pages (its row, the primary key, the queue's and the listing's indexes, its
// audit row and that row's indexes), so nearly every group would spill: more writes per task
// than the WAL itself. Kept in memory, the journal is dropped when its unit's savepoint is
// released. It is never read for recovery (the WAL is): durability is unchanged. What it costs:
// while a unit runs, the writer holds a copy of each page that unit changed, in memory rather
// than in a temporary file; a compaction of a very large backlog holds the pages it deletes
// from.

pub(crate) struct Sqlite {
    /// One writer connection (SQLite has one writer at a time anyway; queueing in the pool is
    /// cheaper than `SQLITE_BUSY` retries).
    write: SqlitePool,
    read: SqlitePool,
    /// Write units go to the group-commit writer.
    writer: tokio::sync::mpsc::Sender<Box<dyn Unit>>,
    /// Long-poll claims held for a send to lease them its task.
    holds: Arc<parked::Holds>,
    metrics: Arc<Metrics>,
}

impl Sqlite {
    async fn connect(
        url: &str,
        settings: &PoolSettings,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Sqlite> {
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
            // FULL: every commit is fsynced before it is acknowledged, so an acknowledged task,
            // lease or result survives a power loss, not only a process crash.
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(LOCK_WAIT)
            .foreign_keys(true);
        // No ping on every checkout (sqlx's default): on SQLite it is a round trip to the
        // connection's own thread before every read and before every group the writer commits,
        // on the path every request waits on. All a ping finds is a connection whose thread has
        // died; SQLite reports every other fault on the statement itself (503, retriable). The
        // writer closes its connection after a group that failed (`writer.rs`), so writes heal
        // at once; a read connection is retired by the pool's idle timeout and lifetime (sqlx's
        // 10 and 30 minutes).
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(settings.acquire_timeout)
            .test_before_acquire(false)
            .connect_with(
                opts.clone()
                    .pragma(
                        "wal_autocheckpoint",
                        checkpointer::BACKSTOP_PAGES.to_string(),
                    )
                    .pragma("temp_store", "memory"),
            )
            .await?;
        let read = SqlitePoolOptions::new()
            .max_connections(settings.max_connections.clamp(1, 8))
            .acquire_timeout(settings.acquire_timeout)
            .test_before_acquire(false)
            .connect_with(opts.clone().read_only(true))
            .await?;
        let checkpoints = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(settings.acquire_timeout)
            .test_before_acquire(false)
            .connect_with(opts)
            .await?;
        let (writer, units) = tokio::sync::mpsc::channel(4096);
        let (commits, committed) = tokio::sync::watch::channel(0);
        tokio::spawn(checkpointer::checkpointer(checkpoints, committed));
        tokio::spawn(writer::group_commit_writer(write.clone(), units, commits));
        Ok(Sqlite {
            write,
            read,
            writer,
            holds: Arc::default(),
            metrics,
        })
    }
}
