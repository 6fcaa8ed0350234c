//! The audit feed, newest first, filtered by kind and by time.

use actix_web::{HttpRequest, HttpResponse};
use maud::html;
use serde::Deserialize;

use super::layout::{ok, when};
use super::session::session;
use crate::http::state::State;
use crate::mailbox::admin::AuditFilter;
use crate::mailbox::now_ms;

#[derive(Deserialize)]
pub struct Query {
    kind: Option<String>,
    /// Only the last this many minutes.
    minutes: Option<i64>,
}

pub async fn feed(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let q: Query = match super::read_query(&s, &req, "/dashboard/audit") {
        Ok(q) => q,
        Err(page) => return *page,
    };
    let kind = q.kind.clone().filter(|k| !k.is_empty());
    let minutes = q.minutes.filter(|m| *m > 0);
    let f = AuditFilter {
        limit: 200,
        since_ms: minutes.map(|m| now_ms() - m * 60_000),
        kind: kind.clone(),
    };
    let events = match state.mailbox.audit_feed(&s.caller, &f).await {
        Ok(feed) => feed.events,
        Err(e) => return super::failure(&s, &e, "/dashboard/audit"),
    };
    ok(
        "Audit",
        &s,
        html! {
            h1 { "Audit feed" }
            form.filters method="get" {
                label { "kind" input type="text" name="kind" placeholder="e.g. a2a_repair_applied" value=[kind.as_deref()]; }
                label { "time" select name="minutes" {
                    @for (m, label) in [(0, "all"), (15, "last 15 minutes"), (60, "last hour"), (1440, "last day")] {
                        option value=(m) selected[minutes.unwrap_or(0) == m] { (label) }
                    }
                } }
                button.quiet { "Filter" }
            }
            table #audit {
                tr { th { "time (UTC)" } th { "issuer" } th { "kind" } th { "details" } }
                @for e in &events {
                    tr {
                        td { (when(e.timestamp_ms)) }
                        td { (e.issuer) }
                        td { (e.kind.get("type").and_then(|t| t.as_str()).unwrap_or("?")) }
                        td.mono { (e.kind.to_string()) }
                    }
                }
            }
            @if events.is_empty() { p.hint { "No audit row matches." } }
        },
    )
}
