//! Rows as the store takes them from an engine, whichever it is: each row decoded into the
//! store's types as it arrives ([`RowsOf`]), and the engines a row type and a row sink must
//! serve ([`Row`], [`Rows`]: one bound per engine's `sqlx` row type).

use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::FromRow;

/// A row type every engine decodes (`#[derive(sqlx::FromRow)]` gives it): one bound per engine.
pub(crate) trait Row:
    for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{
}
impl<T> Row for T where T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{}

/// Where a statement's rows go, whichever engine runs it ([`super::backend::Backend::read`],
/// [`super::runner::Transaction::fetch`]): one bound per engine.
pub(crate) trait Rows: RowsOf<SqliteRow> + RowsOf<PgRow> {}
impl<T: RowsOf<SqliteRow> + RowsOf<PgRow> + ?Sized> Rows for T {}

/// Where a statement's rows go, decoded from an engine's rows `R` into the store's types as
/// they arrive: `Option<T>` keeps the first row (the engine fetches at most one), `Vec<T>`
/// every row.
pub(crate) trait RowsOf<R>: Send {
    /// Whether only the first row is wanted.
    fn first_only(&self) -> bool;
    fn decode(&mut self, row: &R) -> Result<(), sqlx::Error>;
}

impl<R: sqlx::Row, T: for<'r> FromRow<'r, R> + Send> RowsOf<R> for Option<T> {
    fn first_only(&self) -> bool {
        true
    }
    fn decode(&mut self, row: &R) -> Result<(), sqlx::Error> {
        *self = Some(T::from_row(row)?);
        Ok(())
    }
}

impl<R: sqlx::Row, T: for<'r> FromRow<'r, R> + Send> RowsOf<R> for Vec<T> {
    fn first_only(&self) -> bool {
        false
    }
    fn decode(&mut self, row: &R) -> Result<(), sqlx::Error> {
        self.push(T::from_row(row)?);
        Ok(())
    }
}
