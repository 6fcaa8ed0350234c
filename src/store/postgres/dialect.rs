//! What PostgreSQL gives the shared statement runner (`store/dialect.rs`): its statements, and a
//! column of a set-based statement bound as an array (its statements read it with `unnest`).

use sqlx::postgres::{PgQueryResult, PgRow};
use sqlx::Postgres;

use super::statements::STATEMENTS;
use crate::store::dialect::{Bound, Dialect};
use crate::store::rows::{Rows, RowsOf};
use crate::store::runner::{Column, Val};
use crate::store::statements::Statements;

impl Dialect for Postgres {
    const STATEMENTS: &'static Statements = &STATEMENTS;

    fn bind<'q>(query: Bound<'q, Postgres>, val: &'q Val) -> Bound<'q, Postgres> {
        match val {
            Val::Str(s) => query.bind(s.as_str()),
            Val::Int(i) => query.bind(*i),
            Val::OptStr(s) => query.bind(s.as_deref()),
            Val::OptInt(i) => query.bind(*i),
            Val::Column(Column::Texts(v)) => query.bind(v.as_slice()),
            Val::Column(Column::Ints(v)) => query.bind(v.as_slice()),
        }
    }

    fn rows_affected(done: &PgQueryResult) -> u64 {
        done.rows_affected()
    }

    fn rows<'a>(rows: &'a mut (dyn Rows + 'a)) -> &'a mut (dyn RowsOf<PgRow> + 'a) {
        rows
    }
}
