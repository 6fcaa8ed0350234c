//! The fast paths: the common case of a send, a result, a lease claim and a drain as one
//! guarded write each, combined with the concurrent ones into one transaction (SQLite's
//! group-commit writer, PostgreSQL's lane); each engine runs its own (`sqlite/fast.rs`,
//! `postgres/fast.rs`). The mailbox decides when a request may take one (`src/mailbox/`); each
//! write re-checks, atomically, the state the mailbox relied on, and a request whose write
//! changed nothing goes down its own transaction.

use super::backend::LaneTicket;
use super::facade::Store;
use super::new_task::NewTask;
use super::ops::StoredResult;
use super::records::{Committed, Drained, TaskRow};
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

impl Store {
    /// Inserts a queued task and its `capability_check` audit row (`audit_body`), unless the id
    /// exists: `None` when the id exists.
    pub async fn send_fast(&self, t: NewTask, audit_body: String) -> Result<Option<Committed<()>>> {
        self.backend().send_fast(t, audit_body).await
    }

    /// Stores the result of task `id` if it is still in flight, leased to `caller` (under
    /// `lease_guard` when given) and without a cache key, with its `capability_check` audit row,
    /// whose body is `audit_halves.0 + the task's sender + audit_halves.1`. Answers the task's
    /// sender when it was stored.
    pub async fn result_fast(
        &self,
        id: &str,
        r: &StoredResult<'_>,
        caller: &str,
        lease_guard: Option<&str>,
        audit_halves: (String, String),
    ) -> Result<Option<Committed<String>>> {
        self.backend()
            .result_fast(id, r, caller, lease_guard, audit_halves)
            .await
    }

    /// With a lane (PostgreSQL): leases the head of the recipient's queue in the lane when it is
    /// live; if it finds nothing, the claim stays parked for a later send. Without one (SQLite)
    /// the claim is only parked (`Ok(None)` and its ticket): a later send leases its task to it,
    /// and the mailbox's own transaction claims what is queued already.
    pub async fn lane_claim(
        &self,
        recipient: &str,
        lease_id: &str,
        caller: &str,
    ) -> (Result<Option<TaskRow>>, Option<LaneTicket>) {
        self.backend().lane_claim(recipient, lease_id, caller).await
    }

    /// Drains the sender's oldest pending result. PostgreSQL: in the lane, and when it finds
    /// nothing the drain stays parked for a later result. SQLite: a cheap read first, so an
    /// empty poll never waits for the single writer.
    pub async fn drain_next(&self, sender: &str) -> (Result<Option<Drained>>, Option<LaneTicket>) {
        self.backend().drain_next(sender).await
    }

    /// PostgreSQL: runs the lane on the HTTP worker that starts it (for a server with one HTTP
    /// worker; see `postgres/lane.rs`).
    pub fn run_the_lane_on_the_http_worker(&self) {
        self.backend().run_the_lane_on_the_http_worker();
    }

    /// `(kind, requests waiting for the next batch, polls parked)` per kind of PostgreSQL's
    /// lane; nothing on SQLite.
    pub fn lane_gauges(&self) -> Vec<(&'static str, usize, usize)> {
        self.backend().lane_gauges()
    }

    /// After a commit that made work available: tells the other instances whom it concerns
    /// (lines naming recipients, senders and tasks; `NOTIFY` on PostgreSQL, folded while one is
    /// on its way; SQLite serves one process): `now` at once, `soon` (for requests following a
    /// task) within a few milliseconds.
    pub fn notify_peers(&self, now: String, soon: String) {
        self.backend().notify_peers(now, soon);
    }

    /// Whether another instance shares the database now (then commits tell it whom they
    /// concern; see [`Store::notify_peers`]).
    pub fn has_peers(&self) -> bool {
        self.backend().has_peers()
    }

    /// Calls `woken` with each note of another instance (PostgreSQL).
    pub fn on_peer_commit(&self, woken: impl Fn(&str) + Send + 'static) {
        self.backend().on_peer_commit(Box::new(woken));
    }
}
