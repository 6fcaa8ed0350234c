//! A database that cannot serve in time (its write lock held by someone else past the lock
//! timeout) is answered 503 `storage_unavailable`, retriable, with `Retry-After`, and changes
//! nothing (API.md §9).

use sqlx::{Connection, Executor};

use crate::common::*;

async fn a_locked_database_answers_503_retriable_and_changes_nothing(app: TestApp) {
    // Another client holds the lock the send needs.
    let mut sqlite_holder = None;
    let mut pg_holder = None;
    match app.engine {
        Engine::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&app.db_url).await.unwrap();
            c.execute("BEGIN EXCLUSIVE").await.unwrap();
            sqlite_holder = Some(c);
        }
        Engine::Postgres => {
            let mut c = sqlx::PgConnection::connect(&app.db_url).await.unwrap();
            c.execute("BEGIN").await.unwrap();
            c.execute("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE")
                .await
                .unwrap();
            pg_holder = Some(c);
        }
    }
    let t = task("alice", "bob");
    let r = app.send(&app.alice(), &t).await;
    assert_unavailable(&r);
    // Released: nothing of the refused send was kept, and the retry goes through.
    if let Some(mut c) = sqlite_holder {
        c.execute("ROLLBACK").await.unwrap();
        let _ = c.close().await;
    }
    if let Some(mut c) = pg_holder {
        c.execute("ROLLBACK").await.unwrap();
        let _ = c.close().await;
    }
    app.assert_empty("after the 503").await;
    app.send_ok(&app.alice(), &t).await;
}
both_engines!(a_locked_database_answers_503_retriable_and_changes_nothing);
