//! Writing audit rows, and the task each row is about. Every row's `task_id` column is filled
//! here, on insert, from its body (one rule, [`task_of`]), so that a task's rows are read by
//! index however many newer rows exist; a row the mailbox writes as filed under no task (a
//! refusal made before the task was found visible to the caller) gets none, whatever its body
//! names. The fast paths write their rows in their own statements
//! and bind what this rule gives for their bodies (the tests below hold them equal).

use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::runner::{args, Deferred, Tx};
use super::statements as sql;
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

/// The scope ids of capability checks made on one task: `<prefix><task id>`.
const TASK_SCOPES: [&str; 3] = ["a2a-respond:", "a2a-cancel:", "a2a-repair:"];

/// The task an audit row is about: its body's `task_id`, else the task its `scope_id` names
/// (`a2a-respond:<id>`, `a2a-cancel:<id>`, `a2a-repair:<id>`). Only a UUID names a task (it is
/// kept as task ids are, lower-case with hyphens); a send's check names its recipient, not a
/// task, and other rows (compaction, scans, refused tokens) no task at all.
pub(crate) fn task_of(body: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct TaskOfBody {
        task_id: Option<Value>,
        scope_id: Option<Value>,
    }
    let named: TaskOfBody = super::from_stored(body).ok()?;
    let id = match named.task_id.as_ref().and_then(Value::as_str) {
        Some(id) => id,
        None => {
            let scope = named.scope_id.as_ref().and_then(Value::as_str)?;
            TASK_SCOPES.iter().find_map(|p| scope.strip_prefix(p))?
        }
    };
    Uuid::parse_str(id).ok().map(|id| id.to_string())
}

impl Tx {
    /// From here to the end of the write unit, audit rows wait in memory and are written
    /// together, in order, by [`Tx::flush_audits`], which the unit runs before it ends (a batch
    /// judging many items writes their rows in one statement, not one each). A unit that fails
    /// drops them with everything else it wrote.
    pub fn defer_audits(&mut self) {
        self.deferred.get_or_insert_with(Vec::new);
    }

    /// Writes the audit rows held back since [`Tx::defer_audits`], if any, and stops holding
    /// them back.
    pub(crate) async fn flush_audits(&mut self) -> Result<()> {
        let Some(held) = self.deferred.take() else {
            return Ok(());
        };
        let mut rest = held.as_slice();
        while let Some(first) = rest.first() {
            let run = rest
                .iter()
                .take_while(|d| d.now == first.now && d.issuer == first.issuer)
                .count();
            let (these, later) = rest.split_at_checked(run).unwrap_or((rest, &[]));
            let rows: Vec<(&str, String, bool)> = these
                .iter()
                .map(|d| (d.kind.as_str(), d.body.clone(), d.filed))
                .collect();
            self.audit_many(first.now, &first.issuer, &rows).await?;
            rest = later;
        }
        Ok(())
    }

    /// Drops the audit rows held back, with the rest of a unit that failed.
    pub(crate) fn drop_deferred_audits(&mut self) {
        self.deferred = None;
    }

    /// Writes audit rows of one issuer, `(kind, body as JSON text, filed under the task its
    /// body names)`, in order, in one statement.
    pub async fn audit_many(
        &mut self,
        now: i64,
        issuer: &str,
        rows: &[(&str, String, bool)],
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        #[derive(serde::Serialize)]
        struct AuditRowIn<'a> {
            kind: &'a str,
            body: &'a str,
            task_id: Option<String>,
        }
        let stmt = self.sql().insert_audits;
        let rows: Vec<AuditRowIn> = rows
            .iter()
            .map(|(kind, body, filed)| AuditRowIn {
                kind,
                body,
                task_id: filed.then(|| task_of(body)).flatten(),
            })
            .collect();
        let rows = serde_json::to_string(&rows).map_err(MailboxError::internal)?;
        self.execute(stmt, args![now, issuer, rows]).await?;
        Ok(())
    }

    /// Writes one audit row (its body is JSON text), filed under the task its body names or
    /// (`filed` false) under none.
    pub async fn audit(
        &mut self,
        now: i64,
        issuer: &str,
        kind: &str,
        body: &str,
        filed: bool,
    ) -> Result<()> {
        if let Some(held) = self.deferred.as_mut() {
            held.push(Deferred {
                now,
                issuer: issuer.to_owned(),
                kind: kind.to_owned(),
                body: body.to_owned(),
                filed,
            });
            return Ok(());
        }
        let task_id = filed.then(|| task_of(body)).flatten();
        self.execute(
            sql::INSERT_AUDIT,
            args![now, issuer, kind, body, task_id.as_deref()],
        )
        .await?;
        Ok(())
    }

    /// Writes an audit row that is kept up to date (`id` `None`: a new row), or replaces the
    /// body of the row `id`; answers its id.
    pub async fn upsert_audit(
        &mut self,
        id: Option<i64>,
        now: i64,
        issuer: &str,
        kind: &str,
        body: &str,
    ) -> Result<i64> {
        let stmt = self.sql().upsert_audit;
        let task_id = task_of(body);
        let row: Option<(i64,)> = self
            .fetch_optional(stmt, args![id, now, issuer, kind, body, task_id.as_deref()])
            .await?;
        row.map(|(id,)| id)
            .ok_or_else(|| MailboxError::internal("an audit upsert answered no id"))
    }
}

#[cfg(test)]
mod tests {
    use super::task_of;
    use crate::mailbox::audit::{capability_audit, respond_audit_halves};
    use serde_json::json;

    const ID: &str = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90";

    #[test]
    fn a_row_names_its_task_by_its_task_id_or_its_scope() {
        let body = |v: serde_json::Value| v.to_string();
        assert_eq!(
            task_of(&body(json!({"task_id": ID, "action": "requeue"}))).as_deref(),
            Some(ID)
        );
        let upper = ID.to_uppercase();
        assert_eq!(
            task_of(&body(json!({"task_id": upper}))).as_deref(),
            Some(ID)
        );
        for scope in ["a2a-respond", "a2a-cancel", "a2a-repair"] {
            let b = capability_audit(&format!("{scope}:{ID}"), "a2a.x", true).to_string();
            assert_eq!(task_of(&b).as_deref(), Some(ID), "{scope}");
        }
        // A `task_id` that is not a string gives way to the scope (as the migration's backfill).
        let b = body(json!({"task_id": 7, "scope_id": format!("a2a-repair:{ID}")}));
        assert_eq!(task_of(&b).as_deref(), Some(ID));
        for none in [
            json!({"task_id": "not-a-task", "scope_id": format!("a2a-repair:{ID}")}),
            json!({"task_id": 7}),
            json!({"scope_id": format!("a2a-send:{ID}")}),
            json!({"scope_id": "a2a-repair:not-a-task"}),
            json!({"scope_id": "a2a:compact"}),
            json!({"address": "127.0.0.1", "count": 3}),
            json!([ID]),
        ] {
            assert_eq!(task_of(&none.to_string()), None, "{none}");
        }
        assert_eq!(task_of("not json"), None);
    }

    /// The fast paths write their rows in their own statements: a send's check row with no task
    /// (its scope names the recipient), a result's with the task it answers.
    #[test]
    fn the_fast_paths_bind_what_the_rule_gives() {
        let send = capability_audit("a2a-send:bob", "a2a.send.bob", true).to_string();
        assert_eq!(task_of(&send), None);
        let (pre, post) = respond_audit_halves(ID);
        assert_eq!(task_of(&format!("{pre}alice{post}")).as_deref(), Some(ID));
    }
}
