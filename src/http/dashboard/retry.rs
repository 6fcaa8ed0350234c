//! The retry gate: the configured policy as a dry run (what would be requeued, and why every
//! other stale task is skipped), then, after one more confirmation, the same scan enabled.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use maud::{html, Markup};

use super::flash;
use super::layout::{csrf_field, ok};
use super::session::{check_csrf, session, CsrfForm};
use crate::http::state::State;
use crate::mailbox::retry::{RetryReport, ScanKind};
use crate::mailbox::Writer;

pub async fn preview(state: State, req: HttpRequest) -> HttpResponse {
    scan(state, req, None).await
}

pub async fn run(state: State, req: HttpRequest, form: web::Form<CsrfForm>) -> HttpResponse {
    scan(state, req, Some(form.into_inner())).await
}

/// A dry run (`enable` `None`), or the enabled scan a confirmed form asks for.
async fn scan(state: State, req: HttpRequest, enable: Option<CsrfForm>) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let mut policy = state.scheduler_policy.clone();
    policy.enabled = enable.is_some();
    if let Some(form) = &enable {
        if let Err(refused) = check_csrf(&s, form.csrf.as_deref()) {
            return *refused;
        }
    }
    let mailbox = &state.mailbox;
    let report = if policy.enabled {
        mailbox
            .retry_stale(Writer::from(&s.caller), &policy, ScanKind::Manual)
            .await
            .map(|d| d.value)
    } else {
        mailbox.preview_retry(&s.caller, &policy).await
    };
    let report = match report {
        Ok(report) => report,
        Err(e) => return super::failure(&s, &e, "/dashboard/retry"),
    };
    let policy_line = html! {
        p { "Policy: leases idle at least " (report.policy.min_lease_age_ms) " ms, at most "
            (report.policy.max_attempts) " attempts, at most " (report.policy.max_requeues)
            " requeues per scan. Only tasks declared idempotent with a key are ever requeued." }
    };
    if policy.enabled {
        // The scan ran: its outcome is shown by the page it redirects to, so a refresh of that
        // page does not run it again.
        let body = html! { (policy_line) (report_tables(&report, true)) };
        let brief = || {
            html! { p { (report.requeued.len()) " requeued, " (report.skipped.len())
            " skipped, of " (report.considered) " considered: the audit feed lists them." } }
        };
        let title = ("Retry gate: scan run", StatusCode::OK);
        return flash::redirect(&req, &s, title, body, brief, "/dashboard/retry");
    }
    ok(
        "Retry gate",
        &s,
        html! {
            h1 { "Retry gate: what a scan would do now" }
            (policy_line)
            (report_tables(&report, false))
            @if !report.requeued.is_empty() {
                form method="post" action="/dashboard/retry"
                    data-confirm=(format!("Requeue the {} task(s) listed as would-be requeued?", report.requeued.len())) {
                    (csrf_field(&s))
                    button { "Run the scan enabled" }
                }
            }
        },
    )
}

fn report_tables(r: &RetryReport, enabled: bool) -> Markup {
    html! {
        h2 { @if enabled { "Requeued" } @else { "Would be requeued" } " (" (r.requeued.len()) " of " (r.considered) " considered)" }
        table #requeued {
            tr { th { "task" } th { "attempt" } th { "key" } }
            @for q in &r.requeued {
                tr { td.mono { a href=(format!("/dashboard/tasks/{}", q.task_id)) { (q.task_id) } } td { (q.attempt) } td.mono { (q.idempotency_key) } }
            }
        }
        h2 { "Skipped, and why" }
        table #skipped {
            tr { th { "task" } th { "reason" } th { "attempt" } }
            @for k in &r.skipped {
                tr { td.mono { a href=(format!("/dashboard/tasks/{}", k.task_id)) { (k.task_id) } } td { (k.reason.as_str()) } td { (k.attempt) } }
            }
        }
        @if r.coalesced { p.note { "Another scan was running: this one did nothing." } }
    }
}
