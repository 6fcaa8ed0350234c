//! How the store runs a statement on either engine: bound parameters ([`Val`]), rows both
//! engines can decode ([`Row`]), and the write transaction ([`Tx`]). Private to the store: the
//! rest of the service sees only named operations.

use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{FromRow, Postgres, Sqlite, Transaction};

use super::statements::Statements;
use super::{postgres, sqlite};

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

/// `typed_reads!(vis fn first, every(receiver) on value; sqlite arm => executor, postgres arm
/// => executor)` defines the two typed reads of something that reaches one executor per
/// engine: `first` answers the first row (`fetch_optional`), `every` every row (`fetch_all`).
macro_rules! typed_reads {
    ($vis:vis fn $first:ident, $every:ident($($recv:tt)+) on $on:expr;
        $sp:pat => $sx:expr, $pp:pat => $px:expr $(,)?
    ) => {
        typed_reads!(@fn $vis $first -> Option<T>, fetch_optional, ($($recv)+) $on; $sp => $sx, $pp => $px);
        typed_reads!(@fn $vis $every -> Vec<T>, fetch_all, ($($recv)+) $on; $sp => $sx, $pp => $px);
    };
    (@fn $vis:vis $name:ident -> $out:ty, $fetch:ident, ($($recv:tt)+) $on:expr;
        $sp:pat => $sx:expr, $pp:pat => $px:expr
    ) => {
        $vis async fn $name<T: Row>(
            $($recv)+,
            sql: &str,
            args: &[Val],
        ) -> Result<$out, sqlx::Error> {
            match $on {
                $sp => bind_all!(sqlite: sqlx::query_as::<sqlx::Sqlite, T>(sql), args).$fetch($sx).await,
                $pp => bind_all!(postgres: sqlx::query_as::<sqlx::Postgres, T>(sql), args).$fetch($px).await,
            }
        }
    };
}
pub(crate) use typed_reads;

/// A row type that both engines can decode.
pub(crate) trait Row:
    for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{
}
impl<T> Row for T where T: for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + Send + Unpin
{}

/// A write transaction. The mailbox passes it to the named operations of `ops`; it never sees
/// a statement.
pub enum Tx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(Transaction<'static, Postgres>),
}

impl Tx {
    /// This engine's statements.
    pub(crate) fn sql(&self) -> &'static Statements {
        match self {
            Tx::Sqlite(_) => &sqlite::STATEMENTS,
            Tx::Postgres(_) => &postgres::STATEMENTS,
        }
    }

    /// Runs a statement; answers the number of rows it changed.
    pub(crate) async fn execute(&mut self, sql: &str, args: &[Val]) -> Result<u64, sqlx::Error> {
        Ok(match self {
            Tx::Sqlite(tx) => bind_all!(sqlite: sqlx::query::<Sqlite>(sql), args)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
            Tx::Postgres(tx) => bind_all!(postgres: sqlx::query::<Postgres>(sql), args)
                .execute(&mut **tx)
                .await?
                .rows_affected(),
        })
    }

    typed_reads!(pub(crate) fn fetch_optional, fetch_all(&mut self) on self;
        Tx::Sqlite(tx) => &mut **tx,
        Tx::Postgres(tx) => &mut **tx,
    );

    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await,
            Tx::Postgres(tx) => tx.commit().await,
        }
    }

    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        match self {
            Tx::Sqlite(tx) => tx.rollback().await,
            Tx::Postgres(tx) => tx.rollback().await,
        }
    }
}
