//! The overview: counts by state, the deepest queues, the oldest queued task, stale leases by
//! age, pending results, and the throughput and depth of the deepest queues over the last half
//! hour (drawn by `chart.rs`), refreshed every 5 s.

use actix_web::{HttpRequest, HttpResponse};
use maud::{html, Markup};

use super::chart;
use super::layout::{age, ok, queued_in, respond, when};
use super::refusal::failure;
use super::session::session;
use crate::http::state::State;
use crate::mailbox::overview::{Overview, CHARTED_QUEUES, FINISHED_COUNT_CAP, LEASE_AGE_BOUNDS_MS};

pub async fn overview(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    match state.mailbox.overview(&s.caller).await {
        Ok(o) => ok(
            "Overview",
            &s,
            html! {
                h1 { "Overview" }
                div #live data-live="/dashboard/live" { (fragment(&o)) }
            },
        ),
        Err(e) => failure(&s, &e, "/dashboard"),
    }
}

/// The live part of the overview, alone.
pub async fn live(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    match state.mailbox.overview(&s.caller).await {
        Ok(o) => respond(actix_web::http::StatusCode::OK, fragment(&o)),
        Err(e) => failure(&s, &e, "/dashboard"),
    }
}

fn fragment(o: &Overview) -> Markup {
    let [b1, b5, b30] = LEASE_AGE_BOUNDS_MS.map(|b| b / 60_000);
    // Each card opens the leases it counts: idle at least its lower bound and less than the
    // next card's.
    let [l1, l5, l30] = LEASE_AGE_BOUNDS_MS;
    let buckets = [
        (format!("under {b1} min"), 0, format!("max_age_ms={l1}")),
        (
            format!("{b1}–{b5} min"),
            l1,
            format!("min_age_ms={l1}&max_age_ms={l5}"),
        ),
        (
            format!("{b5}–{b30} min"),
            l5,
            format!("min_age_ms={l5}&max_age_ms={l30}"),
        ),
        (
            format!("{b30} min and more"),
            l30,
            format!("min_age_ms={l30}"),
        ),
    ];
    html! {
        div.cards {
            a.card href="/dashboard/tasks?state=queued" { div.n #count-queued { (o.queued) } div.label { "queued" } }
            a.card href="/dashboard/leases" { div.n #count-in-flight { (o.in_flight) } div.label { "in flight" } }
            a.card href="/dashboard/tasks?state=result_pending" {
                div.n #count-result-pending { (o.result_pending) } div.label { "results pending" }
            }
            a.card href="/dashboard/tasks?state=resolved" {
                div.n #count-finished {
                    @if o.finished > FINISHED_COUNT_CAP { (FINISHED_COUNT_CAP) "+" } @else { (o.finished) }
                }
                div.label { "resolved or canceled" }
            }
            div.card.warn[o.oldest_queued_age_ms.is_some_and(|a| a > 60_000)] {
                div.n { (o.oldest_queued_age_ms.map_or("—".to_owned(), age)) }
                div.label { "oldest queued task" }
            }
        }
        h2 { "Leases by time since their last heartbeat" }
        div.cards {
            @for ((label, min_age, query), n) in buckets.iter().zip(o.lease_ages) {
                a.card.warn[n > 0 && *min_age >= LEASE_AGE_BOUNDS_MS[1]]
                    href=(format!("/dashboard/leases?{query}")) {
                    div.n { (n) } div.label { (label) }
                }
            }
        }
        h2 { "Throughput of this instance, per minute" }
        (chart::throughput(&o.throughput))
        h2 { "Deepest queues" }
        @if o.depth.is_empty() {
            p.hint { "Nothing is queued." }
        } @else {
            (chart::depth(o.depth.get(..CHARTED_QUEUES).unwrap_or(&o.depth), &o.depth_over_time))
            p.hint { "Queued tasks per minute, as this instance read them once a minute since it started." }
            table #depth {
                tr { th { "recipient" } th { "queued" } }
                @for (recipient, n) in &o.depth {
                    tr {
                        td { a href=(queued_in(recipient)) { (recipient) } }
                        td { (n) }
                    }
                }
            }
        }
        p.hint { "As of " (when(o.at_ms)) " UTC; refreshed every 5 s." }
    }
}
