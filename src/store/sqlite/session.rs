//! How SQLite runs a statement: bound as `bind_all!(sqlite: …)` binds (a column as JSON text),
//! its rows handed to the store's [`Rows`] as they arrive, on the writer's transaction
//! ([`SqliteTx`]) or a reader connection.

use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use sqlx::{Sqlite, SqliteConnection, Transaction};

use super::statements::STATEMENTS;
use crate::store::runner::{bind_all, Rows, Session, Val};
use crate::store::statements::Statements;

/// The writer's transaction.
pub(super) struct SqliteTx(pub(super) Transaction<'static, Sqlite>);

/// Runs `sql` on `conn` and hands its rows to `rows` (only the first when that is all it wants).
pub(super) async fn fetch<'e, E>(
    conn: E,
    sql: &str,
    args: &[Val],
    rows: &mut dyn Rows,
) -> Result<(), sqlx::Error>
where
    E: sqlx::Executor<'e, Database = Sqlite>,
{
    let q = bind_all!(sqlite: sqlx::query::<Sqlite>(sql), args);
    if rows.first_only() {
        if let Some(row) = q.fetch_optional(conn).await? {
            rows.sqlite(&row)?;
        }
    } else {
        let mut stream = q.fetch(conn);
        while let Some(row) = stream.try_next().await? {
            rows.sqlite(&row)?;
        }
    }
    Ok(())
}

async fn execute(conn: &mut SqliteConnection, sql: &str, args: &[Val]) -> Result<u64, sqlx::Error> {
    Ok(bind_all!(sqlite: sqlx::query::<Sqlite>(sql), args)
        .execute(conn)
        .await?
        .rows_affected())
}

impl Session for SqliteTx {
    fn statements(&self) -> &'static Statements {
        &STATEMENTS
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Val],
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>> {
        Box::pin(execute(&mut self.0, sql, args))
    }

    fn fetch<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Val],
        rows: &'a mut dyn Rows,
    ) -> BoxFuture<'a, Result<(), sqlx::Error>> {
        Box::pin(fetch(&mut *self.0, sql, args, rows))
    }

    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), sqlx::Error>> {
        Box::pin(self.0.commit())
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), sqlx::Error>> {
        Box::pin(self.0.rollback())
    }
}
