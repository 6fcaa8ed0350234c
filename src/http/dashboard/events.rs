//! An audit row as people read it, in one place for every page that shows one (the audit feed,
//! a task's rows and its history): when, who, which kind, and one sentence of what happened
//! built from the row's own fields, task ids linked to their pages; the row itself folded
//! beneath, wrapped inside its cell.

use maud::{html, Markup};
use serde_json::Value;
use uuid::Uuid;

use super::layout::ago;
use crate::mailbox::admin::AuditEvent;
use crate::mailbox::audit::kind;

/// What the rows of a kind are, as the audit page's menu says it ([`kind::ALL`] is the menu).
pub fn label(slug: &str) -> &'static str {
    match slug {
        kind::CAPABILITY_CHECK => "capability checks",
        kind::AUTHENTICATION_FAILED => "refused tokens",
        kind::SENDER_MISMATCH => "sends under another name",
        kind::RESULT_REJECTED => "refused results",
        kind::REPAIR_APPLIED => "repairs",
        kind::TASK_CANCELED => "cancels",
        kind::RETRY_SCAN => "retry scans",
        kind::COMPACTED => "compactions",
        kind::RESULT_CACHE_REPLAYED => "result cache replays",
        kind::IDEMPOTENCY_KEY_REPLAYED => "Idempotency-Key replays",
        _ => "rows of another kind",
    }
}

/// The slug of a row.
pub fn kind_of(e: &AuditEvent) -> &str {
    text(&e.kind, "type").unwrap_or("?")
}

/// A string field of a row's body.
pub fn text<'a>(k: &'a Value, field: &str) -> Option<&'a str> {
    k.get(field).and_then(Value::as_str)
}

/// A number field of a row's body.
pub fn number(k: &Value, field: &str) -> Option<u64> {
    k.get(field).and_then(Value::as_u64)
}

/// A task id as a link to its page; any other text as itself.
pub fn task_link(id: &str) -> Markup {
    html! {
        @if let Ok(id) = Uuid::parse_str(id) {
            a.task.mono href=(format!("/dashboard/tasks/{id}")) { (id) }
        } @else {
            span.mono { (id) }
        }
    }
}

/// Whether a row records something refused: a capability check that failed, a send under
/// another name, a refused result, refused tokens.
pub fn refused(e: &AuditEvent) -> bool {
    match kind_of(e) {
        kind::CAPABILITY_CHECK => e.kind.get("passed") != Some(&Value::Bool(true)),
        kind::SENDER_MISMATCH | kind::RESULT_REJECTED | kind::AUTHENTICATION_FAILED => true,
        _ => false,
    }
}

/// What a capability check was about, from its scope (and, for a repair, its action).
fn checked(k: &Value) -> Markup {
    let scope = text(k, "scope_id").unwrap_or("");
    let action = k
        .get("required_actions")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)
        .unwrap_or("");
    let (what, target) = scope.split_once(':').unwrap_or((scope, ""));
    match (what, action) {
        ("a2a-send", _) => html! { "send to " strong { (target) } },
        ("a2a-respond", _) => html! { "answer task " (task_link(target)) },
        ("a2a-cancel", _) => html! { "cancel task " (task_link(target)) },
        ("a2a-repair", "a2a.repair.force_error") => {
            html! { "force an error on task " (task_link(target)) }
        }
        ("a2a-repair", _) => html! { "requeue task " (task_link(target)) },
        _ if scope == "a2a:compact" => html! { "compact the mailbox" },
        _ if scope == "a2a-auto-retry" => html! { "run an enabled retry scan" },
        _ => html! { "act on " span.mono { (scope) } },
    }
}

/// A list of strings of a row's body, joined.
fn list(k: &Value, field: &str) -> String {
    let items = k.get(field).and_then(Value::as_array);
    let items = items.map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>());
    items.unwrap_or_default().join(", ")
}

/// `key n, key n` of an object of counts.
fn counts(k: &Value, field: &str) -> String {
    let Some(map) = k.get(field).and_then(Value::as_object) else {
        return String::new();
    };
    let each = map.iter().map(|(key, n)| format!("{key} {n}"));
    each.collect::<Vec<_>>().join(", ")
}

/// A repair's attempt, its lease (when the repair named one) and its posture, in brackets.
fn repair_facts(k: &Value) -> String {
    let mut facts = Vec::new();
    if let Some(n) = number(k, "attempt") {
        facts.push(format!("attempt {n}"));
    }
    if let Some(lease) = text(k, "lease_id") {
        facts.push(format!("lease {lease}"));
    }
    if let Some(risk) = text(k, "duplicate_risk") {
        facts.push(format!("as {risk}"));
    }
    facts.join(", ")
}

