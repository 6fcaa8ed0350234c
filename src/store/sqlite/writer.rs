//! SQLite's group-commit writer: every write unit of the service runs here, on the one writer
//! connection.

use sqlx::SqlitePool;

use super::session::SqliteTx;
use crate::store::backend::LOCK_WAIT;
use crate::store::runner::Tx;
use crate::store::unit::Unit;

/// The largest number of units one transaction carries.
const MAX_GROUP: usize = 128;

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
pub(super) async fn group_commit_writer(
    pool: SqlitePool,
    mut units: tokio::sync::mpsc::Receiver<Box<dyn Unit>>,
    commits: tokio::sync::watch::Sender<u64>,
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
            Ok(tx) => Tx::new(Box::new(SqliteTx(tx))),
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
        } else {
            commits.send_modify(|n| *n += 1);
        }
        for unit in ran {
            unit.done(committed.clone());
        }
    }
}
