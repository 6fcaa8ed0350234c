//! Stale leases: the in-flight tasks, filtered (idle time, lessee, recipient, kind, declared
//! safety), sorted, a keyset page at a time; one line per lease, and what an operator does about
//! them: requeue (stating the duplicate risk the task allows), force an error, or cancel; one row
//! or many, each with a reason for its audit row. The rows and the bulk bar are `lease_rows.rs`;
//! every action is fenced by the lease the page showed (see `act.rs`).

use actix_web::{HttpRequest, HttpResponse};
use maud::{html, Markup};
use serde::Deserialize;

use super::layout::{age, encode, given, ok, query_of};
use super::lease_rows::lease_table;
use super::refusal::{failure, read_query};
use super::session::session;
use crate::http::state::State;
use crate::mailbox::in_flight::{LeaseOrder, LeaseRequest};

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

/// Rows a page shows.
const PAGE: i64 = 100;

/// The orders offered: the address's word, the order, what the menu says.
const ORDERS: [(&str, LeaseOrder, &str); 5] = [
    ("idle", LeaseOrder::Idle, "longest idle first"),
    (
        "recent",
        LeaseOrder::Recent,
        "most recently heard from first",
    ),
    ("attempts", LeaseOrder::Attempts, "most attempts first"),
    ("lessee", LeaseOrder::Lessee, "lessee, A to Z"),
    ("recipient", LeaseOrder::Recipient, "recipient, A to Z"),
];

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Safety {
    Any,
    Idempotent,
    Unsafe,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Sort {
    Idle,
    Recent,
    Attempts,
    Lessee,
    Recipient,
}

#[derive(Deserialize)]
pub struct Filter {
    min_age_ms: Option<i64>,
    /// Only leases idle for less than this (a card of the overview opens its own bucket).
    max_age_ms: Option<i64>,
    lessee: Option<String>,
    recipient: Option<String>,
    kind: Option<String>,
    safety: Option<Safety>,
    sort: Option<Sort>,
    /// Where the page starts (the previous page's "next").
    after: Option<String>,
}

impl Filter {
    /// The order asked for (longest idle first unless said otherwise).
    fn order(&self) -> (&'static str, LeaseOrder, &'static str) {
        let [first, ..] = ORDERS;
        ORDERS
            .get(self.sort.map_or(0, |s| s as usize))
            .copied()
            .unwrap_or(first)
    }

    fn request(&self) -> LeaseRequest {
        let text = |v: &Option<String>| given(v).map(str::to_owned);
        LeaseRequest {
            lessee: text(&self.lessee),
            recipient: text(&self.recipient),
            task_kind: text(&self.kind),
            min_idle_ms: self.min_age_ms.filter(|m| *m > 0),
            max_idle_ms: self.max_age_ms,
            declared_idempotent: match self.safety {
                Some(Safety::Idempotent) => Some(true),
                Some(Safety::Unsafe) => Some(false),
                _ => None,
            },
            order: self.order().1,
            after: text(&self.after),
            limit: PAGE,
        }
    }

    /// This page's address without its cursor (the first page of the same filters).
    fn query(&self) -> String {
        let num = |v: Option<i64>| v.map(|v| v.to_string());
        let safety = match self.safety {
            Some(Safety::Idempotent) => Some("idempotent".to_owned()),
            Some(Safety::Unsafe) => Some("unsafe".to_owned()),
            _ => None,
        };
        let sort = self.sort.map(|_| self.order().0.to_owned());
        query_of(&[
            ("min_age_ms", &num(self.min_age_ms.filter(|m| *m > 0))),
            ("max_age_ms", &num(self.max_age_ms)),
            ("lessee", &self.lessee),
            ("recipient", &self.recipient),
            ("kind", &self.kind),
            ("safety", &safety),
            ("sort", &sort),
        ])
    }
}

pub async fn list(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let q: Filter = match read_query(&s, &req, "/dashboard/leases") {
        Ok(q) => q,
        Err(page) => return *page,
    };
    let page = match state.mailbox.lease_page(&s.caller, &q.request()).await {
        Ok(page) => page,
        Err(e) => return failure(&s, &e, "/dashboard/leases"),
    };
    let query = q.query();
    let first = format!("/dashboard/leases?{query}");
    let next = page.next.as_ref().map(|c| {
        let sep = if query.is_empty() { "" } else { "&" };
        format!("{first}{sep}after={}", encode(c))
    });
    ok(
        "Stale leases",
        &s,
        html! {
            h1 { "Stale leases" }
            (filters(&q))
            p.hint #matched {
                (page.matched) " leases match"
                @if q.after.is_some() { "; a later page" } @else if page.matched > 0 { "; the first page" }
                ", " (q.order().2) "."
            }
            @if page.entries.is_empty() {
                p.hint { "No lease matches these filters." }
            } @else {
                (lease_table(&s, &page.entries))
            }
            nav.pager {
                @if q.after.is_some() { a #first-page href=(first) { "← First page" } }
                @if let Some(next) = &next { a #next-page href=(next) { "Next page →" } }
            }
        },
    )
}

fn filters(q: &Filter) -> Markup {
    let min_age = q.min_age_ms.unwrap_or(0).max(0);
    let safety = q.safety.unwrap_or(Safety::Any);
    html! {
        form.filters #lease-filters method="get" {
            label { "idle at least" select name="min_age_ms" {
                @for (ms, label) in IDLE {
                    option value=(ms) selected[ms == min_age] { (label) }
                }
                @if !IDLE.iter().any(|(ms, _)| *ms == min_age) {
                    option value=(min_age) selected { (age(min_age as u64)) }
                }
            } }
            @if let Some(max) = q.max_age_ms {
                input type="hidden" name="max_age_ms" value=(max);
                span.hint { "and less than " (age(max.max(0) as u64)) " (the overview's card)" }
            }
            label { "lessee" input type="text" name="lessee" value=[given(&q.lessee)] placeholder="any agent"; }
            label {
                "recipient"
                input type="text" name="recipient" value=[given(&q.recipient)] placeholder="any agent";
            }
            label { "kind" input type="text" name="kind" value=[given(&q.kind)] placeholder="any kind"; }
            label { "duplicate safety" select name="safety" {
                option value="any" selected[safety == Safety::Any] { "any" }
                option value="idempotent" selected[safety == Safety::Idempotent] { "declared idempotent" }
                option value="unsafe" selected[safety == Safety::Unsafe] { "not declared idempotent" }
            } }
            label { "order" select name="sort" {
                @for (word, _, says) in ORDERS {
                    option value=(word) selected[word == q.order().0] { (says) }
                }
            } }
            button.quiet { "Filter" }
            a href="/dashboard/leases" { "Clear" }
        }
    }
}
