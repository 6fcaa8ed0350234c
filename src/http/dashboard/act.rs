//! What the stale-lease page's forms ask for: one action on the rows they carry (one row's own
//! form, the rows selected, or every row the page showed), each row its own audited operation,
//! fenced by the lease id the page showed for it; and each row's outcome, shown afterwards.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use uuid::Uuid;

use super::again::already_done;
use super::flash::{self, Tone};
use super::layout::{notice, SignedIn};
use super::refusal::explain;
use super::session::form_session;
use crate::error::{ErrorCode, MailboxError};
use crate::http::state::State;
use crate::mailbox::repair::{DuplicateRisk, RepairCommand, RepairRequest};
use crate::mailbox::Author;

/// What an action form asked for.
struct ActForm {
    action: String,
    duplicate_risk: Option<DuplicateRisk>,
    message: Option<String>,
    reason: String,
}

/// A row's outcome: done, skipped (nothing done, as the page's rules say), or refused.
enum RowOutcome {
    Done(String),
    Skipped(String),
    Refused(String),
}

pub async fn act(
    state: State,
    req: HttpRequest,
    body: web::Form<Vec<(String, String)>>,
) -> HttpResponse {
    let pairs = body.into_inner();
    let s = match form_session(&req, &state, &pairs) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let field = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let every = |k: &str| -> Vec<String> {
        pairs
            .iter()
            .filter(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .collect()
    };
    // "All shown" acts on the rows the page drew (`row`), never on a new query; otherwise on
    // the rows selected, or the one row whose own form this is (`task`).
    let (action, targets) = match field("all") {
        Some(all) => (all, every("row")),
        None => (field("action").unwrap_or_default(), every("task")),
    };
    let form = ActForm {
        action,
        duplicate_risk: match field("duplicate_risk").as_deref() {
            Some("idempotent") => Some(DuplicateRisk::Idempotent),
            Some("operator_accepted") => Some(DuplicateRisk::OperatorAccepted),
            _ => None,
        },
        message: field("message").filter(|m| !m.trim().is_empty()),
        reason: field("reason")
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| "repaired from the dashboard".into()),
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
        outcomes.push(act_on(&state, &s, &form, t).await);
    }
    let done = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, RowOutcome::Done(_)))
        .count();
    let status = if done == 0 && outcomes.len() == 1 {
        StatusCode::CONFLICT
    } else {
        StatusCode::OK
    };
    let what = match (form.action.as_str(), form.duplicate_risk) {
        ("requeue", Some(risk)) => format!("Requeue as {}", risk.as_str()),
        ("requeue", None) => "Requeue".to_owned(),
        ("force_error", _) => "Force error".to_owned(),
        ("cancel", _) => "Cancel".to_owned(),
        _ => "Nothing".to_owned(),
    };
    let rows = outcomes
        .into_iter()
        .filter_map(|(id, o)| {
            let (tone, says) = match o {
                RowOutcome::Done(says) => (Tone::Good, says),
                RowOutcome::Skipped(says) => (Tone::Hint, format!("skipped: {says}")),
                RowOutcome::Refused(says) => (Tone::Bad, format!("refused: {says}")),
            };
            Some((id?, tone, says))
        })
        .collect::<Vec<_>>();
    let unreadable = targets.len().saturating_sub(rows.len());
    let mut says = Vec::new();
    if unreadable > 0 {
        says.push(format!(
            "{unreadable} rows of the form carried no task id: nothing was done to them."
        ));
    }
    let report = flash::Report {
        title: format!("{what}: {done} of {} done", targets.len()),
        status,
        back: "/dashboard/leases".to_owned(),
        says,
        table: "outcomes",
        rows,
    };
    flash::redirect(&req, &state, &s, &report)
}

/// One action on one row (`<task id>:<lease id>`), under the lease the page showed; the row's
/// task id, if it carries one.
async fn act_on(
    state: &State,
    s: &SignedIn,
    form: &ActForm,
    target: &str,
) -> (Option<Uuid>, RowOutcome) {
    let (id, lease) = target.split_once(':').unwrap_or((target, ""));
    let Ok(task_id) = Uuid::parse_str(id) else {
        return (None, RowOutcome::Refused("not a task id".into()));
    };
    let Ok(shown) = Uuid::parse_str(lease) else {
        let says = "the row carries no lease id, so nothing was done: reload the page";
        return (Some(task_id), RowOutcome::Refused(says.into()));
    };
    let (by, lease_id) = (Author::from(&s.caller), Some(shown));
    let repair = |command| RepairRequest {
        task_id,
        reason: form.reason.clone(),
        command,
    };
    let done = match form.action.as_str() {
        "requeue" => {
            let Some(duplicate_risk) = form.duplicate_risk else {
                let says = "no duplicate risk was stated (idempotent or operator_accepted), so \
                            nothing was done";
                return (Some(task_id), RowOutcome::Refused(says.into()));
            };
            let command = RepairCommand::Requeue {
                lease_id,
                duplicate_risk,
            };
            let req = repair(command);
            state
                .mailbox
                .repair(by, &req)
                .await
                .map(|_| "requeued: back in the queue")
        }
        "force_error" => {
            let Some(message) = form.message.clone() else {
                let says = "a forced error needs a message";
                return (Some(task_id), RowOutcome::Refused(says.into()));
            };
            let req = repair(RepairCommand::ForceError { lease_id, message });
            state
                .mailbox
                .repair(by, &req)
                .await
                .map(|_| "error forced: the sender has a result to drain")
        }
        "cancel" => {
            let reason = Some(form.reason.clone());
            state
                .mailbox
                .cancel_fenced(by, task_id, lease_id, reason)
                .await
                .map(|_| "canceled")
        }
        other => {
            let says = format!("unknown action {other:?}");
            return (Some(task_id), RowOutcome::Refused(says));
        }
    };
    let outcome = match done {
        Ok(says) => RowOutcome::Done(says.to_owned()),
        // The same form sent again: its first submit ended the lease.
        Err(e) if lease_gone(&e) => match already_done(state, s, task_id, shown).await {
            Some(says) => RowOutcome::Done(says),
            None => RowOutcome::Skipped(explain(&e)),
        },
        Err(e) if skipped(&e) => RowOutcome::Skipped(explain(&e)),
        Err(e) => RowOutcome::Refused(explain(&e)),
    };
    (Some(task_id), outcome)
}

/// A refusal saying the lease the page showed is no longer the task's.
fn lease_gone(e: &MailboxError) -> bool {
    matches!(e.code, ErrorCode::LeaseMismatch | ErrorCode::NotInFlight)
}

/// A refusal that is the page's rules at work, not an error: the row's lease changed since it
/// was drawn, or the posture stated does not fit the task.
fn skipped(e: &MailboxError) -> bool {
    matches!(
        e.code,
        ErrorCode::LeaseMismatch | ErrorCode::NotInFlight | ErrorCode::DuplicateRiskMismatch
    )
}
