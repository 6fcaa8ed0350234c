//! The audit rows the rules write, in one place: the capability check's row and its shape.

use serde_json::{json, Value};

use crate::auth::{cap_error, Caller, CapCheck, ScopeCtx};
use crate::error::MailboxError;
use crate::store::{TaskRow, Tx};

/// The kinds of audit row the mailbox writes (docs/contract.md#audit), each slug written once:
/// the rules write them from here, and the dashboard's menu offers [`kind::ALL`].
pub mod kind {
    /// A capability check: by far the most common row (one per send and per result).
    pub const CAPABILITY_CHECK: &str = "capability_check";
    pub const AUTHENTICATION_FAILED: &str = "authentication_failed";
    pub const SENDER_MISMATCH: &str = "a2a_sender_mismatch";
    pub const RESULT_REJECTED: &str = "a2a_result_rejected";
    pub const REPAIR_APPLIED: &str = "a2a_repair_applied";
    pub const TASK_CANCELED: &str = "a2a_task_canceled";
    pub const RETRY_SCAN: &str = "a2a_auto_retry_scheduler_scan";
    pub const COMPACTED: &str = "a2a_compacted";
    pub const RESULT_CACHE_REPLAYED: &str = "a2a_result_cache_replayed";
    pub const IDEMPOTENCY_KEY_REPLAYED: &str = "idempotency_key_replayed";

    /// Every kind, most common first.
    pub const ALL: [&str; 10] = [
        CAPABILITY_CHECK,
        AUTHENTICATION_FAILED,
        SENDER_MISMATCH,
        RESULT_REJECTED,
        REPAIR_APPLIED,
        TASK_CANCELED,
        RETRY_SCAN,
        COMPACTED,
        RESULT_CACHE_REPLAYED,
        IDEMPOTENCY_KEY_REPLAYED,
    ];
}

pub(crate) use kind::CAPABILITY_CHECK;

/// The body of a `capability_check` audit row that required one action.
pub(crate) fn capability_audit(scope_id: &str, action: &str, passed: bool) -> Value {
    actions_audit(scope_id, &[action], passed)
}

/// The body of a `capability_check` audit row: the actions required (none, for a sender acting
/// on its own task), and which of them were missing.
pub(crate) fn actions_audit(scope_id: &str, required: &[&str], passed: bool) -> Value {
    checks_audit(scope_id, required, if passed { &[] } else { required })
}

/// The body of a `capability_check` audit row: the actions required and those the token lacks
/// (the check passed when none is missing). The one shape of every such row.
pub(crate) fn checks_audit(scope_id: &str, required: &[&str], missing: &[&str]) -> Value {
    let passed = missing.is_empty();
    json!({
        "scope_id": scope_id,
        "required_actions": required,
        "missing_actions": missing,
        "passed": passed,
    })
}

/// The passed `capability_check` row of a result whose sender only the store's write reads
/// (the fast path): its body split around the place the sender's name goes, so the one shape
/// of [`capability_audit`] is also the fast path's.
pub(crate) fn respond_audit_halves(task_id: &str) -> (String, String) {
    const MARK: &str = "\u{1}SENDER\u{1}";
    let body = capability_audit(
        &format!("a2a-respond:{task_id}"),
        &format!("a2a.respond.{MARK}"),
        true,
    )
    .to_string();
    let marked = serde_json::to_string(MARK).unwrap_or_default();
    let mark = marked
        .strip_prefix('"')
        .and_then(|m| m.strip_suffix('"'))
        .unwrap_or(&marked);
    match body.split_once(mark) {
        Some((pre, post)) => (pre.to_owned(), post.to_owned()),
        None => (body, String::new()),
    }
}

/// The most bytes of one string value copied into an audit row; a longer one is cut at a
/// character boundary and its field gets a sibling `"<field>_truncated": true`.
pub(crate) const MAX_VALUE_BYTES: usize = 256;

/// The most bytes of an audit row's body: a refused request never costs the database more.
pub(crate) const MAX_ROW_BYTES: usize = 4096;

