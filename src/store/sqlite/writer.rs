//! SQLite's group-commit writer: every write unit of the service runs here, on the one writer
//! connection.

use sqlx::SqlitePool;

use crate::store::backend::LOCK_WAIT;
use crate::store::dialect::DbTransaction;
use crate::store::runner::Tx;
use crate::store::unit::{Undo, Unit};

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

/// The text that ends the open savepoint: kept, or undone first.
fn close(kept: bool) -> &'static str {
    if kept {
        "RELEASE unit"
    } else {
        "ROLLBACK TO unit; RELEASE unit"
    }
}

/// Group commit. SQLite has one writer at a time and, with `synchronous=FULL`, pays one fsync per
/// commit. The writer takes every unit that is waiting (up to [`MAX_GROUP`]), runs each inside its
/// own SAVEPOINT of one `BEGIN IMMEDIATE` transaction (a unit that fails is rolled back to its
/// savepoint without touching the others; a unit that refuses nothing needs none, see
/// [`Undo`]), commits once, and only then lets each unit answer.
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
            Ok(tx) => Tx::new(Box::new(DbTransaction(tx))),
            Err(e) => {
                let msg = e.to_string();
                for u in batch.drain(..) {
                    u.done(Err(msg.clone()));
                }
                replace_connection(&pool).await;
                continue;
            }
        };
        // Each unit undone alone runs inside its own savepoint ([`Undo`]).
        // Closing one savepoint and opening the next is a single call to the connection's
        // worker thread (the cost that matters here): SQLite runs every statement of a
        // multi-statement text. A unit without one refuses nothing (its only failures are
        // faults): SQLite copies no page into a savepoint's journal for it, and if it fails,
        // the whole group is undone.
        let mut ran = Vec::with_capacity(batch.len());
        let mut failed: Option<String> = None;
        // The savepoint open, if any, and whether its unit kept what it wrote.
        let mut open: Option<bool> = None;
        for mut unit in batch.drain(..) {
            if failed.is_some() {
                ran.push(unit);
                continue;
            }
            let own = unit.undo() == Undo::Alone;
            let step = match (open.take(), own) {
                (None, true) => Some("SAVEPOINT unit"),
                (Some(true), true) => Some("RELEASE unit; SAVEPOINT unit"),
                (Some(false), true) => Some("ROLLBACK TO unit; RELEASE unit; SAVEPOINT unit"),
                (Some(kept), false) => Some(close(kept)),
                (None, false) => None,
            };
            if let Some(step) = step {
                if let Err(e) = tx.execute(step, &[]).await {
                    failed = Some(e.to_string());
                    ran.push(unit);
                    continue;
                }
            }
            let keep = std::panic::AssertUnwindSafe(unit.run(&mut tx))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("a write unit panicked; its changes are rolled back");
                    false
                });
            if own {
                open = Some(keep);
            } else if !keep {
                failed = Some("a write of the group failed, so the whole group is undone".into());
            }
            ran.push(unit);
        }
        if let (None, Some(kept)) = (&failed, open) {
            if let Err(e) = tx.execute(close(kept), &[]).await {
                failed = Some(e.to_string());
            }
        }
        // A savepoint that cannot be opened or closed means the connection is unusable, and a
        // unit without a savepoint that failed left its group's transaction unknown: the whole
        // group is rolled back and every unit in it answers 503 (retriable).
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
            commits.send_modify(|n| *n = n.wrapping_add(1));
        }
        for unit in ran {
            unit.done(committed.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures_util::future::BoxFuture;
    use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
    use sqlx::SqlitePool;

    use super::group_commit_writer;
    use crate::store::runner::Tx;
    use crate::store::unit::{Undo, Unit};

    /// A unit that runs one text, undone alone or with its group, and records whether its group
    /// committed.
    struct GroupProbe {
        sql: &'static str,
        undo: Undo,
        answers: Arc<Mutex<Vec<(&'static str, bool)>>>,
    }

    impl Unit for GroupProbe {
        fn run<'t>(&'t mut self, tx: &'t mut Tx) -> BoxFuture<'t, bool> {
            Box::pin(async move { tx.execute(self.sql, &[]).await.is_ok() })
        }
        fn done(self: Box<Self>, committed: Result<(), String>) {
            self.answers
                .lock()
                .unwrap()
                .push((self.sql, committed.is_ok()));
        }
        fn undo(&self) -> Undo {
            self.undo
        }
    }

    /// A database file with a table `t (n)`.
    async fn database(name: &str) -> SqlitePool {
        let path =
            std::env::temp_dir().join(format!("a2a-writer-{name}-{}.db", uuid::Uuid::new_v4()));
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .expect("opening a SQLite file");
        sqlx::query("CREATE TABLE t (n INTEGER NOT NULL)")
            .execute(&pool)
            .await
            .expect("creating the table");
        pool
    }

    /// Runs `units` (text, how it is undone) as ONE group of the writer: what each was answered
    /// (whether its group committed) and the rows the table holds after it.
    async fn one_group(
        pool: &SqlitePool,
        units: &[(&'static str, Undo)],
    ) -> (Vec<(&'static str, bool)>, Vec<i64>) {
        let answers = Arc::new(Mutex::new(Vec::new()));
        let (queue, waiting) = tokio::sync::mpsc::channel::<Box<dyn Unit>>(units.len());
        for &(sql, undo) in units {
            let probe = GroupProbe {
                sql,
                undo,
                answers: answers.clone(),
            };
            assert!(queue.try_send(Box::new(probe)).is_ok());
        }
        drop(queue);
        let (commits, _) = tokio::sync::watch::channel(0);
        group_commit_writer(pool.clone(), waiting, commits).await;
        let rows: Vec<(i64,)> = sqlx::query_as("SELECT n FROM t ORDER BY n")
            .fetch_all(pool)
            .await
            .expect("reading the table");
        let answers = answers.lock().unwrap().clone();
        (answers, rows.into_iter().map(|(n,)| n).collect())
    }

    #[tokio::test]
    async fn a_unit_without_a_savepoint_that_fails_undoes_its_whole_group() {
        let pool = database("bare-fails").await;
        let (answers, rows) = one_group(
            &pool,
            &[
                ("INSERT INTO t VALUES (1)", Undo::Alone),
                ("INSERT INTO t VALUES (2)", Undo::WithGroup),
                (
                    "INSERT INTO t VALUES (3); INSERT INTO missing VALUES (4)",
                    Undo::WithGroup,
                ),
                ("INSERT INTO t VALUES (5)", Undo::Alone),
            ],
        )
        .await;
        assert_eq!(answers.len(), 4, "every unit is answered: {answers:?}");
        assert!(
            answers.iter().all(|(_, committed)| !committed),
            "no unit of the group is told it committed: {answers:?}"
        );
        assert_eq!(rows, Vec::<i64>::new(), "the whole group is undone");
    }

    #[tokio::test]
    async fn a_unit_with_a_savepoint_that_fails_is_undone_alone_between_units_without() {
        let pool = database("savepoint-fails").await;
        let (answers, rows) = one_group(
            &pool,
            &[
                ("INSERT INTO t VALUES (1)", Undo::WithGroup),
                (
                    "INSERT INTO t VALUES (2); INSERT INTO missing VALUES (3)",
                    Undo::Alone,
                ),
                ("INSERT INTO t VALUES (4)", Undo::WithGroup),
                ("INSERT INTO t VALUES (5)", Undo::Alone),
                ("INSERT INTO t VALUES (6)", Undo::WithGroup),
            ],
        )
        .await;
        assert_eq!(answers.len(), 5, "every unit is answered: {answers:?}");
        assert!(
            answers.iter().all(|(_, committed)| *committed),
            "the group committed: {answers:?}"
        );
        assert_eq!(rows, vec![1, 4, 5, 6], "only the failed unit is undone");
    }
}
