//! SQLite: one writer connection behind a group-commit writer, and a few readers that WAL lets
//! run beside it.

mod statements;

use std::str::FromStr;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

pub(crate) use statements::{DRAIN, RESULT_FAST, SEND_FAST, STATEMENTS};

use super::runner::Tx;
use super::unit::Unit;
use super::{PoolSettings, LOCK_WAIT};

/// WAL pages after which the writer checkpoints (SQLite's default is 1,000). A checkpoint runs
/// inside the commit that crosses the threshold, so that group's requests wait while it copies
/// every distinct WAL page into the database and fsyncs it. In a deep queue a group's pages are
/// mostly distinct (a send dirties a random leaf of the task-id index), so a 1,000-page
/// checkpoint is a stall that lands in the p99; smaller, more frequent ones spread the same work
/// (BENCHMARKS.md: the lease p99 at a depth of 1M stays within 1.2x of that at 1k).
pub const SQLITE_WAL_AUTOCHECKPOINT: u32 = 300;

/// The largest number of units one transaction carries.
const MAX_GROUP: usize = 128;

pub(crate) struct Sqlite {
    /// One writer connection (SQLite has one writer at a time anyway; queueing in the pool is
    /// cheaper than `SQLITE_BUSY` retries).
    write: SqlitePool,
    pub(crate) read: SqlitePool,
    /// Write units go to the group-commit writer.
    writer: tokio::sync::mpsc::Sender<Box<dyn Unit>>,
}

impl Sqlite {
    pub(crate) async fn connect(url: &str, settings: &PoolSettings) -> anyhow::Result<Sqlite> {
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
        Ok(Sqlite {
            write,
            read,
            writer,
        })
    }

    pub(crate) async fn migrate(&self) -> anyhow::Result<()> {
        sqlx::migrate!("migrations/sqlite").run(&self.write).await?;
        Ok(())
    }

    pub(crate) async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }

    pub(crate) async fn run(&self, unit: Box<dyn Unit>) {
        if let Err(e) = self.writer.send(unit).await {
            e.0.done(Err("the database writer has stopped".into()));
        }
    }
}

/// After the writer's own transaction failed (a COMMIT refused on a full disk, a savepoint that
/// could not be opened, a BEGIN that failed), its connection may still be inside a transaction
/// that nothing will end, and every later write would fail on it. It is closed instead of
/// returned (closing a SQLite connection rolls back whatever it had open), so the next group
/// opens a fresh one: the writer heals as soon as the cause is gone, without a restart.
async fn replace_connection(pool: &SqlitePool) {
    match tokio::time::timeout(LOCK_WAIT, pool.acquire()).await {
        Ok(Ok(conn)) => {
            if let Err(e) = conn.close().await {
                tracing::warn!(error = %e, "closing the failed writer connection");
            }
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "the writer connection could not be taken back"),
        Err(_) => tracing::warn!("the writer connection was not given back in time"),
    }
}

/// Group commit. SQLite has one writer at a time and, with `synchronous=FULL`, pays one fsync per
/// commit. The writer takes every unit that is waiting (up to [`MAX_GROUP`]), runs each inside its
/// own SAVEPOINT of one `BEGIN IMMEDIATE` transaction (a unit that fails is rolled back to its
/// savepoint without touching the others), commits once, and only then lets each unit answer.
/// Durability is unchanged, every acknowledged write is fsynced; the cost of the fsync is shared
/// by all the requests that arrived while the previous one was running.
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
                replace_connection(&pool).await;
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
        if committed.is_err() {
            replace_connection(&pool).await;
        }
        for unit in ran {
            unit.done(committed.clone());
        }
    }
}
