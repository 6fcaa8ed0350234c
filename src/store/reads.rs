//! The named reads: outside any write transaction (on SQLite, on a reader connection beside the
//! writer). Every one walks an index of the state it reads; none counts a whole table but the
//! per-state gauges, which count one partial index each.

use super::facade::Store;
use super::records::{AuditRow, LeaseView, TaskRow};
use super::runner::{args, Val};
use super::statements as sql;
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

/// Filters of the audit feed, as the store applies them.
pub struct AuditQuery<'a> {
    /// Only this issuer's rows (`None`: every row).
    pub issuer: Option<&'a str>,
    pub since_ms: Option<i64>,
    pub kind: Option<&'a str>,
    pub limit: i64,
}

/// The audit kind that `audit_by_kind` leaves out (the schema's partial index).
const UNINDEXED_AUDIT_KIND: &str = "capability_check";

#[derive(sqlx::FromRow)]
struct Count {
    n: i64,
}

#[derive(sqlx::FromRow)]
struct At {
    at: Option<i64>,
}

impl Store {
    pub async fn task(&self, id: &str) -> Result<Option<TaskRow>> {
        Ok(self.read_optional(sql::TASK_BY_ID, args![id]).await?)
    }

    /// What the fast result path checks before it answers task `id`.
    pub async fn lease_view(&self, id: &str) -> Result<Option<LeaseView>> {
        Ok(self.read_optional(sql::TASK_LEASE, args![id]).await?)
    }

    /// Whether anything is queued for `recipient`.
    pub async fn any_queued(&self, recipient: &str) -> Result<bool> {
        let any: Option<(String,)> = self
            .read_optional(sql::ANY_QUEUED, args![recipient])
            .await?;
        Ok(any.is_some())
    }

    /// Queued tasks oldest first: every one (`seen_by` `None`), or those sent by or addressed
    /// to `seen_by`.
    pub async fn queued(&self, seen_by: Option<&str>, limit: i64) -> Result<Vec<TaskRow>> {
        let s = self.statements();
        Ok(match seen_by {
            None => self.read_all(s.queued_all, args![limit]).await?,
            Some(me) => self.read_all(s.queued_visible, args![me, limit]).await?,
        })
    }

    /// The queue snapshot's queued part: FIFO, with a deadline at most `deadline_max` if given.
    pub async fn snapshot_queued(
        &self,
        seen_by: Option<&str>,
        limit: i64,
        deadline_max: Option<i64>,
    ) -> Result<Vec<TaskRow>> {
        let s = self.statements();
        let (stmt, me) = scoped(seen_by, s.snapshot_queued_all, s.snapshot_queued_visible);
        Ok(self.read_all(stmt, args![me, limit, deadline_max]).await?)
    }

    /// The queue snapshot's in-flight part: oldest heartbeat first, with the bounds if given
    /// (the heartbeat at or before `heartbeat.0`, after `heartbeat.1`).
    pub async fn snapshot_in_flight(
        &self,
        seen_by: Option<&str>,
        limit: i64,
        deadline_max: Option<i64>,
        heartbeat: (Option<i64>, Option<i64>),
    ) -> Result<Vec<TaskRow>> {
        let (stmt, me) = scoped(
            seen_by,
            sql::SNAPSHOT_IN_FLIGHT_ALL,
            sql::SNAPSHOT_IN_FLIGHT_VISIBLE,
        );
        Ok(self
            .read_all(
                stmt,
                args![me, limit, deadline_max, heartbeat.0, heartbeat.1],
            )
            .await?)
    }

    /// The queue snapshot's pending results, oldest first.
    pub async fn snapshot_results(
        &self,
        seen_by: Option<&str>,
        limit: i64,
    ) -> Result<Vec<TaskRow>> {
        let s = self.statements();
        let (stmt, me) = scoped(seen_by, s.snapshot_results_all, s.snapshot_results_visible);
        Ok(self.read_all(stmt, args![me, limit]).await?)
    }

    /// Pending results of `sender`'s tasks, oldest first.
    pub async fn pending_of_sender(&self, sender: &str, limit: i64) -> Result<Vec<TaskRow>> {
        Ok(self
            .read_all(sql::PENDING_OF_SENDER, args![sender, limit])
            .await?)
    }

    /// Tasks in `state` (one partial index's entries).
    pub async fn count_in_state(&self, state: &str) -> Result<i64> {
        let c: Option<Count> = self
            .read_optional(sql::COUNT_IN_STATE, args![state])
            .await?;
        Ok(c.map_or(0, |c| c.n))
    }

    /// When the head of the whole queue was queued, and the oldest lease's last heartbeat.
    pub async fn oldest(&self) -> Result<(Option<i64>, Option<i64>)> {
        let q: Option<At> = self
            .read_optional(self.statements().oldest_queued, &[])
            .await?;
        let l: Option<At> = self.read_optional(sql::OLDEST_LEASE, &[]).await?;
        Ok((q.and_then(|a| a.at), l.and_then(|a| a.at)))
    }

    /// Audit rows, newest first. Only the filters given go into the statement, so both engines
    /// walk the index that serves them (`audit_by_issuer` for an agent's own feed,
    /// `audit_by_kind` for any kind but the unindexed one, the primary key backwards otherwise);
    /// a catch-all `($1 IS NULL OR issuer = $1)` form made SQLite scan the whole table.
    pub async fn audit_feed(&self, q: &AuditQuery<'_>) -> Result<Vec<AuditRow>> {
        let mut stmt =
            String::from("SELECT event_id, timestamp_ms, issuer, kind, body FROM audit WHERE TRUE");
        let mut args = Vec::new();
        if let Some(issuer) = q.issuer {
            args.push(Val::from(issuer));
            stmt.push_str(&format!(" AND issuer = ${}", args.len()));
        }
        if let Some(since) = q.since_ms {
            args.push(Val::from(since));
            stmt.push_str(&format!(" AND timestamp_ms >= ${}", args.len()));
        }
        if let Some(kind) = q.kind {
            args.push(Val::from(kind));
            stmt.push_str(&format!(" AND kind = ${}", args.len()));
            if kind != UNINDEXED_AUDIT_KIND {
                // The partial index's own condition, spelled out: SQLite uses a partial index
                // only when the query repeats its WHERE term (PostgreSQL would infer it).
                stmt.push_str(&format!(" AND kind <> '{UNINDEXED_AUDIT_KIND}'"));
            }
        }
        args.push(Val::from(q.limit));
        stmt.push_str(&format!(" ORDER BY id DESC LIMIT ${}", args.len()));
        Ok(self.read_all(&stmt, &args).await?)
    }

    /// The audit rows about task `task_id` (their `task_id` column), newest first: read by the
    /// `audit_by_task` index, however many rows other tasks wrote since.
    pub async fn audit_for_task(&self, task_id: &str, limit: i64) -> Result<Vec<AuditRow>> {
        Ok(self
            .read_all(sql::AUDIT_FOR_TASK, args![task_id, limit])
            .await?)
    }
}

/// A snapshot read of every task (`all`) or of those `seen_by` sees (`visible`): the statement,
/// and its first parameter (`seen_by`; `""`, which `all` ignores, for every task).
fn scoped<'a>(
    seen_by: Option<&'a str>,
    all: &'static str,
    visible: &'static str,
) -> (&'static str, &'a str) {
    match seen_by {
        None => (all, ""),
        Some(me) => (visible, me),
    }
}
