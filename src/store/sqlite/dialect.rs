//! What SQLite gives the shared statement runner (`store/dialect.rs`): its statements, and a
//! column of a set-based statement bound as JSON text (its statements read it with `json_each`).

use sqlx::sqlite::{SqliteQueryResult, SqliteRow};
use sqlx::Sqlite;

use super::statements::STATEMENTS;
use crate::store::dialect::{Bound, Dialect};
use crate::store::rows::{Rows, RowsOf};
use crate::store::runner::{Column, Val};
use crate::store::statements::Statements;

impl Dialect for Sqlite {
    const STATEMENTS: &'static Statements = &STATEMENTS;

    fn bind<'q>(query: Bound<'q, Sqlite>, val: &'q Val) -> Bound<'q, Sqlite> {
        match val {
            Val::Str(s) => query.bind(s.as_str()),
            Val::Int(i) => query.bind(*i),
            Val::OptStr(s) => query.bind(s.as_deref()),
            Val::OptInt(i) => query.bind(*i),
            Val::Column(Column::Texts(v)) => {
                query.bind(serde_json::to_string(v).unwrap_or_default())
            }
            Val::Column(Column::Ints(v)) => {
                query.bind(serde_json::to_string(v).unwrap_or_default())
            }
        }
    }

    fn rows_affected(done: &SqliteQueryResult) -> u64 {
        done.rows_affected()
    }

    fn rows<'a>(rows: &'a mut (dyn Rows + 'a)) -> &'a mut (dyn RowsOf<SqliteRow> + 'a) {
        rows
    }
}
