//! The one seam between the store and an engine: [`Backend`], the named operations every engine
//! implements (`sqlite/`, `postgres/`), each with all of its own SQL, and [`Engine`], what the
//! service knows of an engine before it opens one. The facade ([`super::Store`]) holds one
//! `Arc<dyn Backend>` and never asks which engine it is; the engines import this file and the
//! shared parts below it, never the facade. `docs/engine.md` says what a new engine provides.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use super::new_task::NewTask;
use super::ops::StoredResult;
use super::records::{Committed, Drained, TaskRow};
use super::rows::Rows;
use super::runner::Val;
use super::statements::Statements;
use super::unit::Unit;
use crate::error::MailboxError;
use crate::metrics::{Metrics, Reading};

type Result<T> = std::result::Result<T, MailboxError>;

/// How long a statement waits for a lock held by someone else before the request answers 503
/// `storage_unavailable` (SQLite `busy_timeout`, PostgreSQL `lock_timeout`).
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

pub struct PoolSettings {
    pub max_connections: u32,
    pub acquire_timeout: Duration,
}

/// Opens an engine's database at a URL (inside the Tokio runtime that will serve it).
pub(crate) type Open = for<'a> fn(
    &'a str,
    &'a PoolSettings,
    Arc<Metrics>,
) -> BoxFuture<'a, anyhow::Result<Arc<dyn Backend>>>;

/// A storage engine as the service knows it before opening one (so not a [`Backend`] method):
/// what it is called, the URLs that name it, how it opens one, and what its URLs and errors
/// mean. Each engine declares its own (`sqlite::ENGINE`, `postgres::ENGINE`), listed in
/// `engines.rs`.
#[derive(Clone, Copy)]
pub struct Engine {
    pub(crate) name: &'static str,
    /// How `/version` names it.
    pub(crate) answers_as: crate::domain::answers::EngineName,
    /// The prefixes of the database URLs it serves.
    pub(crate) schemes: &'static [&'static str],
    /// Whether its commits keep a thread busy of their own (read before the runtime is built).
    pub(crate) wants_own_thread: bool,
    pub(crate) open: Open,
    /// Whether an error the database reported means "it cannot serve now" (busy, locked, full,
    /// out of resources, shutting down, an I/O error), not a bug; `false` for another engine's.
    /// Asked by the conversion of any `sqlx::Error`, which has no store at hand.
    pub(crate) unavailable: fn(&dyn sqlx::error::DatabaseError) -> bool,
    /// The file a URL of this engine keeps the database in, when it is one on this machine.
    pub(crate) local_file: fn(&str) -> Option<PathBuf>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Engine {
    /// The engine's name (logs, the benchmark's reports).
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The engine's name in `/version`.
    pub fn answers_as(self) -> crate::domain::answers::EngineName {
        self.answers_as
    }

    /// Whether the engine's commits keep a thread of their own busy, which the server leaves
    /// them (PostgreSQL's group-commit lane; SQLite's writer is a task like any other).
    pub fn wants_own_thread(self) -> bool {
        self.wants_own_thread
    }
}

