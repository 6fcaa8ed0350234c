//! PostgreSQL's side of the seam: a transaction of its own per write unit, reads on the pool,
//! and the four one-write paths in the group-commit lane (`lane.rs`), whose claims and drains
//! that find nothing stay parked there ([`Hold`]).

use futures_util::future::BoxFuture;
use sqlx::Row as _;

use super::statements::{INSTALL_LOCK, STATEMENTS};
use super::steps::{self, ClaimArgs, Outcome, ResultArgs, SendArgs};
use super::{metrics, peers, Postgres, ENGINE};
use crate::error::MailboxError;
use crate::metrics::Reading;
use crate::store::backend::{Backend, Engine, Held, Hold, Holding};
use crate::store::dialect::{fetch, query, DbTransaction};
use crate::store::new_task::NewTask;
use crate::store::ops::StoredResult;
use crate::store::records::{Committed, Drained, TaskRow};
use crate::store::rows::Rows;
use crate::store::runner::{Tx, Val};
use crate::store::statements::Statements;
use crate::store::unit::Unit;

type Result<T> = std::result::Result<T, MailboxError>;

impl Backend for Postgres {
    fn engine(&self) -> Engine {
        ENGINE
    }

    fn statements(&self) -> &'static Statements {
        &STATEMENTS
    }

    /// The migrations, then the group-commit function, installed under a lock so that instances
    /// starting together take turns.
    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::migrate!("migrations/postgres")
                .run(&self.pool)
                .await?;
            let mut tx = self.pool.begin().await?;
            let conn: &mut sqlx::PgConnection = &mut tx;
            sqlx::query(INSTALL_LOCK).execute(&mut *conn).await?;
            let source = steps::step_many_source();
            // A text with no parameters runs as a simple query, every statement of it in turn.
            sqlx::Executor::execute(conn, source.as_str()).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.pool.close())
    }

    fn run(&self, mut unit: Box<dyn Unit>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let mut tx = match self.pool.begin().await {
                Ok(tx) => Tx::new(Box::new(DbTransaction(tx))),
                Err(e) => return unit.done(Err(e.to_string())),
            };
            let keep = unit.run(&mut tx).await;
            let committed = if keep {
                tx.commit().await.map_err(|e| e.to_string())
            } else {
                let _ = tx.rollback().await;
                Ok(())
            };
            unit.done(committed);
        })
    }

    fn read<'a>(
        &'a self,
        sql: &'a str,
        args: &'a [Val],
        rows: &'a mut dyn Rows,
    ) -> BoxFuture<'a, std::result::Result<(), sqlx::Error>> {
        Box::pin(fetch(&self.pool, sql, args, rows))
    }

    fn explain<'a>(
        &'a self,
        sql: &'a str,
        args: &'a [Val],
    ) -> BoxFuture<'a, std::result::Result<String, sqlx::Error>> {
        Box::pin(async move {
            // With sequential scans and sorts priced out, the plan says whether an index can
            // serve the read in its order, whatever the table's size and statistics.
            let mut tx = self.pool.begin().await?;
            sqlx::query("SET LOCAL enable_seqscan = off")
                .execute(&mut *tx)
                .await?;
            sqlx::query("SET LOCAL enable_sort = off")
                .execute(&mut *tx)
                .await?;
            let text = format!("EXPLAIN {sql}");
            let rows = query::<sqlx::Postgres>(&text, args)
                .fetch_all(&mut *tx)
                .await?;
            tx.rollback().await?;
            let lines = rows
                .iter()
                .map(|r| r.try_get::<String, _>(0))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(lines.join("\n"))
        })
    }

    fn send_one(
        &self,
        task: NewTask,
        audit_body: String,
    ) -> BoxFuture<'_, Result<Option<Committed<()>>>> {
        Box::pin(self.lane.send(SendArgs { task, audit_body }))
    }

    fn store_result_one<'a>(
        &'a self,
        id: &'a str,
        r: &'a StoredResult<'a>,
        caller: &'a str,
        lease_guard: Option<&'a str>,
        audit_halves: (String, String),
    ) -> BoxFuture<'a, Result<Option<Committed<String>>>> {
        Box::pin(self.lane.result(ResultArgs {
            task_id: id.to_owned(),
            status: r.status.to_owned(),
            content: r.content.to_owned(),
            error_message: r.error_message.map(str::to_owned),
            caller: caller.to_owned(),
            lease_guard: lease_guard.map(str::to_owned),
            audit_pre: audit_halves.0,
            audit_post: audit_halves.1,
        }))
    }

    fn claim_or_hold<'a>(
        &'a self,
        recipient: &'a str,
        lease_id: &'a str,
        caller: &'a str,
    ) -> BoxFuture<'a, (Result<Option<TaskRow>>, Option<Hold>)> {
        Box::pin(async move {
            let (claimed, hold) = self
                .lane
                .claim(ClaimArgs {
                    recipient: recipient.to_owned(),
                    lease_id: lease_id.to_owned(),
                    caller: caller.to_owned(),
                    if_sent: false,
                })
                .await;
            (claimed, Some(Hold::new(LaneHold(hold))))
        })
    }

    fn drain_or_hold<'a>(
        &'a self,
        sender: &'a str,
    ) -> BoxFuture<'a, (Result<Option<Drained>>, Option<Hold>)> {
        Box::pin(async move {
            let (drained, hold) = self.lane.drain(sender.to_owned()).await;
            (drained, Some(Hold::new(LaneHold(hold))))
        })
    }

    /// Runs the lane on the HTTP worker that starts it (see `lane.rs`).
    fn start_on_http_worker(&self) {
        self.lane.run_on_the_http_worker();
    }

    /// The lane's gauges and counters (`metrics.rs`).
    fn commit_metrics(&self, out: &mut Vec<Reading>) {
        metrics::lane_metrics(self.lane.waiting(), self.lane.counters(), out);
    }

    fn has_peers(&self) -> bool {
        self.peers.has_peers()
    }

    /// Queues a commit's lines for the `NOTIFY`s to the other instances (`soon` may wait).
    fn notify_peers(&self, now: String, soon: String) {
        self.peers.post(&now, &soon);
    }

    /// Calls `woken` whenever another instance's commit may have made work available (and after
    /// the listener reconnects, since anything may have happened meanwhile).
    fn on_peer_commit(&self, woken: Box<dyn Fn(&str) + Send + 'static>) {
        tokio::spawn(peers::listen(
            self.pool.clone(),
            self.instance.clone(),
            self.peers.clone(),
            woken,
        ));
    }
}

/// A claim or drain parked in the lane.
struct LaneHold(steps::StepHold);

impl From<Outcome> for Held {
    fn from(outcome: Outcome) -> Held {
        match outcome {
            Outcome::Claimed(row) => Held::Claimed(row),
            Outcome::Drained(drained) => Held::Drained(drained),
            other => Held::Unexpected(steps::mismatch(other)),
        }
    }
}

impl Holding for LaneHold {
    fn answered(&mut self) -> BoxFuture<'_, Result<Held>> {
        Box::pin(async move { self.0.answered().await.map(Held::from) })
    }

    fn leave(self: Box<Self>) -> BoxFuture<'static, Option<Result<Held>>> {
        Box::pin(async move { self.0.leave().await.map(|o| o.map(Held::from)) })
    }
}
