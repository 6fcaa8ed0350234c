//! SQLite's write-ahead log stays short: the single writer checkpoints it into the database
//! every few hundred pages (`SQLITE_WAL_AUTOCHECKPOINT` in src/store/sqlite/mod.rs), so that no commit
//! carries a large checkpoint (the latency tail of a deep queue, BENCHMARKS.md).
//! SQLite only: PostgreSQL's WAL is its server's business.

use crate::common::*;

/// One WAL frame: a 24-byte frame header and a 4 KiB page (SQLite's default page size).
const FRAME: u64 = 24 + 4096;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_writer_checkpoints_its_wal_every_few_hundred_pages() {
    run(
        Engine::Sqlite,
        concat!(module_path!(), "::sqlite"),
        AppConfig::default(),
        |app| async move {
            let alice = app.alice();
            let wal = app.dir.join("mailbox.db-wal");
            // One at a time, so each send is its own commit of several pages (the task row,
            // its index entries and its audit row): thousands of frames in all, several times
            // SQLite's default checkpoint threshold of 1,000 pages.
            let mut largest = 0;
            for _ in 0..400 {
                app.send_ok(&alice, &task("alice", "bob")).await;
                largest = largest.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
            }
            // The WAL file is reused from its start after a checkpoint, never shrunk: its size
            // is the most frames it ever held. 300 pages plus one commit's, with room to spare.
            assert!(
                largest <= 400 * FRAME,
                "the WAL grew to {largest} bytes ({} frames): the writer does not checkpoint \
                 every 300 pages",
                largest / FRAME
            );
            assert!(largest > 0, "the WAL was written");
        },
    )
    .await;
}
