//! SQLite's checkpointer: copies the write-ahead log back into the database beside the writer,
//! on a connection of its own, so that no group of writes waits for it.
//!
//! A checkpoint copies every page the WAL holds into the database file and fsyncs it. Run by the
//! writer itself (SQLite's automatic checkpoint), it sits inside the commit that crossed the
//! threshold: that group's requests wait for it, and every group waits behind it. Here it runs
//! on another connection, every few commits and once the writer is quiet. It is PASSIVE: it
//! never waits for the writer or a reader and never blocks them; the frames a reader still needs
//! are copied by a later one. The WAL starts again from its beginning when a write finds every
//! frame copied; under a steady load that is mostly when the writer's backstop
//! ([`BACKSTOP_PAGES`]) finds the work already done, so the WAL stays within that size.
//! Durability is unchanged: a commit is acknowledged once its WAL frames are fsynced, and a
//! checkpoint only moves frames that are already durable.

use std::time::Duration;

use sqlx::SqlitePool;
use tokio::sync::watch;

/// The writer's own automatic checkpoint, in WAL pages: a backstop that only fires when this
/// checkpointer falls that far behind (its connection failing, for one). SQLite's default is
/// 1,000 pages.
pub const BACKSTOP_PAGES: u32 = 4_000;

/// Commits between two checkpoints. A page that several commits change (the newest leaf of an
/// index, a queue's head) is copied once per checkpoint, and the database file is fsynced once
/// per checkpoint, beside the WAL's fsync of every commit: checkpointing after every commit
/// costs a tenth of SQLite's closed loop (BENCHMARKS.md).
const COMMITS_PER_CHECKPOINT: u64 = 16;

/// How long after the writer's last commit the checkpointer copies what is left.
const QUIET: Duration = Duration::from_millis(100);

/// Checkpoints every [`COMMITS_PER_CHECKPOINT`] commits the writer counts in `commits`, and once
/// the writer has been quiet for [`QUIET`]. Ends with the writer.
pub(super) async fn checkpointer(pool: SqlitePool, mut commits: watch::Receiver<u64>) {
    let mut copied: u64 = 0;
    loop {
        let quiet = if *commits.borrow() > copied {
            match tokio::time::timeout(QUIET, commits.changed()).await {
                Ok(Ok(())) => false,
                Ok(Err(_)) => return,
                Err(_) => true,
            }
        } else if commits.changed().await.is_err() {
            return;
        } else {
            false
        };
        let now = *commits.borrow_and_update();
        if !quiet && now.wrapping_sub(copied) < COMMITS_PER_CHECKPOINT {
            continue;
        }
        copied = now;
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            // A full disk or an I/O error: the WAL keeps the frames (they are durable there),
            // and the next checkpoint copies them.
            tracing::warn!(error = %e, "the WAL checkpoint failed; the next one copies its pages");
        }
    }
}
