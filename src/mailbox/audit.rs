//! The audit rows the rules write, in one place: the capability check's row and its shape.

use serde_json::{json, Value};

use crate::auth::{cap_error, Caller, CapCheck, ScopeCtx};
use crate::error::MailboxError;
use crate::store::Tx;

/// The audit slug of a capability check: by far the most common row (one per send and per
/// result).
pub(crate) const CAPABILITY_CHECK: &str = "capability_check";

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
    let mark = &marked[1..marked.len() - 1];
    match body.split_once(mark) {
        Some((pre, post)) => (pre.to_owned(), post.to_owned()),
        None => (body, String::new()),
    }
}

/// Writes one audit row inside the transaction of the change it records.
pub(crate) async fn audit(
    tx: &mut Tx,
    now: i64,
    issuer: &str,
    kind: &str,
    fields: Value,
) -> Result<(), MailboxError> {
    tx.audit(now, issuer, kind, &fields.to_string()).await
}

/// The `a2a_repair_applied` row: written by an operator's repair and by the retry gate alike.
#[derive(serde::Serialize)]
pub(crate) struct RepairApplied<'a> {
    pub task_id: &'a str,
    pub action: &'a str,
    pub reason: &'a str,
    pub lease_id: Option<String>,
    pub duplicate_risk: Option<&'a str>,
    pub attempt: u32,
}

impl RepairApplied<'_> {
    pub(crate) async fn record(
        &self,
        tx: &mut Tx,
        now: i64,
        issuer: &str,
    ) -> Result<(), MailboxError> {
        let fields = serde_json::to_value(self).map_err(MailboxError::internal)?;
        audit(tx, now, issuer, "a2a_repair_applied", fields).await
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

#[cfg(test)]
mod tests {
    use super::{capability_audit, respond_audit_halves};

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
