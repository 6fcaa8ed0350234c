//! The stale-lease page's table: one line per lease (its own actions folded behind "Act", each
//! with a reason for its audit row), and the bulk bar that stays on screen under it, saying how
//! many rows are selected.

use maud::{html, Markup};

use super::layout::{
    age, csrf_field, lacks, needs, no_enter, when, SignedIn, ACCEPTED, FORCE_ERROR, REQUEUE,
};
use crate::domain::{declared_idempotent, QueueEntry};
use crate::mailbox::now_ms;

/// The rows, inside the bulk form (their checkboxes are its), with each row's own forms beside.
pub fn lease_table(s: &SignedIn, rows: &[QueueEntry]) -> Markup {
    let now = now_ms().max(0) as u64;
    html! {
        @for (i, e) in rows.iter().enumerate() { (row_forms(s, i, e)) }
        form #bulk method="post" action="/dashboard/leases/act" {
            // The form's default button, disabled: Enter in one of its boxes submits nothing
            // (the operator presses the button of the action meant).
            button type="submit" disabled hidden aria-hidden="true" {}
            (csrf_field(s))
            // The rows shown: what "all shown" acts on, each under the lease shown.
            @for e in rows { input type="hidden" name="row" value=(target(e)); }
            div.scroll {
                table #leases.lines {
                    tr {
                        th { input type="checkbox" data-select-all="task" aria-label="select every row shown"; }
                        th { "task" } th { "recipient" } th { "lessee" } th { "kind" }
                        th { "idle" } th.num { "attempt" } th { "safety" } th { "act" }
                    }
                    @for (i, e) in rows.iter().enumerate() { (row(s, i, e, now)) }
                }
            }
            (bulk_bar(s, rows))
        }
    }
}

/// The hidden forms one row's own controls submit: one per action. Each form's default button
/// is disabled, so Enter in one of the row's boxes submits nothing.
fn row_forms(s: &SignedIn, i: usize, e: &QueueEntry) -> Markup {
    html! {
        @for action in ["requeue", "error"] {
            form id=(format!("row-{i}-{action}")) method="post" action="/dashboard/leases/act" {
                (no_enter())
                (csrf_field(s))
                input type="hidden" name="task" value=(target(e));
            }
        }
    }
}

/// A row as the forms carry it: `<task id>:<lease id>`.
fn target(e: &QueueEntry) -> String {
    format!(
        "{}:{}",
        e.task.id,
        e.lease_id.map(|l| l.to_string()).unwrap_or_default()
    )
}

fn row(s: &SignedIn, i: usize, e: &QueueEntry, now: u64) -> Markup {
    let (rq, fe) = (lacks(s, REQUEUE), lacks(s, FORCE_ERROR));
    let (rq_why, fe_why) = (
        rq.map(|c| format!("needs {c}")),
        fe.map(|c| format!("needs {c}")),
    );
    let (requeue, error) = (format!("row-{i}-requeue"), format!("row-{i}-error"));
    let idle = now.saturating_sub(e.heartbeat_at_ms.unwrap_or(now));
    let safe = declared_idempotent(&e.task);
    let id = e.task.id.to_string();
    let warning = format!(
        "Task {id} is not declared idempotent: requeueing it lets a worker run it again although \
         the first attempt may already have done the work. Requeue it anyway, as operator_accepted?"
    );
    let leased = format!(
        "leased {} UTC, last heartbeat {} UTC",
        when(e.leased_at_ms.unwrap_or(0)),
        when(e.heartbeat_at_ms.unwrap_or(0))
    );
    let key = e.task.idempotency.as_ref().map(|i| i.key.as_str());
    html! {
        tr data-task=(id) {
            td { input type="checkbox" name="task" value=(target(e)) aria-label=(format!("select task {id}")); }
            td.task {
                a.mono href=(format!("/dashboard/tasks/{id}")) title=(id) { (id[..8]) }
                " " span.intent title=(e.task.intent_text) { (e.task.intent_text) }
            }
            td { (e.task.recipient.as_str()) }
            td { (e.leased_to.as_ref().map_or("", |l| l.as_str())) }
            td { (e.task.task_kind.as_deref().unwrap_or("—")) }
            td.idle title=(leased) { (age(idle)) }
            td.num { (e.attempt) }
            td title=(key.map_or("no idempotency key".to_owned(), |k| format!("key {k}"))) {
                @if safe { "idempotent" } @else { span.unsafe { "unsafe" } }
            }
            td.act {
                details {
                    summary { "Act" }
                    div.row-forms {
                        div.actions {
                            // Only the postures this task allows: idempotent only if its sender said so.
                            select name="duplicate_risk" form=(requeue) aria-label="requeue as" {
                                @if safe { option value="idempotent" { "idempotent (declared by its sender)" } }
                                option value="operator_accepted" { (ACCEPTED) }
                            }
                            input type="text" name="reason" form=(requeue) placeholder="reason (audit row)";
                            button name="action" value="requeue" form=(requeue) disabled[rq.is_some()]
                                title=[rq_why] data-confirm=[(!safe).then_some(&warning)] { "Requeue" }
                            (needs(rq))
                        }
                        div.actions {
                            input type="text" name="message" form=(error) required placeholder="error message";
                            input type="text" name="reason" form=(error) placeholder="reason (audit row)";
                            button.danger name="action" value="force_error" form=(error)
                                disabled[fe.is_some()] title=[fe_why] { "Force error" }
                            (needs(fe))
                        }
                    }
                }
            }
        }
    }
}