/// The named operations of an engine. Reads and the plan of a read take the statement text
/// (shared text from `statements.rs`, or a list's own); writes run as [`Unit`]s in the
/// engine's transactions; the one-write paths (`send_one`, `store_result_one`, and the claim
/// and drain of a long-poll) are each one guarded write, which an engine may combine with the
/// concurrent ones into one commit (SQLite's group-commit writer, PostgreSQL's lane).
pub(crate) trait Backend: Send + Sync + 'static {
    fn engine(&self) -> Engine;
    /// The engine's statements (those whose text differs by engine).
    fn statements(&self) -> &'static Statements;
    /// Runs the engine's migrations (and whatever else its schema needs installed).
    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>>;
    fn close(&self) -> BoxFuture<'_, ()>;
    /// Runs one write unit in a transaction of its own (PostgreSQL, where the server already
    /// groups concurrent commits into one WAL flush) or in the next group commit (SQLite).
    fn run(&self, unit: Box<dyn Unit>) -> BoxFuture<'_, ()>;
    /// A read outside any write (SQLite: a reader connection beside the writer).
    fn read<'a>(
        &'a self,
        sql: &'a str,
        args: &'a [Val],
        rows: &'a mut dyn Rows,
    ) -> BoxFuture<'a, std::result::Result<(), sqlx::Error>>;
    /// The engine's plan of a read, one line per plan row.
    fn explain<'a>(
        &'a self,
        sql: &'a str,
        args: &'a [Val],
    ) -> BoxFuture<'a, std::result::Result<String, sqlx::Error>>;

    /// Inserts a queued task and its `capability_check` audit row (`audit_body`), unless the id
    /// exists: `None` when the id exists. `handed` when a held claim of its recipient was
    /// leased the task in the same commit.
    fn send_one(
        &self,
        task: NewTask,
        audit_body: String,
    ) -> BoxFuture<'_, Result<Option<Committed<()>>>>;
    /// Stores the result of task `id` if it is still in flight, leased to `caller` (under
    /// `lease_guard` when given) and without a cache key, with its `capability_check` audit
    /// row, whose body is `audit_halves.0 + the task's sender + audit_halves.1`. Answers the
    /// task's sender when it was stored.
    fn store_result_one<'a>(
        &'a self,
        id: &'a str,
        result: &'a StoredResult<'a>,
        caller: &'a str,
        lease_guard: Option<&'a str>,
        audit_halves: (String, String),
    ) -> BoxFuture<'a, Result<Option<Committed<String>>>>;
    /// A long-poll's claim: leases the head of the recipient's queue when it is live, and
    /// answers a [`Hold`] that a later send answers if it found nothing. An engine may claim
    /// nothing here and only hold (`Ok(None)` and its hold: the mailbox's own transaction then
    /// claims what is queued already), or neither (`Ok(None)`, no hold: the mailbox's
    /// transaction claims, and a long-poll waits for a wake-up alone).
    fn claim_or_hold<'a>(
        &'a self,
        recipient: &'a str,
        lease_id: &'a str,
        caller: &'a str,
    ) -> BoxFuture<'a, (Result<Option<TaskRow>>, Option<Hold>)>;
    /// A long-poll's drain of the sender's oldest pending result, and a [`Hold`] that a later
    /// result answers if it found nothing (or none: the long-poll waits for a wake-up alone).
    fn drain_or_hold<'a>(
        &'a self,
        sender: &'a str,
    ) -> BoxFuture<'a, (Result<Option<Drained>>, Option<Hold>)>;

    /// From now on, runs the engine's commit task on the HTTP worker whose request starts it
    /// (a server with one HTTP worker; PostgreSQL's lane).
    fn start_on_http_worker(&self) {}
    /// Adds the engine's own metric samples (its commit path's), read at scrape time.
    fn commit_metrics(&self, _out: &mut Vec<Reading>) {}
    /// After a commit that made work available: tells the other instances sharing the
    /// database whom it concerns (lines the mailbox writes and reads): `now` at once, `soon`
    /// (for requests following a task, not leases or drains) within a few milliseconds.
    fn notify_peers(&self, now: String, soon: String) {
        drop((now, soon));
    }
    /// Whether another instance was heard lately (an engine shared by several instances).
    fn has_peers(&self) -> bool {
        false
    }
    /// Calls `woken` with each note another instance sent (`"*"`: anything may have changed).
    fn on_peer_commit(&self, woken: Box<dyn Fn(&str) + Send + 'static>) {
        drop(woken);
    }
}

/// The sending half of the channel a hold's or an element's outcome goes through.
pub(crate) type Responder<R> = oneshot::Sender<Result<R>>;
/// The receiving half of a [`Responder`].
pub(crate) type Awaiting<R> = oneshot::Receiver<Result<R>>;

/// A long-poll's claim or drain that the store keeps for the commit that makes work for it
/// (SQLite beside its writer, PostgreSQL in its lane), answered by the commit that queues its
/// task or stores its result.
pub struct Hold(Box<dyn Holding>);

/// What an engine's hold is.
pub(crate) trait Holding: Send {
    /// What it took, once a commit found something for it.
    fn answered(&mut self) -> BoxFuture<'_, Result<Held>>;
    /// Stops holding: what it took meanwhile (one riding in a running commit is waited for).
    fn leave(self: Box<Self>) -> BoxFuture<'static, Option<Result<Held>>>;
}

impl Hold {
    pub(crate) fn new(holding: impl Holding + 'static) -> Hold {
        Hold(Box::new(holding))
    }

    /// Waits until a commit found something for it.
    pub async fn answered(&mut self) -> Result<Held> {
        self.0.answered().await
    }

    /// Stops holding: what its claim or drain took meanwhile, if anything.
    pub async fn leave(self) -> Option<Result<Held>> {
        self.0.leave().await
    }
}

/// What a hold took.
pub enum Held {
    Claimed(Option<Box<TaskRow>>),
    Drained(Option<Drained>),
    /// An outcome of another kind, or one that could not be read: a server bug.
    Unexpected(MailboxError),
}

impl Held {
    /// A claim's outcome: the leased row, if any.
    pub fn claimed(self) -> Result<Option<TaskRow>> {
        match self {
            Held::Claimed(row) => Ok(row.map(|row| *row)),
            Held::Unexpected(e) => Err(e),
            Held::Drained(_) => Err(MailboxError::internal("a held claim answered a drain")),
        }
    }

    /// A drain's outcome: the drained result, if any.
    pub fn drained(self) -> Result<Option<Drained>> {
        match self {
            Held::Drained(d) => Ok(d),
            Held::Unexpected(e) => Err(e),
            Held::Claimed(_) => Err(MailboxError::internal("a held drain answered a claim")),
        }
    }
}
