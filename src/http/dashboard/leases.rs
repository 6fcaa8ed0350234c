//! Stale leases: the in-flight tasks, oldest heartbeat first, and what an operator does about
//! them: requeue (stating the duplicate risk), force an error, or cancel; one row or many, each
//! row its own audited operation, with each row's outcome shown afterwards.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use maud::{html, Markup};
use serde::Deserialize;
use uuid::Uuid;

use super::layout::{age, csrf_field, notice, ok, outcome_page, when};
use super::session::{check_csrf, session, Session};
use crate::domain::{DuplicateSafety, QueueEntry, QueueState};
use crate::error::{ErrorCode, MailboxError};
use crate::http::State;
use crate::mailbox::now_ms;
use crate::mailbox::repair::{DuplicateRisk, RepairCommand, RepairRequest};
use crate::mailbox::tasks::QueueFilter;
use crate::mailbox::Writer;

/// Rows a page (and an "every matching row" action) covers at most.
const LIMIT: i64 = 500;

#[derive(Deserialize)]
pub struct Filter {
    min_age_ms: Option<i64>,
}

async fn stale(
    state: &State,
    s: &Session,
    min_age_ms: i64,
) -> Result<Vec<QueueEntry>, MailboxError> {
    let f = QueueFilter {
        limit: LIMIT,
        min_lease_age_ms: Some(min_age_ms.max(0)),
        deadline_within_ms: None,
        state: Some(QueueState::InFlight),
    };
    Ok(state.mailbox.queue(&s.caller, &f).await?.tasks)
}

fn unsafe_to_repeat(e: &QueueEntry) -> bool {
    e.task
        .idempotency
        .as_ref()
        .is_none_or(|i| i.duplicate_safety == DuplicateSafety::Unsafe)
}

pub async fn list(state: State, req: HttpRequest, q: web::Query<Filter>) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let min_age = q.min_age_ms.unwrap_or(0);
    let rows = match stale(&state, &s, min_age).await {
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
                label { "lease idle at least (ms)" input type="number" name="min_age_ms" min="0" value=(min_age); }
                button.quiet { "Filter" }
            }
            @if rows.is_empty() {
                p.hint { "No lease has been idle that long." }
            } @else {
                @for (i, e) in rows.iter().enumerate() { (row_form(&s, i, e)) }
                form #bulk method="post" action="/dashboard/leases/act" {
                    (csrf_field(&s))
                    table #leases {
                        tr {
                            th { input type="checkbox" data-select-all="task" title="select every row"; }
                            th { "task" } th { "lessee" } th { "lease age" } th { "attempt" }
                            th { "duplicate safety" } th { "key" } th { "act on this row" }
                        }
                        @for (i, e) in rows.iter().enumerate() { (row(i, e, now)) }
                    }
                    (bulk_controls(&rows, min_age))
                }
            }
        },
    )
}

/// The hidden form one row's own buttons submit.
fn row_form(s: &Session, i: usize, e: &QueueEntry) -> Markup {
    html! {
        form id=(format!("row-{i}")) method="post" action="/dashboard/leases/act" {
            (csrf_field(s))
            input type="hidden" name="task" value=(target(e));
        }
    }
}

fn target(e: &QueueEntry) -> String {
    format!(
        "{}:{}",
        e.task.id,
        e.lease_id.map(|l| l.to_string()).unwrap_or_default()
    )
}

fn row(i: usize, e: &QueueEntry, now: u64) -> Markup {
    let form = format!("row-{i}");
    let idle = now.saturating_sub(e.heartbeat_at_ms.unwrap_or(now));
    let risky = unsafe_to_repeat(e);
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
            td { @if risky { span.unsafe { "unsafe" } } @else { "idempotent" } }
            td.mono { (e.task.idempotency.as_ref().map_or("—", |i| i.key.as_str())) }
            td {
                div.actions {
                    select name="duplicate_risk" form=(form) {
                        @if !risky { option value="idempotent" { "idempotent" } }
                        option value="operator_accepted" { "operator_accepted" }
                    }
                    @if risky {
                        button name="action" value="requeue" form=(form) data-confirm=(warning) { "Requeue" }
                    } @else {
                        button name="action" value="requeue" form=(form) { "Requeue" }
                    }
                }
                div.actions {
                    input type="text" name="message" form=(form) placeholder="error message";
                    button.danger name="action" value="force_error" form=(form) { "Force error" }
                }
            }
        }
    }
}

fn bulk_controls(rows: &[QueueEntry], min_age: i64) -> Markup {
    let n = rows.len();
    let risky = rows.iter().filter(|e| unsafe_to_repeat(e)).count();
    html! {
        h2 { "Selected rows, or every row of this filter" }
        div.actions {
            label { "reason " input type="text" name="reason" value="repaired from the dashboard"; }
            select name="duplicate_risk" {
                option value="operator_accepted" { "operator_accepted" }
                option value="idempotent" { "idempotent" }
            }
            input type="text" name="message" placeholder="error message (force error)";
            input type="hidden" name="min_age_ms" value=(min_age);
        }
        div.actions {
            button name="action" value="requeue" data-confirm="Requeue every selected task? Unsafe ones may run twice." { "Requeue selected" }
            button.danger name="action" value="force_error" data-confirm="Force an error on every selected task?" { "Force error on selected" }
            button.danger name="action" value="cancel" data-confirm="Cancel every selected task?" { "Cancel selected" }
        }
        div.actions {
            @let all = format!("Requeue all {n} tasks of this filter ({risky} of them unsafe: they may run twice)?");
            button name="all" value="requeue" data-confirm=(all) { "Requeue all " (n) " matching" }
            @let all = format!("Force an error on all {n} tasks of this filter?");
            button.danger name="all" value="force_error" data-confirm=(all) { "Force error on all " (n) " matching" }
        }
    }
}

