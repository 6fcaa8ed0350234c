//! One task's page: every field, its status, lease and result, its parent and children as a tree
//! with their tally, its history by attempt (`timeline.rs`) and its audit rows, and the repairs
//! and cancel it allows. The search over the task list is `search.rs`.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use maud::{html, Markup};
use serde::Deserialize;
use uuid::Uuid;

use super::events;
use super::layout::{
    ago, csrf_field, lacks, needs, no_enter, notice, ok, state_badge, when, SignedIn, ACCEPTED,
    FORCE_ERROR, REQUEUE,
};
use super::refusal::failure;
use super::session::{check_csrf, see_other, session, CsrfForm};
use super::timeline::timeline;
use crate::domain::{declared_idempotent, TaskState, TaskStatus};
use crate::http::state::State;
use crate::mailbox::listing::ListRequest;
use crate::mailbox::{now_ms, Author};

/// A task's page shows at most this many of its audit rows, newest first.
const AUDIT_ROWS: i64 = 500;

/// The repairs of an in-flight task, under the lease this page shows (as the stale-lease page
/// does: `act.rs` fences each by that lease), each with its reason for the audit row.
fn repair_forms(s: &SignedIn, t: &TaskStatus, lease: &str) -> Markup {
    let target = format!("{}:{lease}", t.task.id);
    let safe = declared_idempotent(&t.task);
    let warning = "This task is not declared idempotent: requeueing it lets a worker run it again \
        although the first attempt may already have done the work. Requeue it anyway, as \
        operator_accepted?";
    let (rq, fe) = (lacks(s, REQUEUE), lacks(s, FORCE_ERROR));
    let why = |cap: Option<&str>| cap.map(|c| format!("needs {c}"));
    // Each form's default button is disabled: Enter in a text field submits nothing.
    html! {
        h2 { "Repair" }
        form.actions #repair-requeue method="post" action="/dashboard/leases/act"
            data-confirm=[(!safe).then_some(warning)] {
            (no_enter())
            (csrf_field(s))
            input type="hidden" name="task" value=(target);
            select name="duplicate_risk" {
                @if safe { option value="idempotent" { "idempotent (declared by its sender)" } }
                option value="operator_accepted" { (ACCEPTED) }
            }
            input type="text" name="reason" placeholder="reason (kept in the audit row)";
            button name="action" value="requeue" disabled[rq.is_some()] title=[why(rq)] { "Requeue" }
            (needs(rq))
        }
        form.actions #repair-error method="post" action="/dashboard/leases/act" {
            (no_enter())
            (csrf_field(s))
            input type="hidden" name="task" value=(target);
            input type="text" name="message" required placeholder="error message for the sender";
            input type="text" name="reason" placeholder="reason (kept in the audit row)";
            button.danger name="action" value="force_error" disabled[fe.is_some()] title=[why(fe)] { "Force error" }
            (needs(fe))
        }
    }
}

/// The children's tally: how many in each state, and the answered ones by result status
/// (an error answer is not a success).
fn tally(children: &[TaskStatus]) -> String {
    let count = |f: &dyn Fn(&TaskStatus) -> bool| children.iter().filter(|c| f(c)).count();
    let states: Vec<String> = TaskState::ALL
        .iter()
        .map(|s| (s, count(&|c| c.state == *s)))
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {}", s.as_str()))
        .collect();
    let results: Vec<String> = ["ok", "partial", "error"]
        .iter()
        .map(|r| {
            (
                r,
                count(&|c| c.result.as_ref().is_some_and(|x| x.status.as_str() == *r)),
            )
        })
        .filter(|(_, n)| *n > 0)
        .map(|(r, n)| format!("{n} {r}"))
        .collect();
    let mut line = format!("{} children: {}", children.len(), states.join(", "));
    if !results.is_empty() {
        line.push_str(&format!("; answered {}", results.join(", ")));
    }
    line
}

