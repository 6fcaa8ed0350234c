//! Stale leases: the in-flight tasks, oldest heartbeat first, and what an operator does about
//! them: requeue (stating the duplicate risk the task allows), force an error, or cancel; one row
//! or many. Every row carries its task id and the lease id the page showed, and every action on
//! it is fenced by that lease (see `act.rs`): the page acts only on what the operator saw.

use actix_web::{HttpRequest, HttpResponse};
use maud::{html, Markup};
use serde::Deserialize;

use super::layout::{age, csrf_field, ok, when, Session};
use super::session::session;
use crate::domain::{declared_idempotent, QueueEntry, QueueState};
use crate::error::MailboxError;
use crate::http::state::State;
use crate::mailbox::now_ms;
use crate::mailbox::tasks::QueueFilter;

/// The idle times the filter offers, in milliseconds, as people say them.
const IDLE: [(i64, &str); 8] = [
    (0, "any time"),
    (60_000, "1 min"),
    (300_000, "5 min"),
    (900_000, "15 min"),
    (1_800_000, "30 min"),
    (3_600_000, "1 h"),
    (21_600_000, "6 h"),
    (86_400_000, "1 day"),
];

/// Rows a page shows at most.
const LIMIT: i64 = 500;

/// What the posture `operator_accepted` says, wherever a requeue offers it.
pub const ACCEPTED: &str = "operator_accepted: I accept that it may run twice";

#[derive(Deserialize)]
pub struct Filter {
    min_age_ms: Option<i64>,
    /// Only leases idle for less than this (a card of the overview opens its own bucket).
    max_age_ms: Option<i64>,
}

async fn stale(
    state: &State,
    s: &Session,
    min_age_ms: i64,
    max_age_ms: Option<i64>,
) -> Result<Vec<QueueEntry>, MailboxError> {
    let f = QueueFilter {
        limit: LIMIT,
        min_lease_age_ms: Some(min_age_ms.max(0)),
        max_lease_age_ms: max_age_ms,
        deadline_within_ms: None,
        state: Some(QueueState::InFlight),
    };
    Ok(state.mailbox.queue(&s.caller, &f).await?.tasks)
}

pub async fn list(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let q: Filter = match super::read_query(&s, &req, "/dashboard/leases") {
        Ok(q) => q,
        Err(page) => return *page,
    };
    let min_age = q.min_age_ms.unwrap_or(0);
    let rows = match stale(&state, &s, min_age, q.max_age_ms).await {
        Ok(rows) => rows,
        Err(e) => return super::failure(&s, &e, "/dashboard"),
    };
    let now = now_ms().max(0) as u64;
    ok(
        "Stale leases",
        &s,
        html! {
            h1 { "Stale leases" }
            form.filters method="get" {
                label { "idle at least" select name="min_age_ms" {
                    @for (ms, label) in IDLE {
                        option value=(ms) selected[ms == min_age] { (label) }
                    }
                    @if !IDLE.iter().any(|(ms, _)| *ms == min_age) {
                        option value=(min_age) selected { (age(min_age.max(0) as u64)) }
                    }
                } }
                @if let Some(max) = q.max_age_ms {
                    input type="hidden" name="max_age_ms" value=(max);
                    span.hint { "and less than " (age(max.max(0) as u64)) " (the overview's card)" }
                }
                button.quiet { "Filter" }
            }
            @if rows.is_empty() {
                p.hint { "No lease has been idle that long." }
            } @else {
                @for (i, e) in rows.iter().enumerate() { (row_forms(&s, i, e)) }
                form #bulk method="post" action="/dashboard/leases/act" {
                    // The form's default button, disabled: Enter in one of its boxes submits
                    // nothing (the operator presses the button of the action meant).
                    button type="submit" disabled hidden aria-hidden="true" {}
                    (csrf_field(&s))
                    // The rows shown: what "all shown" acts on, each under the lease shown.
                    @for e in &rows { input type="hidden" name="row" value=(target(e)); }
                    table #leases {
                        tr {
                            th { input type="checkbox" data-select-all="task" title="select every row shown"; }
                            th { "task" } th { "lessee" } th { "lease age" } th { "attempt" }
                            th { "duplicate safety" } th { "key" } th { "act on this row" }
                        }
                        @for (i, e) in rows.iter().enumerate() { (row(i, e, now)) }
                    }
                    (bulk_controls(&rows))
                }
            }
        },
    )
}

