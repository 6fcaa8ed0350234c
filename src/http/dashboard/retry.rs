//! The retry gate: the configured policy as a dry run (what would be requeued, and why every
//! other stale task is skipped), then, after one more confirmation, the requeue of exactly the
//! tasks the preview listed, each under the lease it showed (a lease that changed since is left
//! alone), under the same rules.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use maud::{html, Markup};
use uuid::Uuid;

use super::again::already_done;
use super::flash::{self, Tone};
use super::layout::{csrf_field, lacks, ok, REQUEUE};
use super::refusal::failure;
use super::session::{form_session, session};
use crate::http::state::State;
use crate::mailbox::retry::{RetryReport, SkipReason};
use crate::mailbox::Author;

const BACK: &str = "/dashboard/retry";

pub async fn preview(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let mut policy = state.scheduler_policy.clone();
    policy.enabled = false;
    let report = match state.mailbox.preview_retry(&s.caller, &policy).await {
        Ok(report) => report,
        Err(e) => return failure(&s, &e, BACK),
    };
    let missing = lacks(&s, REQUEUE);
    let n = report.requeued.len();
    ok(
        "Retry gate",
        &s,
        html! {
            h1 { "Retry gate: what a scan would do now" }
            (policy_line(&report))
            (report_tables(&report))
            @if n > 0 {
                form #retry-run method="post" action=(BACK)
                    data-confirm=(format!("Requeue the {n} task(s) listed as would-be requeued, \
                                           each under the lease shown?")) {
                    (csrf_field(&s))
                    @for q in &report.requeued {
                        input type="hidden" name="row" value=(format!("{}:{}", q.task_id, q.lease_id));
                    }
                    @match missing {
                        Some(cap) => {
                            button disabled title=(format!("needs {cap}")) { "Requeue the " (n) " listed" }
                            " " span.needs { "needs " (cap) }
                        }
                        None => button { "Requeue the " (n) " listed" },
                    }
                }
                p.hint { "Only the tasks listed are requeued, each under the lease shown: a task \
                    leased since, or stale since, is left alone." }
            }
        },
    )
}

/// Runs the gate on the rows the preview's form carries (`row`: `<task id>:<lease id>`).
pub async fn run(
    state: State,
    req: HttpRequest,
    body: web::Form<Vec<(String, String)>>,
) -> HttpResponse {
    let pairs = body.into_inner();
    let s = match form_session(&req, &state, &pairs) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let listed: Vec<(Uuid, Uuid)> = pairs
        .iter()
        .filter(|(k, _)| k == "row")
        .filter_map(|(_, v)| {
            let (task, lease) = v.split_once(':')?;
            Some((Uuid::parse_str(task).ok()?, Uuid::parse_str(lease).ok()?))
        })
        .take(1000)
        .collect();
    if listed.is_empty() {
        let says = "The form listed no task: nothing was done. Look at the preview again.";
        let title = "Nothing listed";
        return super::layout::notice(&s, StatusCode::BAD_REQUEST, title, says, BACK);
    }
    let by = Author::from(&s.caller);
    let report = match state
        .mailbox
        .retry_listed(by, &state.scheduler_policy, &listed)
        .await
    {
        Ok(done) => done.value,
        Err(e) => return failure(&s, &e, BACK),
    };
    let mut rows = Vec::with_capacity(listed.len());
    for (task, lease) in &listed {
        let line = if report.requeued.iter().any(|q| q.task_id == *task) {
            (
                Tone::Good,
                "requeued by the retry gate, under the lease shown".to_owned(),
            )
        } else {
            let reason = report
                .skipped
                .iter()
                .find(|k| k.task_id == *task)
                .map_or(SkipReason::NotInFlight, |k| k.reason);
            match reason {
                SkipReason::NotInFlight => match already_done(&state, &s, *task, *lease).await {
                    Some(says) => (Tone::Good, says),
                    None => (
                        Tone::Hint,
                        "not requeued: its lease changed since the preview (answered, requeued \
                         or leased again)"
                            .to_owned(),
                    ),
                },
                other => (Tone::Hint, format!("not requeued: {}", other.as_str())),
            }
        };
        rows.push((*task, line.0, line.1));
    }
    let done = rows.iter().filter(|(_, t, _)| *t == Tone::Good).count();
    let outcome = flash::Report {
        title: format!("Retry gate: {done} of {} listed requeued", listed.len()),
        status: StatusCode::OK,
        back: BACK.to_owned(),
        says: vec![
            "Only the tasks the preview listed were considered, each under the lease it showed."
                .to_owned(),
        ],
        table: "requeued",
        rows,
    };
    flash::redirect(&req, &state, &s, &outcome)
}

fn policy_line(report: &RetryReport) -> Markup {
    html! {
        p { "Policy: leases idle at least " (report.policy.min_lease_age_ms) " ms, at most "
            (report.policy.max_attempts) " attempts, at most " (report.policy.max_requeues)
            " requeues per scan. Only tasks declared idempotent with a key are ever requeued." }
    }
}

fn report_tables(r: &RetryReport) -> Markup {
    html! {
        h2 { "Would be requeued (" (r.requeued.len()) " of " (r.considered) " considered)" }
        table #requeued {
            tr { th { "task" } th { "attempt" } th { "key" } }
            @for q in &r.requeued {
                tr {
                    td.mono { a href=(format!("/dashboard/tasks/{}", q.task_id)) { (q.task_id) } }
                    td { (q.attempt) }
                    td.mono { (q.idempotency_key) }
                }
            }
        }
        h2 { "Skipped, and why" }
        table #skipped {
            tr { th { "task" } th { "reason" } th { "attempt" } }
            @for k in &r.skipped {
                tr {
                    td.mono { a href=(format!("/dashboard/tasks/{}", k.task_id)) { (k.task_id) } }
                    td { (k.reason.as_str()) }
                    td { (k.attempt) }
                }
            }
        }
    }
}
