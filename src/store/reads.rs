//! The named reads: outside any write transaction (on SQLite, on a reader connection beside the
//! writer). Every one walks an index of the state it reads; none counts a whole table but the
//! per-state gauges, which count one partial index each.

use super::facade::Store;
use super::listing::Sql;
use super::records::{AuditRow, Count, KeyRecord, LeaseView, TaskRow};
use super::runner::args;
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
    /// Leave out the capability checks that passed (a refused one stays).
    pub hide_passed_checks: bool,
}

/// The audit kind that `audit_by_kind` leaves out (the schema's partial index).
const UNINDEXED_AUDIT_KIND: &str = "capability_check";

/// How the body of a passed capability check reads (`"passed":true`, written by one rule,
/// `checks_audit`), as a `LIKE` pattern: a quote inside a string value is escaped, so no
/// other value can spell it.
const PASSED_CHECK: &str = r#"%"passed":true%"#;

/// One audit row and its place in the table's order (the integer `id`).
#[derive(sqlx::FromRow)]
struct Numbered {
    id: i64,
    #[sqlx(flatten)]
    row: AuditRow,
}

/// The newest row below an id (of the kind, when the kind has its index).
#[derive(sqlx::FromRow)]
struct AuditProbe {
    id: i64,
    timestamp_ms: i64,
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

    /// The caller's record under `key` (an `Idempotency-Key`'s, or a take's attempt id's).
    pub async fn key_record(&self, caller: &str, key: &str) -> Result<Option<KeyRecord>> {
        Ok(self
            .read_optional(sql::KEY_RECORD, args![caller, key])
            .await?)
    }

    /// Whether a result is pending for `sender`.
    pub async fn any_pending(&self, sender: &str) -> Result<bool> {
        let any: Option<(String,)> = self.read_optional(sql::ANY_PENDING, args![sender]).await?;
        Ok(any.is_some())
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
        let s = audit_sql(q, None, None, q.limit);
        Ok(self.read_all(&s.text, &s.args).await?)
    }

    /// One page of the audit feed, newest first, at most `q.limit` rows older than the row
    /// `before` (than none: from the newest row), that reads a bounded part of the table however
    /// rare its rows. Answers the rows with their ids, and the `before` of the next older page
    /// (`None`: no older row, or none inside `q.since_ms`).
    ///
    /// A kind with its index (and no issuer to filter what that index gives) reads `q.limit`
    /// of its entries at most: the time filter ends the page at the first row older than it
    /// rather than skipping rows. Any other page reads at most `scan` ids below `before`: a
    /// page that is not full then has an older page only when it stopped at that bound; the
    /// next one starts at the newest row left below it (of the kind, when the kind has its
    /// index, so the stretches without one are skipped), and its caller says it stopped.
    pub async fn audit_page(
        &self,
        q: &AuditQuery<'_>,
        before: Option<i64>,
        scan: i64,
    ) -> Result<(Vec<(i64, AuditRow)>, Option<i64>)> {
        let limit = q.limit.max(1);
        if q.issuer.is_none() && q.kind.is_some_and(|k| k != UNINDEXED_AUDIT_KIND) {
            let entries = AuditQuery {
                since_ms: None,
                ..*q
            };
            let s = audit_sql(&entries, None, before, limit.saturating_add(1));
            let rows: Vec<Numbered> = self.read_all(&s.text, &s.args).await?;
            let read = rows.len();
            let since = q.since_ms.unwrap_or(i64::MIN);
            let within = |r: &Numbered| r.row.timestamp_ms >= since;
            let mut rows: Vec<Numbered> = rows.into_iter().take_while(within).collect();
            // A row older than the time filter ends the feed; a full page has an older one.
            let older = if rows.len() == read && read as i64 > limit {
                rows.truncate(limit as usize);
                rows.last().map(|r| r.id)
            } else {
                None
            };
            return Ok((numbered(rows), older));
        }
        let top = match before {
            Some(before) => before,
            None => match self.audit_probe(q, None).await? {
                Some(newest) => newest.id.saturating_add(1),
                None => return Ok((Vec::new(), None)),
            },
        };
        let bottom = top.saturating_sub(scan.max(1));
        let s = audit_sql(q, Some(bottom), Some(top), limit.saturating_add(1));
        let mut rows: Vec<Numbered> = self.read_all(&s.text, &s.args).await?;
        let older = if rows.len() as i64 > limit {
            rows.truncate(limit as usize);
            rows.last().map(|r| r.id)
        } else {
            let below = self.audit_probe(q, Some(bottom)).await?;
            below
                .filter(|p| q.since_ms.is_none_or(|since| p.timestamp_ms >= since))
                .map(|p| p.id.saturating_add(1))
        };
        Ok((numbered(rows), older))
    }

