//! How PostgreSQL runs a statement: bound as `bind_all!(postgres: …)` binds (a column as an
//! array), its rows handed to the store's [`Rows`] as they arrive, on a transaction ([`PgTx`])
//! or the pool.

use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use sqlx::{PgConnection, Postgres, Transaction};

use super::statements::STATEMENTS;
use crate::store::runner::{bind_all, Rows, Session, Val};
use crate::store::statements::Statements;

/// A write transaction of its own.
pub(super) struct PgTx(pub(super) Transaction<'static, Postgres>);

/// Runs `sql` on `conn` and hands its rows to `rows` (only the first when that is all it wants).
pub(super) async fn fetch<'e, E>(
    conn: E,
    sql: &str,
    args: &[Val],
    rows: &mut dyn Rows,
) -> Result<(), sqlx::Error>
where
    E: sqlx::Executor<'e, Database = Postgres>,
{
    let q = bind_all!(postgres: sqlx::query::<Postgres>(sql), args);
    if rows.first_only() {
        if let Some(row) = q.fetch_optional(conn).await? {
            rows.postgres(&row)?;
        }
    } else {
        let mut stream = q.fetch(conn);
        while let Some(row) = stream.try_next().await? {
            rows.postgres(&row)?;
        }
    }
    Ok(())
}

async fn execute(conn: &mut PgConnection, sql: &str, args: &[Val]) -> Result<u64, sqlx::Error> {
    Ok(bind_all!(postgres: sqlx::query::<Postgres>(sql), args)
        .execute(conn)
        .await?
        .rows_affected())
}

impl Session for PgTx {
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
