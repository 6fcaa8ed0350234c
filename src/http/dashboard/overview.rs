//! The overview: counts by state, the deepest queues, the oldest queued task, stale leases by
//! age, pending results and the throughput of the last half hour, refreshed every 5 s.

use actix_web::{HttpRequest, HttpResponse};
use maud::{html, Markup};

use super::layout::{age, ok, respond, when};
use super::session::session;
use crate::http::state::State;
use crate::mailbox::overview::{Overview, FINISHED_COUNT_CAP, LEASE_AGE_BOUNDS_MS};
use crate::metrics::Minute;

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
        Err(e) => super::failure(&s, &e, "/dashboard"),
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
        Err(e) => super::failure(&s, &e, "/dashboard"),
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
            a.card href="/dashboard/tasks?state=result_pending" { div.n #count-result-pending { (o.result_pending) } div.label { "results pending" } }
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
        (chart(&o.throughput))
        h2 { "Deepest queues" }
        @if o.depth.is_empty() {
            p.hint { "Nothing is queued." }
        } @else {
            table #depth {
                tr { th { "recipient" } th { "queued" } }
                @for (recipient, n) in &o.depth {
                    tr {
                        td { a href=(format!("/dashboard/tasks?recipient={recipient}&state=queued")) { (recipient) } }
                        td { (n) }
                    }
                }
            }
        }
        p.hint { "As of " (when(o.at_ms)) " UTC; refreshed every 5 s." }
    }
}

/// Sends, leases and results per minute as three lines, drawn by the server.
fn chart(minutes: &[Minute]) -> Markup {
    const W: f64 = 720.0;
    const H: f64 = 160.0;
    let top = minutes
        .iter()
        .map(|m| m.sent.max(m.leased).max(m.answered))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let step = W / (minutes.len().max(2) - 1) as f64;
    let line = |pick: fn(&Minute) -> u64| -> String {
        minutes
            .iter()
            .enumerate()
            .map(|(i, m)| {
                format!(
                    "{:.1},{:.1}",
                    i as f64 * step,
                    H - pick(m) as f64 / top * (H - 10.0)
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let total = |pick: fn(&Minute) -> u64| minutes.iter().map(pick).sum::<u64>();
    html! {
        div.chart {
            svg #throughput viewBox=(format!("-40 -5 {} {}", W + 50.0, H + 25.0)) width="100%" height="200"
                role="img" aria-label="sends, leases and results per minute over the last 30 minutes" {
                line x1="0" y1=(H) x2=(W) y2=(H) stroke="#94a3b8" {}
                text x="-8" y="10" text-anchor="end" font-size="11" fill="#5b6575" { (top as u64) }
                text x="-8" y=(H) text-anchor="end" font-size="11" fill="#5b6575" { "0" }
                text x="0" y=(H + 18.0) font-size="11" fill="#5b6575" { "30 min ago" }
                text x=(W) y=(H + 18.0) text-anchor="end" font-size="11" fill="#5b6575" { "now" }
                polyline points=(line(|m| m.sent)) fill="none" stroke="#2456c7" stroke-width="2" {}
                polyline points=(line(|m| m.leased)) fill="none" stroke="#b45309" stroke-width="2" {}
                polyline points=(line(|m| m.answered)) fill="none" stroke="#17803d" stroke-width="2" {}
            }
            div.legend {
                span { span.sw.sent {} "sent (" (total(|m| m.sent)) ")" }
                span { span.sw.leased {} "leased (" (total(|m| m.leased)) ")" }
                span { span.sw.answered {} "answered (" (total(|m| m.answered)) ")" }
            }
        }
    }
}
