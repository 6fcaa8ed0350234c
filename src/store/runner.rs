//! What a statement is to the store, whichever engine runs it: bound parameters ([`Val`]) and
//! the write transaction ([`Tx`]) over an engine's [`Transaction`], whose rows go to a
//! [`Rows`] (`rows.rs`). Private to the store: the rest of the service sees only named operations. The
//! engines' transactions are `dialect.rs`'s [`DbTransaction`](super::dialect::DbTransaction);
//! nothing here knows which engine runs.

use futures_util::future::BoxFuture;

use super::rows::{Row, Rows};
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

/// One column of a set-based statement's rows, bound as each engine's statements read it (its
/// [`Dialect::bind`](super::dialect::Dialect::bind)): an array on PostgreSQL (read with
/// `unnest`), a JSON array on SQLite.
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

/// An engine's open write transaction: what [`Tx`] runs its statements on.
pub(crate) trait Transaction: Send {
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

/// The writes a unit holds back to make together at its end (`Tx::defer_writes`,
/// `deferred.rs`): audit rows and stored results, in the order they were made.
#[derive(Default)]
pub(crate) struct Deferred {
    pub audits: Vec<DeferredAudit>,
    pub results: Vec<DeferredResult>,
}

/// An audit row held back, as it will be written.
pub(crate) struct DeferredAudit {
    pub now: i64,
    pub issuer: String,
    pub kind: String,
    pub body: String,
    pub filed: bool,
}

/// A stored result held back, as it will be written: task id, status, content, error message,
/// who answered, when.
pub(crate) struct DeferredResult {
    pub id: String,
    pub status: String,
    pub content: String,
    pub error_message: Option<String>,
    pub trace: Option<String>,
    pub by: String,
    pub now: i64,
}

/// A write transaction. The mailbox passes it to the named operations of `ops`; it never sees
/// a statement.
pub struct Tx {
    transaction: Box<dyn Transaction>,
    /// Writes held back to be made together at the end of the unit (`deferred.rs`).
    pub(super) deferred: Option<Deferred>,
}

impl Tx {
    /// A transaction over an engine's.
    pub(crate) fn new(transaction: Box<dyn Transaction>) -> Tx {
        Tx {
            transaction,
            deferred: None,
        }
    }

    /// This engine's statements.
    pub(crate) fn sql(&self) -> &'static Statements {
        self.transaction.statements()
    }

    /// Runs a statement; answers the number of rows it changed.
    pub(crate) async fn execute(&mut self, sql: &str, args: &[Val]) -> Result<u64, sqlx::Error> {
        self.transaction.execute(sql, args).await
    }

    /// The first row a statement answers, if any.
    pub(crate) async fn fetch_optional<T: Row>(
        &mut self,
        sql: &str,
        args: &[Val],
    ) -> Result<Option<T>, sqlx::Error> {
        let mut row = None;
        self.transaction.fetch(sql, args, &mut row).await?;
        Ok(row)
    }

    /// Every row a statement answers.
    pub(crate) async fn fetch_all<T: Row>(
        &mut self,
        sql: &str,
        args: &[Val],
    ) -> Result<Vec<T>, sqlx::Error> {
        let mut rows = Vec::new();
        self.transaction.fetch(sql, args, &mut rows).await?;
        Ok(rows)
    }

    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        self.transaction.commit().await
    }

    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        self.transaction.rollback().await
    }
}
