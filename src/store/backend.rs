//! The one seam between the store and an engine: [`Backend`], the named operations every engine
//! implements (`sqlite/`, `postgres/`), each with all of its own SQL. The facade ([`super::Store`])
//! holds one `Arc<dyn Backend>` and never asks which engine it is; the engines import this file
//! and the shared parts below it, never the facade.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::new_task::NewTask;
use super::ops::StoredResult;
use super::records::{Committed, Drained, TaskRow};
use super::runner::{Rows, Val};
use super::statements::Statements;
use super::unit::Unit;
use crate::error::MailboxError;
use crate::metrics::Metrics;

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

/// A storage engine: what it is called, the URLs that name it, and how it opens one. Each
/// engine declares its own (`sqlite::ENGINE`, `postgres::ENGINE`).
#[derive(Clone, Copy)]
pub struct Engine {
    pub(crate) name: &'static str,
    /// How `/version` names it.
    pub(crate) answers_as: crate::domain::answers::EngineName,
    /// The prefixes of the database URLs it serves.
    pub(crate) schemes: &'static [&'static str],
    pub(crate) runs_a_lane: bool,
    pub(crate) open: Open,
    /// Whether an error the database reported means "it cannot serve now" (busy, locked, full,
    /// out of resources, shutting down, an I/O error), not a bug; `false` for another engine's.
    pub(crate) unavailable: fn(&dyn sqlx::error::DatabaseError) -> bool,
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

    /// Whether the engine commits through a group-commit lane of its own, which wants a thread
    /// of its own (PostgreSQL; SQLite's writer is a task like any other).
    pub fn runs_a_lane(self) -> bool {
        self.runs_a_lane
    }
}

/// The named operations of an engine. Reads and the plan of a read take the statement text
/// (shared text from `statements.rs`, or a list's own); writes run as [`Unit`]s in the
/// engine's transactions; the fast paths are each one guarded write combined with the
/// concurrent ones into one commit (SQLite's group-commit writer, PostgreSQL's lane).
pub(crate) trait Backend: Send + Sync + 'static {
    fn engine(&self) -> Engine;
    /// The engine's statements (those whose text differs by engine).
    fn statements(&self) -> &'static Statements;
    /// Runs the engine's migrations (and, on PostgreSQL, installs `step_many.sql`).
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
    /// exists: `None` when the id exists.
    fn send_fast(
        &self,
        task: NewTask,
        audit_body: String,
    ) -> BoxFuture<'_, Result<Option<Committed<()>>>>;
    /// Stores the result of task `id` if it is still in flight, leased to `caller` (under
    /// `lease_guard` when given) and without a cache key, with its `capability_check` audit
    /// row, whose body is `audit_halves.0 + the task's sender + audit_halves.1`. Answers the
    /// task's sender when it was stored.
    fn result_fast<'a>(
        &'a self,
        id: &'a str,
        result: &'a StoredResult<'a>,
        caller: &'a str,
        lease_guard: Option<&'a str>,
        audit_halves: (String, String),
    ) -> BoxFuture<'a, Result<Option<Committed<String>>>>;
    /// Leases the head of the recipient's queue in the engine's lane when it is live; if it
    /// finds nothing, the claim stays parked for a later send. An engine without a lane only
    /// parks the claim (`Ok(None)` and its ticket): the mailbox's own transaction claims what
    /// is queued already.
    fn lane_claim<'a>(
        &'a self,
        recipient: &'a str,
        lease_id: &'a str,
        caller: &'a str,
    ) -> BoxFuture<'a, (Result<Option<TaskRow>>, Option<LaneTicket>)>;
    /// Drains the sender's oldest pending result (in a lane, a drain that finds nothing stays
    /// parked for a later result).
    fn drain_next<'a>(
        &'a self,
        sender: &'a str,
    ) -> BoxFuture<'a, (Result<Option<Drained>>, Option<LaneTicket>)>;

    /// Runs the lane on the HTTP worker that starts it (an engine with a lane).
    fn run_the_lane_on_the_http_worker(&self) {}
    /// `(kind, requests waiting for the next batch, polls parked)` per kind of the lane.
    fn lane_gauges(&self) -> Vec<(&'static str, usize, usize)> {
        Vec::new()
    }
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

/// A long-poll's claim or drain left waiting in an engine's lane, answered by the batch that
/// queues its task or stores its result.
pub struct LaneTicket(Box<dyn Waiting>);

/// What an engine's parked claim or drain is.
pub(crate) trait Waiting: Send {
    /// What it took, once a batch found something for it.
    fn answered(&mut self) -> BoxFuture<'_, Result<LaneOutcome>>;
    /// Stops waiting: what it took meanwhile (one riding in the running batch is waited for).
    fn leave(self: Box<Self>) -> BoxFuture<'static, Option<Result<LaneOutcome>>>;
}

impl LaneTicket {
    pub(crate) fn new(waiting: impl Waiting + 'static) -> LaneTicket {
        LaneTicket(Box::new(waiting))
    }

    /// Waits until a batch found something for it.
    pub async fn answered(&mut self) -> Result<LaneOutcome> {
        self.0.answered().await
    }

    /// Stops waiting: what its claim or drain took meanwhile, if anything.
    pub async fn leave(self) -> Option<Result<LaneOutcome>> {
        self.0.leave().await
    }
}

/// What a parked claim or drain took.
pub enum LaneOutcome {
    Claimed(Option<Box<TaskRow>>),
    Drained(Option<Drained>),
    /// An outcome of another kind, or one that could not be read: a server bug.
    Unexpected(MailboxError),
}

impl LaneOutcome {
    /// A claim's outcome: the leased row, if any.
    pub fn claimed(self) -> Result<Option<TaskRow>> {
        match self {
            LaneOutcome::Claimed(row) => Ok(row.map(|row| *row)),
            LaneOutcome::Unexpected(e) => Err(e),
            LaneOutcome::Drained(_) => {
                Err(MailboxError::internal("a parked claim answered a drain"))
            }
        }
    }

    /// A drain's outcome: the drained result, if any.
    pub fn drained(self) -> Result<Option<Drained>> {
        match self {
            LaneOutcome::Drained(d) => Ok(d),
            LaneOutcome::Unexpected(e) => Err(e),
            LaneOutcome::Claimed(_) => {
                Err(MailboxError::internal("a parked drain answered a claim"))
            }
        }
    }
}
