//! SQLite's write-ahead log stays short: a checkpointer beside the writer copies it into the
//! database after every commit (src/store/sqlite/checkpointer.rs), so that the WAL restarts from
//! its beginning instead of growing, and no commit carries a checkpoint (BENCHMARKS.md).
//! SQLite only: PostgreSQL's WAL is its server's business.

use crate::common::*;

/// One WAL frame: a 24-byte frame header and a 4 KiB page (SQLite's default page size).
const FRAME: u64 = 24 + 4096;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_wal_is_checkpointed_beside_the_writer_and_stays_short() {
    run(
        Engine::Sqlite,
        concat!(module_path!(), "::sqlite"),
        AppConfig::default(),
        |app| async move {
            let alice = app.alice();
            let wal = app.dir.join("mailbox.db-wal");
            // One at a time, so each send is its own commit of several pages (the task row,
            // its index entries and its audit row): thousands of frames in all, several times
            // the writer's own backstop threshold of 2,000 pages.
            let mut largest = 0;
            for _ in 0..400 {
                app.send_ok(&alice, &task("alice", "bob")).await;
                largest = largest.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
            }
            // The WAL file is reused from its start after a checkpoint, never shrunk: its size
            // is the most frames it ever held. A few commits' worth, far below the backstop at
            // which the writer would checkpoint by itself.
            assert!(
                largest <= 400 * FRAME,
                "the WAL grew to {largest} bytes ({} frames): the checkpointer does not keep \
                 it short",
                largest / FRAME
            );
            assert!(largest > 0, "the WAL was written");
        },
    )
    .await;
}