    /// The newest row below `below` (anywhere when `None`): one step down an index, of the
    /// query's kind when that kind has its index, of any kind otherwise.
    async fn audit_probe(
        &self,
        q: &AuditQuery<'_>,
        below: Option<i64>,
    ) -> Result<Option<AuditProbe>> {
        let mut s = Sql::new("SELECT id, timestamp_ms FROM audit WHERE TRUE");
        if let Some(kind) = q.kind.filter(|k| *k != UNINDEXED_AUDIT_KIND) {
            and_kind(&mut s, kind);
        }
        if let Some(below) = below {
            let p = s.bind(below);
            s.text.push_str(&format!(" AND id < {p}"));
        }
        s.text.push_str(" ORDER BY id DESC LIMIT 1");
        Ok(self.read_optional(&s.text, &s.args).await?)
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

/// Rows with their ids, as a page answers them.
fn numbered(rows: Vec<Numbered>) -> Vec<(i64, AuditRow)> {
    rows.into_iter().map(|r| (r.id, r.row)).collect()
}

/// The audit feed's statement: only the filters given, so that each engine walks the index
/// that serves them (see [`Store::audit_feed`]), and the ids `[bottom, top)` if given. With a
/// `bottom` it reads that stretch of the primary key and nothing else: its time filter is
/// written `+timestamp_ms`, an expression no index serves, so neither engine trades the
/// stretch for the time index.
fn audit_sql(q: &AuditQuery<'_>, bottom: Option<i64>, top: Option<i64>, limit: i64) -> Sql {
    let mut s =
        Sql::new("SELECT id, event_id, timestamp_ms, issuer, kind, body FROM audit WHERE TRUE");
    if let Some(top) = top {
        let p = s.bind(top);
        s.text.push_str(&format!(" AND id < {p}"));
    }
    if let Some(bottom) = bottom {
        let p = s.bind(bottom);
        s.text.push_str(&format!(" AND id >= {p}"));
    }
    if let Some(issuer) = q.issuer {
        let p = s.bind(issuer);
        s.text.push_str(&format!(" AND issuer = {p}"));
    }
    if let Some(since) = q.since_ms {
        let p = s.bind(since);
        let column = if bottom.is_some() {
            "+timestamp_ms"
        } else {
            "timestamp_ms"
        };
        s.text.push_str(&format!(" AND {column} >= {p}"));
    }
    if let Some(kind) = q.kind {
        and_kind(&mut s, kind);
    }
    if q.hide_passed_checks && q.kind.is_none_or(|k| k == UNINDEXED_AUDIT_KIND) {
        s.text.push_str(&format!(
            " AND NOT (kind = '{UNINDEXED_AUDIT_KIND}' AND body LIKE '{PASSED_CHECK}')"
        ));
    }
    let l = s.bind(limit);
    s.text.push_str(&format!(" ORDER BY id DESC LIMIT {l}"));
    s
}

/// `AND kind = $n`; for any kind but the unindexed one, with the partial index's own condition
/// spelled out: SQLite uses a partial index only when the query repeats its WHERE term
/// (PostgreSQL would infer it).
fn and_kind(s: &mut Sql, kind: &str) {
    let p = s.bind(kind);
    s.text.push_str(&format!(" AND kind = {p}"));
    if kind != UNINDEXED_AUDIT_KIND {
        s.text
            .push_str(&format!(" AND kind <> '{UNINDEXED_AUDIT_KIND}'"));
    }
}