pub async fn task(state: State, req: HttpRequest, id: web::Path<String>) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let Ok(id) = Uuid::parse_str(&id) else {
        let says = "That is not a task id.";
        return notice(
            &s,
            StatusCode::NOT_FOUND,
            "No such task",
            says,
            "/dashboard/tasks",
        );
    };
    let mailbox = &state.mailbox;
    let status = match mailbox.task_status(&s.caller, id).await {
        Ok(t) => t,
        Err(e) => return failure(&s, &e, "/dashboard/tasks"),
    };
    let children = ListRequest {
        limit: 100,
        ..ListRequest::default()
    };
    let children = match mailbox.children(&s.caller, id, &children).await {
        Ok(children) => children.tasks,
        Err(e) => return failure(&s, &e, "/dashboard/tasks"),
    };
    let rows = match mailbox.audit_of_task(&s.caller, id, AUDIT_ROWS).await {
        Ok(rows) => rows,
        Err(e) => return failure(&s, &e, "/dashboard/tasks"),
    };
    let t = &status;
    let (now, capped) = (now_ms().max(0) as u64, rows.len() as i64 == AUDIT_ROWS);
    let cancelable = matches!(t.state, TaskState::Queued | TaskState::InFlight);
    ok(
        "Task",
        &s,
        html! {
            h1 { "Task " span.mono { (t.task.id) } }
            table #task {
                tr { th { "state" } td #state { (state_badge(t)) } }
                tr { th { "sender → recipient" } td { (t.task.sender.as_str()) " → " (t.task.recipient.as_str()) } }
                tr { th { "intent" } td { (t.task.intent_text) } }
                tr { th { "kind" } td #kind { (t.task.task_kind.as_deref().unwrap_or("—")) } }
                tr { th { "context" } td.mono #context { (t.task.context_id.as_deref().unwrap_or("—")) } }
                tr { th { "duplicate safety" } td #safety { @match &t.task.idempotency {
                    Some(i) => { (i.duplicate_safety.as_str()) ", key " span.mono { (i.key) } },
                    None => "unsafe (no key)",
                } } }
                tr { th { "deadline" } td #deadline { @match t.task.deadline_ms {
                    Some(d) => (format!("{} UTC", when(d))),
                    None => "—",
                } } }
                tr { th { "input" } td #input {
                    pre { (serde_json::to_string_pretty(&t.task.content).unwrap_or_default()) }
                } }
                tr { th { "attempt" } td { (t.attempt) } }
                tr { th { "lease" } td { @if let Some(l) = &t.lease {
                    (l.leased_to.as_str()) ", lease " span.mono { (l.lease_id) } ", since " (when(l.leased_at_ms))
                    ", last heartbeat " (ago(l.heartbeat_at_ms, now))
                } @else { "—" } } }
                @if let Some(c) = &t.cancellation {
                    tr { th { "canceled" } td #canceled {
                        "by " (c.canceled_by.as_str()) ", " (when(c.canceled_at_ms)) " UTC, while "
                        (c.previous_state.as_str())
                        @if let Some(why) = &c.reason { ": " (why) }
                    } }
                }
                tr { th { "result" } td #result { @if let Some(r) = &t.result {
                    (r.status.as_str()) @if let Some(m) = &r.error_message { ": " (m) }
                    pre { (serde_json::to_string_pretty(&r.content).unwrap_or_default()) }
                } @else { "—" } } }
                tr { th { "created / updated (UTC)" } td { (when(t.created_at_ms)) " / " (when(t.updated_at_ms)) } }
            }
            h2 { "Task graph" }
            div.tree {
                @if let Some(parent) = t.task.parent {
                    "parent: " a.mono href=(format!("/dashboard/tasks/{parent}")) { (parent) }
                }
                @if !children.is_empty() { p #tally { (tally(&children)) } }
                ul { li { strong { "this task" } " (" (t.state.as_str()) ")"
                    ul { @for c in &children {
                        li {
                            a.mono href=(format!("/dashboard/tasks/{}", c.task.id)) { (c.task.id) }
                            " " (state_badge(c)) " — " (c.task.intent_text)
                        }
                    } }
                } }
                @if children.is_empty() { p.hint { "No children." } }
            }
            @if let Some(l) = &t.lease {
                (repair_forms(&s, t, &l.lease_id.to_string()))
            }
            @if cancelable {
                h2 { "Cancel" }
                form.actions method="post" action=(format!("/dashboard/tasks/{}/cancel", t.task.id))
                    data-confirm="Cancel this task? Its worker will be told to stop." {
                    (no_enter())
                    (csrf_field(&s))
                    input type="text" name="reason" placeholder="reason";
                    button.danger { "Cancel task" }
                }
            }
            (timeline(t, &rows, capped, now))
            h2 { "Audit rows" }
            @if capped {
                p.hint { "The newest " (AUDIT_ROWS) " rows of this task; the audit page has every row." }
            }
            table.events #task-audit {
                (events::header())
                @for e in &rows { (events::row(e, now)) }
            }
        },
    )
}

#[derive(Deserialize)]
pub struct CancelForm {
    #[serde(flatten)]
    csrf: CsrfForm,
    reason: Option<String>,
}

pub async fn cancel(
    state: State,
    req: HttpRequest,
    id: web::Path<String>,
    form: web::Form<CancelForm>,
) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    if let Err(refused) = check_csrf(&s, form.csrf.csrf.as_deref()) {
        return *refused;
    }
    let back = format!("/dashboard/tasks/{id}");
    let Ok(task_id) = Uuid::parse_str(&id) else {
        return see_other("/dashboard/tasks");
    };
    let reason = form.reason.clone().filter(|r| !r.trim().is_empty());
    match state
        .mailbox
        .cancel(Author::from(&s.caller), task_id, reason)
        .await
    {
        Ok(_) => see_other(&back),
        Err(e) => failure(&s, &e, &back),
    }
}
