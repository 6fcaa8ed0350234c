//! The fast paths: the common case of a send, a result, a lease claim and a drain as one
//! guarded write each, combined with the concurrent ones into one transaction (SQLite's
//! group-commit writer, PostgreSQL's lane). The mailbox decides when a request may take one
//! (`src/mailbox/`); each write re-checks, atomically, the state the mailbox relied on, and a
//! request whose write changed nothing goes down its own transaction.

use super::new_task::NewTask;
use super::ops::StoredResult;
use super::postgres::{self, ClaimArgs, ResultArgs, SendArgs};
use super::records::{Drained, TaskRow};
use super::runner::args;
use super::{sqlite, Inner, Store};
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

/// A long-poll's claim or drain left waiting in PostgreSQL's lane, answered by the batch that
/// queues its task or stores its result.
pub type Parked = postgres::Ticket<postgres::Step>;
/// What a parked claim or drain took.
pub use postgres::Outcome as LaneOutcome;

impl Store {
    /// Inserts a queued task and its `capability_check` audit row (`audit_body`), unless the id
    /// exists: whether it was inserted.
    pub async fn send_fast(&self, t: NewTask, audit_body: String) -> Result<bool> {
        match &self.inner {
            Inner::Postgres(p) => {
                p.lane
                    .send(SendArgs {
                        task: t,
                        audit_body,
                    })
                    .await
            }
            Inner::Sqlite(_) => {
                let mut a = t.columns();
                a.extend_from_slice(args![crate::clock::now_ms(), audit_body.as_str()]);
                let changed: Vec<(i64,)> = self
                    .transact(Box::new(move |tx| {
                        Box::pin(
                            async move { Ok((tx.fetch_all(sqlite::SEND_FAST, &a).await?, true)) },
                        )
                    }))
                    .await?;
                Ok(changed.first().is_some_and(|r| r.0 > 0))
            }
        }
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
    ) -> Result<Option<String>> {
        match &self.inner {
            Inner::Postgres(p) => {
                p.lane
                    .result(ResultArgs {
                        task_id: id.to_owned(),
                        status: r.status.to_owned(),
                        content: r.content.to_owned(),
                        error_message: r.error_message.map(str::to_owned),
                        caller: caller.to_owned(),
                        lease_guard: lease_guard.map(str::to_owned),
                        audit_pre: audit_halves.0,
                        audit_post: audit_halves.1,
                    })
                    .await
            }
            Inner::Sqlite(_) => {
                let a = args![
                    id,
                    r.status,
                    r.content,
                    r.error_message,
                    caller,
                    crate::clock::now_ms(),
                    lease_guard,
                    audit_halves.0,
                    audit_halves.1
                ]
                .to_vec();
                let stored: Vec<(String,)> = self
                    .transact(Box::new(move |tx| {
                        Box::pin(
                            async move { Ok((tx.fetch_all(sqlite::RESULT_FAST, &a).await?, true)) },
                        )
                    }))
                    .await?;
                Ok(stored.into_iter().next().map(|(sender,)| sender))
            }
        }
    }

    /// PostgreSQL: leases the head of the recipient's queue in the lane when it is live; if it
    /// finds nothing, the claim stays parked for a later send. SQLite has no lane: nothing is
    /// tried (`Ok(None)`, no ticket), and the mailbox's own transaction claims.
    pub async fn lane_claim(
        &self,
        recipient: &str,
        lease_id: &str,
        caller: &str,
    ) -> (Result<Option<TaskRow>>, Option<Parked>) {
        match &self.inner {
            Inner::Postgres(p) => {
                let (claimed, ticket) = p
                    .lane
                    .claim(ClaimArgs {
                        recipient: recipient.to_owned(),
                        lease_id: lease_id.to_owned(),
                        caller: caller.to_owned(),
                        if_sent: false,
                    })
                    .await;
                (claimed, Some(ticket))
            }
            Inner::Sqlite(_) => (Ok(None), None),
        }
    }

    /// Drains the sender's oldest pending result. PostgreSQL: in the lane, and when it finds
    /// nothing the drain stays parked for a later result. SQLite: a cheap read first, so an
    /// empty poll never waits for the single writer.
    pub async fn drain_next(&self, sender: &str) -> (Result<Option<Drained>>, Option<Parked>) {
        match &self.inner {
            Inner::Postgres(p) => {
                let (drained, ticket) = p.lane.drain(sender.to_owned()).await;
                (drained, Some(ticket))
            }
            Inner::Sqlite(_) => (self.drain_sqlite(sender).await, None),
        }
    }

    async fn drain_sqlite(&self, sender: &str) -> Result<Option<Drained>> {
        if !self.any_pending(sender).await? {
            return Ok(None);
        }
        let a = args![sender, crate::clock::now_ms()].to_vec();
        self.transact(Box::new(move |tx| {
            Box::pin(async move { Ok((tx.fetch_optional(sqlite::DRAIN, &a).await?, true)) })
        }))
        .await
    }

    /// PostgreSQL: runs the lane on the HTTP worker that starts it (for a server with one HTTP
    /// worker; see `postgres/lane.rs`).
    pub fn run_the_lane_on_the_http_worker(&self) {
        if let Inner::Postgres(p) = &self.inner {
            p.lane.run_on_the_http_worker();
        }
    }

    /// `(kind, requests waiting for the next batch, polls parked)` per kind of PostgreSQL's
    /// lane; nothing on SQLite.
    pub fn lane_gauges(&self) -> Vec<(&'static str, usize, usize)> {
        match &self.inner {
            Inner::Postgres(p) => p.lane.waiting().to_vec(),
            Inner::Sqlite(_) => Vec::new(),
        }
    }

    /// After a commit that made work available: wakes the other instances' long-polls (one
    /// coalesced `NOTIFY` on PostgreSQL; SQLite serves one process).
    pub fn notify_peers(&self) {
        if let Inner::Postgres(p) = &self.inner {
            p.notify_peers();
        }
    }

    /// Calls `woken` whenever another instance may have made work available (PostgreSQL).
    pub fn on_peer_commit(&self, woken: impl Fn() + Send + 'static) {
        if let Inner::Postgres(p) = &self.inner {
            p.on_peer_commit(woken);
        }
    }
}
