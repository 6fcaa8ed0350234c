//! SQLite's write-ahead log is copied into the database beside the writer: a checkpointer on a
//! connection of its own runs every few commits and once the writer is quiet
//! (src/store/sqlite/checkpointer.rs), so that no commit carries a checkpoint (BENCHMARKS.md);
//! and the WAL file stays within the writer's 4,000-page backstop (docs/operations.md).
//! SQLite only: PostgreSQL's WAL is its server's business.

use std::time::{Duration, Instant};

use crate::common::*;

/// One WAL frame: a 24-byte frame header and a 4 KiB page (SQLite's default page size).
const FRAME: u64 = 24 + 4096;

/// The WAL index's header in the `-shm` file (SQLite's file format, "WAL-index format"): the
/// last valid frame of the WAL (`mxFrame`, a native-endian u32 at byte 16) and how many frames
/// have been copied into the database (`nBackfill`, at byte 96).
fn wal_frames(shm: &std::path::Path) -> Option<(u32, u32)> {
    let bytes = std::fs::read(shm).ok()?;
    let at = |i: usize| Some(u32::from_ne_bytes(bytes.get(i..i + 4)?.try_into().ok()?));
    Some((at(16)?, at(96)?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checkpointer_copies_the_sqlite_wal_into_the_database_without_the_writer() {
    run(
        Engine::Sqlite,
        concat!(module_path!(), "::sqlite"),
        AppConfig::default(),
        |app| async move {
            let alice = app.alice();
            let shm = app.dir.join("mailbox.db-shm");
            // One at a time, so each send is its own commit of several pages (the task row, its
            // index entries, its audit row): about 1,300 frames, below the 4,000 at which the
            // writer would checkpoint by itself. Whatever is copied, the checkpointer copied.
            for _ in 0..100 {
                app.send_ok(&alice, &task("alice", "bob")).await;
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let frames = wal_frames(&shm);
                if let Some((last, copied)) = frames {
                    if last > 0 && copied == last {
                        break;
                    }
                }
                assert!(
                    Instant::now() < deadline,
                    "10 s after the last commit, the WAL is not copied into the database \
                     (last frame, frames copied): {frames:?}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // A steady stream of commits, about 6,500 frames, past the backstop: the WAL file
            // is reused from its start, never shrunk, so its size is the most frames it ever
            // held. 4,000 frames and one commit's, with room to spare.
            let wal = app.dir.join("mailbox.db-wal");
            let mut largest = 0;
            for _ in 0..500 {
                app.send_ok(&alice, &task("alice", "bob")).await;
                largest = largest.max(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0));
            }
            assert!(
                largest <= 4_200 * FRAME,
                "the WAL grew to {} frames, past the writer's 4,000-page backstop",
                largest / FRAME
            );
        },
    )
    .await;
}