/// An audit row's body as it is stored: every string at most [`MAX_VALUE_BYTES`], the whole at
/// most [`MAX_ROW_BYTES`] (fields that do not fit are left out, in order, and the row says
/// `"truncated": true`). Every audit row the rules write goes through here, whoever asked.
pub(crate) fn bounded(fields: &Value) -> String {
    let text = fields.to_string();
    // The common row (a capability check) is shorter than one value may be: nothing to cut.
    if text.len() <= MAX_VALUE_BYTES {
        return text;
    }
    let fields = cut_strings(fields.clone());
    let text = fields.to_string();
    if text.len() <= MAX_ROW_BYTES {
        return text;
    }
    let Value::Object(map) = fields else {
        return json!({"truncated": true}).to_string();
    };
    // Room for the marker and the separators of what is kept.
    let mut room = MAX_ROW_BYTES.saturating_sub(r#"{"truncated":true}"#.len());
    let mut kept = serde_json::Map::new();
    for (key, value) in map {
        let cost = serde_json::to_string(&key)
            .map_or(0, |k| k.len())
            .saturating_add(value.to_string().len())
            .saturating_add(2);
        if cost <= room {
            room = room.saturating_sub(cost);
            kept.insert(key, value);
        }
    }
    kept.insert("truncated".into(), Value::Bool(true));
    Value::Object(kept).to_string()
}

/// Every string of `value` cut to [`MAX_VALUE_BYTES`] (object keys included), with the
/// `_truncated` sibling of each cut field of an object.
fn cut_strings(value: Value) -> Value {
    match value {
        Value::String(s) => Value::String(cut(s).0),
        Value::Array(items) => Value::Array(items.into_iter().map(cut_strings).collect()),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, value) in map {
                let (key, _) = cut(key);
                let value = match value {
                    Value::String(s) => {
                        let (s, was_cut) = cut(s);
                        if was_cut {
                            out.insert(format!("{key}_truncated"), Value::Bool(true));
                        }
                        Value::String(s)
                    }
                    other => cut_strings(other),
                };
                out.insert(key, value);
            }
            Value::Object(out)
        }
        other => other,
    }
}

/// `s` cut to at most [`MAX_VALUE_BYTES`] at a character boundary, and whether it was cut.
fn cut(mut s: String) -> (String, bool) {
    if s.len() <= MAX_VALUE_BYTES {
        return (s, false);
    }
    let mut end = MAX_VALUE_BYTES;
    while !s.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    s.truncate(end);
    (s, true)
}

/// Whether a row of `kind` is filed under the task its body names (docs/contract.md#audit). A
/// refusal made before the task was found visible to the caller never is: a send under another
/// name and a result for a task the caller cannot see keep the id they claimed in their body
/// only, so that nobody can fill another's task history with refusals.
pub(crate) fn filed(kind: &str) -> bool {
    !matches!(kind, kind::SENDER_MISMATCH | kind::RESULT_REJECTED)
}

/// Writes one audit row inside the transaction of the change it records.
pub(crate) async fn audit(
    tx: &mut Tx,
    now: i64,
    issuer: &str,
    kind: &str,
    fields: Value,
) -> Result<(), MailboxError> {
    tx.audit(now, issuer, kind, &bounded(&fields), filed(kind))
        .await
}

/// The `a2a_repair_applied` row: written by an operator's repair and by the retry gate alike.
/// `lease_id` is the lease the request named (`None` when it named none); `ended` is the lease
/// the repair ended, so a task's history can say who held each attempt and since when.
#[derive(serde::Serialize)]
pub(crate) struct RepairApplied<'a> {
    pub task_id: &'a str,
    pub action: &'a str,
    pub reason: &'a str,
    pub lease_id: Option<String>,
    pub duplicate_risk: Option<&'a str>,
    pub attempt: u32,
    pub ended: Option<EndedLease>,
}

/// The lease a repair or a cancel ended, as its audit row records it (the row's lease is
/// cleared by the change; nothing else keeps who held an attempt that did not answer).
#[derive(serde::Serialize)]
pub(crate) struct EndedLease {
    pub lease_id: String,
    pub lessee: String,
    pub leased_at_ms: i64,
    pub heartbeat_at_ms: i64,
}