/// What happened, in one sentence built from the row's fields (the issuer is said beside it).
pub fn sentence(e: &AuditEvent) -> Markup {
    let k = &e.kind;
    let task = text(k, "task_id").unwrap_or("");
    let reason = text(k, "reason").filter(|r| !r.is_empty());
    html! {
        @match kind_of(e) {
            kind::CAPABILITY_CHECK => {
                @if refused(e) {
                    "Refused to " (checked(k)) ": the token lacks " code { (list(k, "missing_actions")) }
                } @else {
                    "Allowed to " (checked(k))
                    @let actions = list(k, "required_actions");
                    @if actions.is_empty() { " (its sender)" } @else { " (" code { (actions) } ")" }
                }
            },
            kind::AUTHENTICATION_FAILED => {
                (number(k, "count").unwrap_or(1)) " refused token(s) from "
                span.mono { (text(k, "address").unwrap_or("?")) }
                @let why = counts(k, "reasons");
                @if !why.is_empty() { ": " (why) }
            },
            kind::SENDER_MISMATCH => {
                "Refused a send under another name: sender " strong { (text(k, "sender").unwrap_or("?")) }
                " to " strong { (text(k, "recipient").unwrap_or("?")) }
                @if !task.is_empty() { ", task " (task_link(task)) }
            },
            kind::RESULT_REJECTED => {
                "Refused a result for task " (task_link(task)) ": "
                @match reason {
                    Some("unknown_task") => "no such task is visible to it",
                    Some(r) => (r),
                    None => "no reason recorded",
                }
            },
            kind::REPAIR_APPLIED => {
                @match text(k, "action") {
                    Some("force_error") => "Forced an error on task ",
                    Some("auto_requeue") => "Retry gate requeued task ",
                    _ => "Requeued task ",
                }
                (task_link(task)) " (" (repair_facts(k)) ")"
                @if let Some(r) = reason { ": " (r) }
            },
            kind::TASK_CANCELED => {
                "Canceled task " (task_link(task)) " while " (text(k, "previous_state").unwrap_or("?"))
                @if let Some(lease) = text(k, "lease_id") { " (lease " (lease) ")" }
                @if let Some(r) = reason { ": " (r) }
            },
            kind::RETRY_SCAN => {
                @if let Some(err) = text(k, "error") {
                    "Retry scan failed: " (err)
                } @else if k.get("coalesced") == Some(&Value::Bool(true)) {
                    "Retry scan coalesced into one already running"
                } @else {
                    @if k.get("enabled") == Some(&Value::Bool(true)) {
                        "Retry scan: "
                    } @else {
                        "Retry scan (dry run): "
                    }
                    "considered " (number(k, "considered").unwrap_or(0))
                    ", requeued " (number(k, "requeued").unwrap_or(0))
                    ", skipped " (number(k, "skipped").unwrap_or(0))
                    @let why = counts(k, "skipped_by_reason");
                    @if !why.is_empty() { " (" (why) ")" }
                }
            },
            kind::COMPACTED => {
                "Compaction dropped " (number(k, "dropped").unwrap_or(0)) ": "
                (number(k, "resolved_tasks").unwrap_or(0)) " settled tasks, "
                (number(k, "result_cache_entries").unwrap_or(0)) " cached results, "
                (number(k, "idempotency_keys").unwrap_or(0)) " Idempotency-Keys, "
                (number(k, "audit_rows").unwrap_or(0)) " audit rows"
            },
            kind::RESULT_CACHE_REPLAYED => {
                "Answered task " (task_link(task)) " from the result cache, with a copy of task "
                (task_link(text(k, "replayed_from").unwrap_or("?")))
            },
            kind::IDEMPOTENCY_KEY_REPLAYED => {
                "Answered a repeated request with the answer kept for Idempotency-Key "
                span.mono { (text(k, "key").unwrap_or("?")) } " (" (text(k, "outcome").unwrap_or("?")) ")"
            },
            other => { "A row of kind " code { (other) } },
        }
        @if k.get("truncated") == Some(&Value::Bool(true)) { " (row cut to its size bound)" }
    }
}

/// The header of a table of rows drawn by [`row`].
pub fn header() -> Markup {
    html! { tr { th.when { "when" } th.issuer { "issuer" } th.kind { "kind" } th.what { "what happened" } } }
}

/// One row of a table of audit rows: when (`7 min ago`, the UTC time on hover), the issuer,
/// the kind, the sentence; the row itself folded beneath it.
pub fn row(e: &AuditEvent, now: u64) -> Markup {
    let kind = kind_of(e);
    let raw = serde_json::to_string_pretty(&e.kind).unwrap_or_default();
    html! {
        tr {
            td.when { (ago(e.timestamp_ms, now)) }
            td.issuer { (e.issuer) }
            td.kind { code { (kind) } }
            td.what.refused[refused(e)] data-kind=(kind) data-event=(e.id) {
                span.sentence { (sentence(e)) }
                details.raw { summary { "row" } pre { (raw) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_menu_names_every_kind_the_mailbox_writes() {
        for slug in kind::ALL {
            assert_ne!(label(slug), label("no such kind"), "{slug} has no label");
        }
    }
}