/// One action on one task: its outcome, as the page explains it.
async fn act_on(
    state: &State,
    s: &Session,
    form: &ActForm,
    action: &str,
    target: &str,
) -> (String, Result<String, String>) {
    let (id, lease) = target.split_once(':').unwrap_or((target, ""));
    let Ok(task_id) = Uuid::parse_str(id) else {
        return (id.to_owned(), Err("not a task id".into()));
    };
    let lease_id = Uuid::parse_str(lease).ok();
    let reason = form
        .reason
        .clone()
        .filter(|r| !r.trim().is_empty())
        .unwrap_or_else(|| "repaired from the dashboard".into());
    let repair = |command| RepairRequest {
        task_id,
        reason: reason.clone(),
        command,
    };
    let done = match action {
        "requeue" => {
            let risk = match form.duplicate_risk.as_deref() {
                Some("idempotent") => DuplicateRisk::Idempotent,
                _ => DuplicateRisk::OperatorAccepted,
            };
            let req = repair(RepairCommand::Requeue {
                lease_id,
                duplicate_risk: risk,
            });
            state
                .mailbox
                .repair(Writer::from(&s.caller), &req)
                .await
                .map(|_| "requeued: back in the queue".to_owned())
        }
        "force_error" => {
            let message = form.message.clone().unwrap_or_default();
            if message.trim().is_empty() {
                return (id.to_owned(), Err("a forced error needs a message".into()));
            }
            let req = repair(RepairCommand::ForceError { lease_id, message });
            state
                .mailbox
                .repair(Writer::from(&s.caller), &req)
                .await
                .map(|_| "error forced: the sender has a result to drain".to_owned())
        }
        "cancel" => state
            .mailbox
            .cancel(Writer::from(&s.caller), task_id, Some(reason))
            .await
            .map(|_| "canceled".to_owned()),
        other => return (id.to_owned(), Err(format!("unknown action {other:?}"))),
    };
    (id.to_owned(), done.map_err(|e| explain(&e)))
}

/// A refusal explained: a lease that changed meanwhile is not an error of the page.
pub fn explain(e: &MailboxError) -> String {
    match e.code {
        ErrorCode::LeaseMismatch | ErrorCode::NotInFlight => format!(
            "the lease changed since you looked (the task was answered, requeued or leased \
             again), so nothing was done: {}",
            e.message
        ),
        _ => e.message.clone(),
    }
}

/// What an action form asked for.
pub struct ActForm {
    csrf: Option<String>,
    action: Option<String>,
    all: Option<String>,
    duplicate_risk: Option<String>,
    message: Option<String>,
    reason: Option<String>,
    min_age_ms: Option<i64>,
}

pub async fn act(
    state: State,
    req: HttpRequest,
    body: web::Form<Vec<(String, String)>>,
) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let pairs = body.into_inner();
    let field = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let form = ActForm {
        csrf: field("csrf"),
        action: field("action"),
        all: field("all"),
        duplicate_risk: field("duplicate_risk"),
        message: field("message").filter(|m| !m.is_empty()),
        reason: field("reason"),
        min_age_ms: field("min_age_ms").and_then(|v| v.parse().ok()),
    };
    if let Err(refused) = check_csrf(&s, form.csrf.as_deref()) {
        return *refused;
    }
    let mut targets: Vec<String> = pairs
        .iter()
        .filter(|(k, _)| k == "task")
        .map(|(_, v)| v.clone())
        .collect();
    let action = match (&form.all, &form.action) {
        (Some(all), _) => {
            match stale(&state, &s, form.min_age_ms.unwrap_or(0)).await {
                Ok(rows) => targets = rows.iter().map(target).collect(),
                Err(e) => return super::failure(&s, &e, "/dashboard/leases"),
            }
            all.clone()
        }
        (None, Some(action)) => action.clone(),
        (None, None) => String::new(),
    };
    if targets.is_empty() {
        let says = "No task was selected: nothing was done.";
        return notice(
            &s,
            StatusCode::BAD_REQUEST,
            "Nothing selected",
            says,
            "/dashboard/leases",
        );
    }
    let mut outcomes = Vec::new();
    for t in &targets {
        outcomes.push(act_on(&state, &s, &form, &action, t).await);
    }
    let failed = outcomes.iter().filter(|(_, o)| o.is_err()).count();
    let status = if failed == outcomes.len() && outcomes.len() == 1 {
        StatusCode::CONFLICT
    } else {
        StatusCode::OK
    };
    let title = format!("{} of {} done", outcomes.len() - failed, outcomes.len());
    let body = html! {
        table #outcomes {
            tr { th { "task" } th { "outcome" } }
            @for (id, o) in &outcomes {
                tr data-task=(id) {
                    td { a.mono href=(format!("/dashboard/tasks/{id}")) { (id) } }
                    @match o {
                        Ok(done) => td.good { (done) },
                        Err(why) => td.bad { (why) },
                    }
                }
            }
        }
    };
    outcome_page(&s, &title, status, body, "/dashboard/leases")
}
