//! What a statement is to the store, whichever engine runs it: bound parameters ([`Val`]),
//! rows both engines can decode ([`Row`], collected through [`Rows`]), and the write
//! transaction ([`Tx`]) over an engine's [`Session`]. Private to the store: the rest of the
//! service sees only named operations. The engines (`sqlite/`, `postgres/`) implement
//! [`Session`]; nothing here knows which one runs.

use futures_util::future::BoxFuture;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::FromRow;

use super::statements::Statements;

/// A bound parameter.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    Str(String),
    Int(i64),
    OptStr(Option<String>),
    OptInt(Option<i64>),
    /// One column of a set-based statement's rows.
    Column(Column),
}

/// One column of a set-based statement's rows: an array on PostgreSQL (read with `unnest`), a
/// JSON array on SQLite.
#[derive(Clone, Debug)]
pub(crate) enum Column {
    /// `text[]`.
    Texts(Vec<Option<String>>),
    /// `bigint[]`.
    Ints(Vec<Option<i64>>),
}

/// `val_from! { T => |v| value; … }`: how each Rust type becomes a bound parameter.
macro_rules! val_from {
    ($($t:ty => |$v:ident| $e:expr;)+) => {
        $(impl From<$t> for Val {
            fn from($v: $t) -> Val {
                $e
            }
        })+
    };
}

val_from! {
    &str => |v| Val::Str(v.to_owned());
    String => |v| Val::Str(v);
    &String => |v| Val::Str(v.clone());
    i64 => |v| Val::Int(v);
    Option<String> => |v| Val::OptStr(v);
    Option<&str> => |v| Val::OptStr(v.map(str::to_owned));
    Option<i64> => |v| Val::OptInt(v);
    uuid::Uuid => |v| Val::Str(v.to_string());
    Option<uuid::Uuid> => |v| Val::OptStr(v.map(|u| u.to_string()));
}

/// `args![a, b, c]` builds a parameter list.
macro_rules! args {
    ($($v:expr),* $(,)?) => { &[$($crate::store::runner::Val::from($v)),*][..] };
}
pub(crate) use args;

/// `bind_all!(engine: query, args)` binds every parameter; a column is an array on
/// PostgreSQL and JSON text on SQLite.
macro_rules! bind_all {
    (sqlite: $q:expr, $args:expr) => {
        bind_all!(@ $q, $args, |v| serde_json::to_string(v).unwrap_or_default())
    };
    (postgres: $q:expr, $args:expr) => {
        bind_all!(@ $q, $args, |v| v.as_slice())
    };
    (@ $q:expr, $args:expr, |$v:ident| $column:expr) => {{
        let mut q = $q;
        for a in $args {
            q = match a {
                Val::Str(s) => q.bind(s.as_str()),
                Val::Int(i) => q.bind(*i),
                Val::OptStr(s) => q.bind(s.as_deref()),
                Val::OptInt(i) => q.bind(*i),
                Val::Column($crate::store::runner::Column::Texts($v)) => q.bind($column),
                Val::Column($crate::store::runner::Column::Ints($v)) => q.bind($column),
            };
        }
        q
    }};
}
pub(crate) use bind_all;

/// A row type that both engines can decode.
pub(crate) trait Row:
    for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{
}
impl<T> Row for T where T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{}

/// Where a statement's rows go: each engine hands over its own rows, decoded here into the
/// store's types. `Option<T>` keeps the first row (the engine fetches at most one), `Vec<T>`
/// every row, decoded as they arrive.
pub(crate) trait Rows: Send {
    /// Whether only the first row is wanted.
    fn first_only(&self) -> bool;
    fn sqlite(&mut self, row: &SqliteRow) -> Result<(), sqlx::Error>;
    fn postgres(&mut self, row: &PgRow) -> Result<(), sqlx::Error>;
}

impl<T: Row> Rows for Option<T> {
    fn first_only(&self) -> bool {
        true
    }
    fn sqlite(&mut self, row: &SqliteRow) -> Result<(), sqlx::Error> {
        *self = Some(<T as FromRow<SqliteRow>>::from_row(row)?);
        Ok(())
    }
    fn postgres(&mut self, row: &PgRow) -> Result<(), sqlx::Error> {
        *self = Some(<T as FromRow<PgRow>>::from_row(row)?);
        Ok(())
    }
}

impl<T: Row> Rows for Vec<T> {
    fn first_only(&self) -> bool {
        false
    }
    fn sqlite(&mut self, row: &SqliteRow) -> Result<(), sqlx::Error> {
        self.push(<T as FromRow<SqliteRow>>::from_row(row)?);
        Ok(())
    }
    fn postgres(&mut self, row: &PgRow) -> Result<(), sqlx::Error> {
        self.push(<T as FromRow<PgRow>>::from_row(row)?);
        Ok(())
    }
}

/// An engine's open write transaction: what [`Tx`] runs its statements on.
pub(crate) trait Session: Send {
    /// The engine's statements.
    fn statements(&self) -> &'static Statements;
    /// Runs a statement; answers the number of rows it changed.
    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Val],
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>>;
    /// Runs a statement and hands its rows to `rows`.
    fn fetch<'a>(
        &'a mut self,
        sql: &'a str,
        args: &'a [Val],
        rows: &'a mut dyn Rows,
    ) -> BoxFuture<'a, Result<(), sqlx::Error>>;
    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), sqlx::Error>>;
    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), sqlx::Error>>;
}

/// A write transaction. The mailbox passes it to the named operations of `ops`; it never sees
/// a statement.
pub struct Tx {
    session: Box<dyn Session>,
}

impl Tx {
    /// A transaction over an engine's session.
    pub(crate) fn new(session: Box<dyn Session>) -> Tx {
        Tx { session }
    }

    /// This engine's statements.
    pub(crate) fn sql(&self) -> &'static Statements {
        self.session.statements()
    }

    /// Runs a statement; answers the number of rows it changed.
    pub(crate) async fn execute(&mut self, sql: &str, args: &[Val]) -> Result<u64, sqlx::Error> {
        self.session.execute(sql, args).await
    }

    /// The first row a statement answers, if any.
    pub(crate) async fn fetch_optional<T: Row>(
        &mut self,
        sql: &str,
        args: &[Val],
    ) -> Result<Option<T>, sqlx::Error> {
        let mut row = None;
        self.session.fetch(sql, args, &mut row).await?;
        Ok(row)
    }

    /// Every row a statement answers.
    pub(crate) async fn fetch_all<T: Row>(
        &mut self,
        sql: &str,
        args: &[Val],
    ) -> Result<Vec<T>, sqlx::Error> {
        let mut rows = Vec::new();
        self.session.fetch(sql, args, &mut rows).await?;
        Ok(rows)
    }

    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        self.session.commit().await
    }

    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        self.session.rollback().await
    }
}