/// The hidden forms one row's own controls submit: one per action, so that Enter in the
/// error-message box submits that row's forced error, never its requeue.
fn row_forms(s: &Session, i: usize, e: &QueueEntry) -> Markup {
    html! {
        @for action in ["requeue", "error"] {
            form id=(format!("row-{i}-{action}")) method="post" action="/dashboard/leases/act" {
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

fn row(i: usize, e: &QueueEntry, now: u64) -> Markup {
    let (requeue, error) = (format!("row-{i}-requeue"), format!("row-{i}-error"));
    let idle = now.saturating_sub(e.heartbeat_at_ms.unwrap_or(now));
    let safe = declared_idempotent(&e.task);
    let warning = format!(
        "Task {} is not declared idempotent: requeueing it lets a worker run it again although \
         the first attempt may already have done the work. Requeue it anyway, as operator_accepted?",
        e.task.id
    );
    html! {
        tr data-task=(e.task.id) {
            td { input type="checkbox" name="task" value=(target(e)); }
            td { a.mono href=(format!("/dashboard/tasks/{}", e.task.id)) { (e.task.id) } br; (e.task.intent_text) }
            td { (e.leased_to.as_ref().map_or("", |l| l.as_str())) }
            td { (age(idle)) br; span.hint { "leased " (when(e.leased_at_ms.unwrap_or(0))) } }
            td { (e.attempt) }
            td { @if safe { "idempotent" } @else { span.unsafe { "unsafe" } } }
            td.mono { (e.task.idempotency.as_ref().map_or("—", |i| i.key.as_str())) }
            td {
                div.actions {
                    // Only the postures this task allows: idempotent only if its sender said so.
                    select name="duplicate_risk" form=(requeue) {
                        @if safe { option value="idempotent" { "idempotent (declared by its sender)" } }
                        option value="operator_accepted" { (ACCEPTED) }
                    }
                    @if safe {
                        button name="action" value="requeue" form=(requeue) { "Requeue" }
                    } @else {
                        button name="action" value="requeue" form=(requeue) data-confirm=(warning) { "Requeue" }
                    }
                }
                div.actions {
                    input type="text" name="message" form=(error) required placeholder="error message";
                    button.danger name="action" value="force_error" form=(error) { "Force error" }
                }
            }
        }
    }
}

fn bulk_controls(rows: &[QueueEntry]) -> Markup {
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
        h2 { "Selected rows, or every row shown" }
        p.hint {
            "Each row is its own operation and audit row, under the lease this page shows: a row \
             whose lease changed since is skipped, and rows that appeared since are not touched."
        }
        div.actions {
            label { "reason " input type="text" name="reason" value="repaired from the dashboard"; }
            label { "requeue as " select #bulk-posture name="duplicate_risk" {
                option value="operator_accepted" { (ACCEPTED) }
                option value="idempotent" { "idempotent: rows not declared idempotent with a key are skipped" }
            } }
            input #bulk-message type="text" name="message" placeholder="error message (force error)";
        }
        div.actions {
            button name="action" value="requeue" data-confirm=(requeue) { "Requeue selected" }
            button.danger name="action" value="force_error" data-confirm="Force an error on the {selected} selected tasks?" { "Force error on selected" }
            button.danger name="action" value="cancel" data-confirm="Cancel the {selected} selected tasks?" { "Cancel selected" }
        }
        div.actions {
            button name="all" value="requeue" data-confirm=(all) { "Requeue all " (n) " shown" }
            @let all = format!("Force an error on all {n} tasks shown?");
            button.danger name="all" value="force_error" data-confirm=(all) { "Force error on all " (n) " shown" }
        }
    }
}
