//! Compaction and retention (docs/contract.md#compaction), the audit feed (docs/contract.md#audit),
//! and one task's audit rows.

use serde_json::{json, Map, Value};

use super::audit::{audit, audited_check, kind};
use super::{rule, Cx, Done, Mailbox};
use crate::auth::{cap_error, Caller, CapCheck, ScopeCtx};
use uuid::Uuid;

use crate::domain::answers::{AuditEvents, AuditEventsKind};
use crate::error::MailboxError;
use crate::mailbox::Author;
use crate::store::{AuditQuery, AuditRow};

pub use a2a_mailbox_types::AuditEvent;

/// An audit row as the feed shows it.
fn event(row: AuditRow) -> AuditEvent {
    let mut kind = match crate::store::from_stored::<Value>(&row.body) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    kind.insert("type".into(), Value::String(row.kind));
    AuditEvent {
        id: Uuid::parse_str(&row.event_id).unwrap_or_default(),
        timestamp_ms: row.timestamp_ms.max(0) as u64,
        issuer: row.issuer,
        kind: Value::Object(kind),
    }
}

/// Filters of the audit feed.
pub struct AuditFilter {
    pub limit: i64,
    pub since_ms: Option<i64>,
    pub kind: Option<String>,
}

/// One page of the audit feed as an operator reads it: a filter, where the page starts (below
/// the row `before`; from the newest row when `None`), and whether passed capability checks
/// show (a refused check always does).
pub struct AuditPageRequest {
    pub filter: AuditFilter,
    pub before: Option<i64>,
    pub passed_checks: bool,
}

/// A page of the audit feed: its rows newest first, each with its place in the feed's order
/// (what `before` names), and the `before` of the next older page (`None`: no older row).
pub struct AuditPage {
    pub events: Vec<(i64, AuditEvent)>,
    pub older: Option<i64>,
}

impl AuditPage {
    /// Whether the page stopped at [`AUDIT_PAGE_SCAN`] rather than filling up: older rows
    /// remain, looked through by the next page.
    pub fn stopped_early(&self, limit: i64) -> bool {
        self.older.is_some() && (self.events.len() as i64) < limit
    }
}

/// How many rows of the feed's order one page looks through at most, however few of them its
/// filters keep: what bounds a page's cost on any number of audit rows, with no index of its
/// own (every write would pay for one).
pub const AUDIT_PAGE_SCAN: i64 = 20_000;

impl Mailbox {
    /// `POST /a2a/compact`: drops resolved tasks (with their drained results), canceled tasks,
    /// the result-cache entries and `Idempotency-Key` records whose window has passed, and the
    /// audit rows older than the retention. Never touches queued tasks, leases, pending results
    /// or live cache entries. Its capability check is audited (scope `a2a:compact`), also when
    /// it fails.
    pub async fn compact(&self, by: Author<'_>) -> Result<Done<u64>, MailboxError> {
        self.write(by, rule!(|this, cx| this.compact_in(cx))).await
    }

    async fn compact_in(&self, cx: Cx<'_>) -> Result<Done<u64>, MailboxError> {
        let Cx { tx, caller, now } = cx;
        let ctx = ScopeCtx::default();
        audited_check(tx, caller, "a2a:compact", "a2a.compact", &ctx, now).await?;
        let c = tx
            .compact(now, now.saturating_sub(self.cfg.audit_retention_ms))
            .await?;
        let dropped = [c.result_cache_entries, c.idempotency_keys, c.audit_rows]
            .into_iter()
            .fold(c.resolved_tasks, |sum, n| sum.saturating_add(n));
        audit(
            tx,
            now,
            caller.sub.as_str(),
            kind::COMPACTED,
            json!({
                "dropped": dropped,
                "resolved_tasks": c.resolved_tasks,
                "result_cache_entries": c.result_cache_entries,
                "idempotency_keys": c.idempotency_keys,
                "audit_rows": c.audit_rows,
            }),
        )
        .await?;
        Ok(Done::changed(dropped))
    }

    /// `GET /audit/recent`: the caller's own rows, newest first; operators see every row.
    pub async fn audit_feed(
        &self,
        caller: &Caller,
        f: &AuditFilter,
    ) -> Result<AuditEvents, MailboxError> {
        let rows = self
            .store
            .audit_feed(&AuditQuery {
                issuer: (!caller.is_operator()).then(|| caller.sub.as_str()),
                since_ms: f.since_ms,
                kind: f.kind.as_deref(),
                limit: f.limit,
                hide_passed_checks: false,
            })
            .await?;
        Ok(AuditEvents {
            kind: AuditEventsKind::Tag,
            events: rows.into_iter().map(event).collect(),
        })
    }

    /// A page of the audit feed that looks through at most [`AUDIT_PAGE_SCAN`] rows, for the
    /// dashboard: the feed's visibility (the caller's own rows; operators see every row).
    pub async fn audit_page(
        &self,
        caller: &Caller,
        req: &AuditPageRequest,
    ) -> Result<AuditPage, MailboxError> {
        let f = &req.filter;
        let query = AuditQuery {
            issuer: (!caller.is_operator()).then(|| caller.sub.as_str()),
            since_ms: f.since_ms,
            kind: f.kind.as_deref(),
            limit: f.limit,
            hide_passed_checks: !req.passed_checks,
        };
        let (rows, older) = self
            .store
            .audit_page(&query, req.before, AUDIT_PAGE_SCAN)
            .await?;
        Ok(AuditPage {
            events: rows.into_iter().map(|(id, row)| (id, event(row))).collect(),
            older,
        })
    }

    /// The audit rows about one task (its checks, repairs, cancel, refused results), newest
    /// first, at most `limit` (1..=1000): found by the task's id however many rows other tasks
    /// wrote since. Operators only (`a2a.operator`).
    pub async fn audit_of_task(
        &self,
        caller: &Caller,
        task_id: Uuid,
        limit: i64,
    ) -> Result<Vec<AuditEvent>, MailboxError> {
        if !caller.is_operator() {
            cap_error(CapCheck::Missing, "a2a.operator")?;
        }
        let rows = self
            .store
            .audit_for_task(&task_id.to_string(), limit.clamp(1, 1000))
            .await?;
        Ok(rows.into_iter().map(event).collect())
    }
}
