//! A database that cannot serve in time (its write lock held by someone else past the lock
//! timeout) is answered 503 `storage_unavailable`, retriable, with `Retry-After`, and changes
//! nothing (docs/contract.md#errors).

use std::time::{Duration, Instant};

use sqlx::{Connection, Executor};

use crate::common::*;

/// Polls `GET /readyz` until it answers `status`, and returns that answer; panics after
/// `within`. Readiness is checked at most once a second, so a change shows within about that.
pub async fn readyz_becomes(api: &Api, status: u16, within: Duration) -> Resp {
    let start = Instant::now();
    loop {
        let r = api.get_anon("/readyz").await;
        if r.status == status {
            return r;
        }
        assert!(
            start.elapsed() < within,
            "/readyz still answers {} after {:?}, not {status}: {}",
            r.status,
            start.elapsed(),
            r.text
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

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
