//! The audit feed, newest first, a page at a time: filtered by kind (a menu of the kinds the
//! mailbox writes) and by time, the capability checks that passed hidden unless asked for (a
//! refused one always shows). Each row reads as a sentence (`events.rs`).
//!
//! A page costs the same on any number of rows: a kind with its own index reads its own rows,
//! any other page (every kind, or the capability checks) looks through [`AUDIT_PAGE_SCAN`]
//! rows of the feed at most; one whose filters keep few of them says that it stopped there,
//! and its "Older rows" link goes on from where it stopped.

use actix_web::{HttpRequest, HttpResponse};
use maud::{html, Markup};
use serde::{de::Error as _, Deserialize, Deserializer};

use super::events;
use super::layout::{ok, query_of};
use super::refusal::{failure, read_query};
use super::session::session;
use crate::http::state::State;
use crate::mailbox::admin::{AuditFilter, AuditPage, AuditPageRequest, AUDIT_PAGE_SCAN};
use crate::mailbox::audit::kind;
use crate::mailbox::now_ms;

/// Rows on a page.
const PAGE: i64 = 200;

/// The choices of the time filter: minutes (`0`: any time), and what they are called.
const TIMES: [(i64, &str); 4] = [
    (0, "any time"),
    (15, "last 15 minutes"),
    (60, "last hour"),
    (1440, "last day"),
];

#[derive(Deserialize)]
pub struct Query {
    /// One of [`kind::ALL`]; blank for every kind.
    #[serde(default, deserialize_with = "known_kind")]
    kind: Option<String>,
    /// Only the last this many minutes.
    minutes: Option<i64>,
    /// Show the capability checks that passed.
    #[serde(default)]
    passing: bool,
    /// Only rows older than this one (the previous page's cursor).
    before: Option<i64>,
}

/// A kind the menu offers, or none; any other value is refused as the address's bad value.
fn known_kind<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Option::<String>::deserialize(d)?.filter(|k| !k.is_empty()) {
        Some(k) if !kind::ALL.contains(&k.as_str()) => {
            Err(D::Error::custom(format!("{k:?} is not an audit kind")))
        }
        k => Ok(k),
    }
}

impl Query {
    /// This page's address with `before` (none: the newest page).
    fn address(&self, before: Option<i64>) -> String {
        let minutes = self.minutes.filter(|m| *m > 0).map(|m| m.to_string());
        let passing = self.passing.then(|| "true".to_owned());
        let before = before.map(|b| b.to_string());
        let pairs = [
            ("kind", &self.kind),
            ("minutes", &minutes),
            ("passing", &passing),
            ("before", &before),
        ];
        format!("/dashboard/audit?{}", query_of(&pairs))
    }
}

pub async fn feed(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let q: Query = match read_query(&s, &req, "/dashboard/audit") {
        Ok(q) => q,
        Err(page) => return *page,
    };
    let minutes = q.minutes.filter(|m| *m > 0);
    let request = AuditPageRequest {
        filter: AuditFilter {
            limit: PAGE,
            since_ms: minutes.map(|m| now_ms().saturating_sub(m.saturating_mul(60_000))),
            kind: q.kind.clone(),
        },
        before: q.before,
        passed_checks: q.passing,
    };
    let page = match state.mailbox.audit_page(&s.caller, &request).await {
        Ok(page) => page,
        Err(e) => return failure(&s, &e, "/dashboard/audit"),
    };
    let now = now_ms().max(0) as u64;
    ok(
        "Audit",
        &s,
        html! {
            h1 { "Audit feed" }
            (filters(&q, minutes))
            @if !q.passing {
                p.hint #passing-hidden { "Capability checks that passed are hidden; refused ones are shown." }
            }
            table.events #audit {
                (events::header())
                @for (_, e) in &page.events { (events::row(e, now)) }
            }
            @if page.events.is_empty() { p.hint { "No audit row matches." } }
            (pager(&q, &page))
        },
    )
}

/// The filters: the kind menu, the time menu, the passed checks' box.
fn filters(q: &Query, minutes: Option<i64>) -> Markup {
    html! {
        form.filters #audit-filters method="get" action="/dashboard/audit" {
            label { "kind" select name="kind" {
                option value="" { "all kinds" }
                @for slug in kind::ALL {
                    option value=(slug) selected[q.kind.as_deref() == Some(slug)] {
                        (events::label(slug)) " (" (slug) ")"
                    }
                }
            } }
            label { "time" select name="minutes" {
                @for (m, label) in TIMES {
                    option value=(m) selected[minutes.unwrap_or(0) == m] { (label) }
                }
            } }
            label.check {
                input type="checkbox" name="passing" value="true" checked[q.passing];
                "show passing capability checks"
            }
            button.quiet { "Filter" }
        }
    }
}

/// The way to older rows (and back to the newest), and where a page that stopped early
/// stopped.
fn pager(q: &Query, page: &AuditPage) -> Markup {
    let stopped = page.stopped_early(PAGE);
    html! {
        @if stopped {
            p.hint #scan-stopped {
                "This page looked through " (thousands(AUDIT_PAGE_SCAN)) " rows of the feed and "
                "stopped there: older rows may match too."
            }
        }
        nav.pager #audit-pager data-scan=(AUDIT_PAGE_SCAN) {
            @if q.before.is_some() {
                a #newest href=(q.address(None)) { "Newest rows" }
            }
            @if let Some(older) = page.older {
                a #older href=(q.address(Some(older))) {
                    @if stopped { "Look through older rows" } @else { "Older rows" }
                }
            }
        }
    }
}

/// `20000` as `20,000`.
fn thousands(n: i64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && digits.len().saturating_sub(i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}