impl EndedLease {
    /// The lease `row` holds, if it is in flight.
    pub(crate) fn of(row: &TaskRow) -> Option<EndedLease> {
        Some(EndedLease {
            lease_id: row.lease_id.clone()?,
            lessee: row.leased_to.clone()?,
            leased_at_ms: row.leased_at_ms?,
            heartbeat_at_ms: row.heartbeat_at_ms.or(row.leased_at_ms)?,
        })
    }
}

impl RepairApplied<'_> {
    pub(crate) async fn record(
        &self,
        tx: &mut Tx,
        now: i64,
        issuer: &str,
    ) -> Result<(), MailboxError> {
        let fields = serde_json::to_value(self).map_err(MailboxError::internal)?;
        audit(tx, now, issuer, kind::REPAIR_APPLIED, fields).await
    }
}

/// Checks a capability, records the check in the caller's audit feed, and turns a refusal into
/// a 403 code.
pub(crate) async fn audited_check(
    tx: &mut Tx,
    caller: &Caller,
    scope_id: &str,
    action: &str,
    ctx: &ScopeCtx<'_>,
    now: i64,
) -> Result<(), MailboxError> {
    let check = caller.check(action, ctx);
    record_check(tx, caller, scope_id, action, check, now).await?;
    cap_error(check, action)
}

/// Records the outcome of a capability check already made (one row, whatever it answered) and
/// hands it back, for a rule that reports the refusal later in its order of gates.
pub(crate) async fn record_check(
    tx: &mut Tx,
    caller: &Caller,
    scope_id: &str,
    action: &str,
    check: CapCheck,
    now: i64,
) -> Result<CapCheck, MailboxError> {
    audit(
        tx,
        now,
        caller.sub.as_str(),
        CAPABILITY_CHECK,
        capability_audit(scope_id, action, check == CapCheck::Passed),
    )
    .await?;
    Ok(check)
}

/// Records a check refused before the task its scope names was found visible to the caller:
/// the row keeps that id in its scope and is filed under no task.
pub(crate) async fn record_refusal_unseen(
    tx: &mut Tx,
    caller: &Caller,
    scope_id: &str,
    action: &str,
    now: i64,
) -> Result<(), MailboxError> {
    let body = bounded(&capability_audit(scope_id, action, false));
    tx.audit(now, caller.sub.as_str(), CAPABILITY_CHECK, &body, false)
        .await
}

#[cfg(test)]
mod tests {
    use super::{bounded, capability_audit, respond_audit_halves, MAX_ROW_BYTES};
    use serde_json::{json, Value};

    #[test]
    fn copied_values_are_cut_at_a_character_boundary_and_marked() {
        let long = "€".repeat(1000); // three bytes a character
        let row: Value = serde_json::from_str(&bounded(&json!({
            "sender": long, "recipient": "bob", "task_id": null,
            "nested": {"reason": "x".repeat(300)}, "list": ["y".repeat(300)],
        })))
        .unwrap();
        assert_eq!(row["sender"].as_str().unwrap(), "€".repeat(85));
        assert_eq!(row["sender_truncated"], true);
        assert_eq!(row["recipient"], "bob");
        assert!(row.get("recipient_truncated").is_none());
        assert_eq!(row["nested"]["reason"].as_str().unwrap().len(), 256);
        assert_eq!(row["nested"]["reason_truncated"], true);
        assert_eq!(row["list"][0].as_str().unwrap().len(), 256);
    }

    #[test]
    fn no_row_is_larger_than_4_kib() {
        let many: serde_json::Map<String, Value> = (0..100)
            .map(|i| (format!("field{i}"), Value::String("z".repeat(250))))
            .collect();
        let text = bounded(&Value::Object(many));
        assert!(text.len() <= MAX_ROW_BYTES, "{}", text.len());
        let row: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(row["truncated"], true);
        assert_eq!(row["field0"].as_str().unwrap().len(), 250);
        let small = json!({"a": 1});
        assert_eq!(bounded(&small), small.to_string());
    }

    #[test]
    fn the_fast_paths_audit_body_is_the_checks_own() {
        let (pre, post) = respond_audit_halves("t1");
        let whole: serde_json::Value = serde_json::from_str(&format!("{pre}alice{post}")).unwrap();
        assert_eq!(
            whole,
            capability_audit("a2a-respond:t1", "a2a.respond.alice", true)
        );
    }
}