/// The bar under the table that stays on screen: the count selected, the reason, and the actions
/// on the rows selected or on every row shown.
fn bulk_bar(s: &SignedIn, rows: &[QueueEntry]) -> Markup {
    let (rq, fe) = (lacks(s, REQUEUE), lacks(s, FORCE_ERROR));
    let why = |cap: Option<&str>| cap.map(|c| format!("needs {c}"));
    let n = rows.len();
    let risky = rows
        .iter()
        .filter(|e| !declared_idempotent(&e.task))
        .count();
    let requeue = "Requeue the {selected} selected tasks as {posture}?";
    let all = format!(
        "Requeue all {n} tasks shown as {{posture}}? {risky} of them are not declared idempotent: \
         as idempotent they are skipped, as operator_accepted they may run twice."
    );
    html! {
        div.bulkbar #bulkbar role="region" aria-label="act on the selected rows" {
            div.actions {
                strong #selected-count data-selected-count="task" { "0 selected" }
                span.hint { "of " (n) " shown; each row is its own audited operation, under the lease shown" }
            }
            div.actions {
                input #bulk-reason type="text" name="reason"
                    placeholder="reason (kept in each audit row)" aria-label="reason";
                select #bulk-posture name="duplicate_risk" aria-label="requeue as" {
                    option value="operator_accepted" { (ACCEPTED) }
                    option value="idempotent" { "idempotent: rows not declared idempotent with a key are skipped" }
                }
                input #bulk-message type="text" name="message"
                    placeholder="error message (force error)" aria-label="error message";
            }
            // A button stays disabled while its action would be refused: nothing selected, no
            // error message, or a capability the token lacks (named).
            div.actions {
                button name="action" value="requeue" data-confirm=(requeue) data-needs-selection
                    disabled[rq.is_some()] data-lacks=[rq] title=[why(rq)] { "Requeue selected" }
                button.danger name="action" value="force_error"
                    data-confirm="Force an error on the {selected} selected tasks?"
                    data-needs-selection data-needs-message="bulk-message"
                    disabled[fe.is_some()] data-lacks=[fe] title=[why(fe)] { "Force error on selected" }
                button.danger name="action" value="cancel"
                    data-confirm="Cancel the {selected} selected tasks?" data-needs-selection { "Cancel selected" }
                button.quiet name="all" value="requeue" data-confirm=(all)
                    disabled[rq.is_some()] data-lacks=[rq] title=[why(rq)] { "Requeue all " (n) " shown" }
                @let all = format!("Force an error on all {n} tasks shown?");
                button.danger name="all" value="force_error" data-confirm=(all) data-needs-message="bulk-message"
                    disabled[fe.is_some()] data-lacks=[fe] title=[why(fe)] { "Force error on all " (n) " shown" }
                (needs(rq))
                (needs(fe))
            }
        }
    }
}
