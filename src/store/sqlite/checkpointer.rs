//! SQLite's checkpointer: copies the write-ahead log back into the database beside the writer,
//! on a connection of its own, so that no group of writes waits for it.
//!
//! A checkpoint copies every page the WAL holds into the database file and fsyncs it. Run by the
//! writer itself (SQLite's automatic checkpoint), it sits inside the commit that crossed the
//! threshold: that group's requests wait for it, and every group waits behind it. Here it runs
//! on another connection, after every commit that wrote something (the commits that land while
//! one runs share the next). It is PASSIVE: it never waits for the writer or a reader and never
//! blocks them; the frames a reader still needs are copied by a later one. Once every frame is
//! copied, the writer starts the WAL again from its beginning, so the file stays as short as
//! the last few groups. Durability is unchanged: a commit is acknowledged once its WAL frames
//! are fsynced, and a checkpoint only moves frames that are already durable.

use sqlx::SqlitePool;
use tokio::sync::watch;

/// The writer's own automatic checkpoint, in WAL pages: a backstop that only fires when this
/// checkpointer falls that far behind (its connection failing, for one). SQLite's default is
/// 1,000 pages; this checkpointer usually keeps the WAL to a few dozen.
pub const BACKSTOP_PAGES: u32 = 2_000;

/// Checkpoints after each commit the writer counts in `commits` (the commits made while one
/// runs are covered by the next). Ends with the writer.
pub(super) async fn checkpointer(pool: SqlitePool, mut commits: watch::Receiver<u64>) {
    while commits.changed().await.is_ok() {
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            // A full disk or an I/O error: the WAL keeps the frames (they are durable there),
            // and the next commit tries again.
            tracing::warn!(error = %e, "the WAL checkpoint failed; it is retried after the next commit");
        }
    }
}
