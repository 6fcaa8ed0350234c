//! How the store runs a statement on an engine that `sqlx` drives, whichever it is: parameters
//! bound as the engine's [`Dialect`] binds them, rows handed to the store's [`RowsOf`] as they
//! arrive (`rows.rs`), and the write transaction ([`DbTransaction`]) that [`Tx`] runs on. Each
//! engine implements [`Dialect`] for its `sqlx` database in its own folder
//! (`sqlite/dialect.rs`, `postgres/dialect.rs`); nothing here knows which one runs.
//!
//! [`Tx`]: super::runner::Tx

use futures_util::future::BoxFuture;
use futures_util::TryStreamExt;
use sqlx::{Database, Executor, IntoArguments};

use super::rows::{Rows, RowsOf};
use super::runner::{Transaction, Val};
use super::statements::Statements;

/// A statement and the parameters bound to it so far, on engine `DB`.
pub(crate) type Bound<'q, DB> = sqlx::query::Query<'q, DB, <DB as Database>::Arguments<'q>>;

/// What an engine's `sqlx` database gives the shared runner: what differs between engines.
pub(crate) trait Dialect: Database {
    /// The engine's statements (those whose text differs by engine).
    const STATEMENTS: &'static Statements;
    /// Binds one parameter (a [`Val::Column`] as the engine's statements read a column).
    fn bind<'q>(query: Bound<'q, Self>, val: &'q Val) -> Bound<'q, Self>;
    /// The rows a statement changed.
    fn rows_affected(done: &Self::QueryResult) -> u64;
    /// The store's row sink, as one this engine's rows go to.
    fn rows<'a>(rows: &'a mut (dyn Rows + 'a)) -> &'a mut (dyn RowsOf<Self::Row> + 'a);
}

/// `sql` with `args` bound.
pub(crate) fn query<'q, DB: Dialect>(sql: &'q str, args: &'q [Val]) -> Bound<'q, DB> {
    args.iter().fold(sqlx::query::<DB>(sql), DB::bind)
}

/// Runs `sql` on `conn` and hands its rows to `rows` (only the first when that is all it wants).
pub(crate) async fn fetch<'c, DB, E>(
    conn: E,
    sql: &str,
    args: &[Val],
    rows: &mut (dyn RowsOf<DB::Row> + '_),
) -> Result<(), sqlx::Error>
where
    DB: Dialect,
    E: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
{
    let q = query::<DB>(sql, args);
    if rows.first_only() {
        if let Some(row) = q.fetch_optional(conn).await? {
            rows.decode(&row)?;
        }
    } else {
        let mut stream = q.fetch(conn);
        while let Some(row) = stream.try_next().await? {
            rows.decode(&row)?;
        }
    }
    Ok(())
}

/// An engine's open write transaction: the one [`Transaction`] every `sqlx` engine runs
/// ([`Tx`](super::runner::Tx) over it).
pub(crate) struct DbTransaction<DB: Database>(pub(crate) sqlx::Transaction<'static, DB>);

impl<DB> Transaction for DbTransaction<DB>
where
    DB: Dialect,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
{
    fn statements(&self) -> &'static Statements {
        DB::STATEMENTS
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Val],
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>> {
        Box::pin(async move {
            let done = query::<DB>(sql, args).execute(&mut *self.0).await?;
            Ok(DB::rows_affected(&done))
        })
    }

    fn fetch<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Val],
        rows: &'a mut dyn Rows,
    ) -> BoxFuture<'a, Result<(), sqlx::Error>> {
        Box::pin(fetch(&mut *self.0, sql, args, DB::rows(rows)))
    }

    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), sqlx::Error>> {
        Box::pin(self.0.commit())
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), sqlx::Error>> {
        Box::pin(self.0.rollback())
    }
}
