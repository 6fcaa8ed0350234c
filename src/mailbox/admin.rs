//! Compaction and retention (§8) and the audit feed (§10).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sqlx::FromRow;
use utoipa::ToSchema;

use super::{audit, now_ms, IdemRequest, Mailbox, Reply, CAPABILITY_CHECK};
use crate::args;
use crate::auth::{Caller, ScopeCtx};
use crate::error::MailboxError;
use crate::store::{Tx, Val};

/// One audit row. `kind` is `{"type": <slug>, ...fields of that slug}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AuditEvent {
    pub id: u64,
    pub timestamp_ms: u64,
    pub issuer: String,
    #[schema(value_type = Object, example = json!({"type": "capability_check", "scope_id": "a2a-send:bob",
        "required_actions": ["a2a.send.bob"], "missing_actions": [], "passed": true}))]
    pub kind: Value,
}

#[derive(FromRow)]
struct AuditRow {
    id: i64,
    timestamp_ms: i64,
    issuer: String,
    kind: String,
    body: String,
}

impl AuditRow {
    fn event(self) -> AuditEvent {
        let mut kind = match serde_json::from_str::<Value>(&self.body) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        kind.insert("type".into(), Value::String(self.kind));
        AuditEvent {
            id: self.id.max(0) as u64,
            timestamp_ms: self.timestamp_ms.max(0) as u64,
            issuer: self.issuer,
            kind: Value::Object(kind),
        }
    }
}

/// Filters of the audit feed.
pub struct AuditFilter {
    pub limit: i64,
    pub since_ms: Option<i64>,
    pub kind: Option<String>,
}

impl Mailbox {
    /// `POST /a2a/compact`: drops resolved tasks (with their drained results) and the result
    /// cache entries and `Idempotency-Key` records whose window has passed. Never touches queued
    /// tasks, leases, pending results or live cache entries.
    pub async fn compact(
        &self,
        caller: &Caller,
        idem: Option<&IdemRequest>,
    ) -> Result<Reply, MailboxError> {
        caller.require("a2a.compact", &ScopeCtx::default())?;
        let this = self.clone();
        let c = caller.clone();
        self.write(
            caller,
            idem,
            Box::new(move |tx| Box::pin(async move { this.compact_in(tx, &c).await })),
        )
        .await
    }

    async fn compact_in(&self, tx: &mut Tx, caller: &Caller) -> Result<Reply, MailboxError> {
        let now = now_ms();
        let tasks = tx
            .execute("DELETE FROM tasks WHERE state = 'resolved'", &[])
            .await?;
        let cache = tx
            .execute(
                "DELETE FROM result_cache WHERE expires_at_ms <= $1",
                args![now],
            )
            .await?;
        let keys = tx
            .execute(
                "DELETE FROM idempotency_keys WHERE expires_at_ms <= $1",
                args![now],
            )
            .await?;
        let dropped = tasks + cache + keys;
        audit(
            tx,
            now,
            caller.sub.as_str(),
            "a2a_compacted",
            json!({
                "dropped": dropped,
                "resolved_tasks": tasks,
                "result_cache_entries": cache,
                "idempotency_keys": keys,
            }),
        )
        .await?;
        Ok(Reply::new(
            200,
            json!({"kind": "a2a_compacted", "dropped": dropped}),
        ))
    }

    /// `GET /audit/recent`: the caller's own rows, newest first; operators see every row.
    pub async fn audit_feed(
        &self,
        caller: &Caller,
        f: &AuditFilter,
    ) -> Result<Vec<AuditEvent>, MailboxError> {
        // Only the filters given go into the statement, so both engines can walk the index that
        // serves them (`audit_by_issuer` for an agent's own feed, `audit_by_kind` for any kind but
        // `capability_check`, the primary key backwards otherwise); a catch-all `($1 IS NULL OR
        // issuer = $1)` form made SQLite scan the whole table.
        let mut sql =
            String::from("SELECT id, timestamp_ms, issuer, kind, body FROM audit WHERE TRUE");
        let mut args = Vec::new();
        if !caller.is_operator() {
            args.push(Val::from(caller.sub.as_str()));
            sql.push_str(&format!(" AND issuer = ${}", args.len()));
        }
        if let Some(since) = f.since_ms {
            args.push(Val::from(since));
            sql.push_str(&format!(" AND timestamp_ms >= ${}", args.len()));
        }
        if let Some(kind) = &f.kind {
            args.push(Val::from(kind.as_str()));
            sql.push_str(&format!(" AND kind = ${}", args.len()));
            if kind != CAPABILITY_CHECK {
                // The partial index's own condition, spelled out: SQLite uses a partial index
                // only when the query repeats its WHERE term (PostgreSQL would infer it).
                sql.push_str(&format!(" AND kind <> '{CAPABILITY_CHECK}'"));
            }
        }
        args.push(Val::from(f.limit));
        sql.push_str(&format!(" ORDER BY id DESC LIMIT ${}", args.len()));
        let rows: Vec<AuditRow> = self.db.fetch_all(&sql, &args).await?;
        Ok(rows.into_iter().map(AuditRow::event).collect())
    }

    /// Records a refused token. `issuer` is the unverified subject when the token could be read.
    pub async fn audit_auth_failure(&self, issuer: &str, reason: &str) -> Result<(), MailboxError> {
        let (issuer, reason) = (issuer.to_owned(), reason.to_owned());
        self.transact(Box::new(move |tx| {
            Box::pin(async move {
                audit(
                    tx,
                    now_ms(),
                    &issuer,
                    "authentication_failed",
                    json!({"reason": reason}),
                )
                .await?;
                Ok(((), true))
            })
        }))
        .await
    }
}
