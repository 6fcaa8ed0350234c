//! The page every screen shares, the headers every page is served with (a strict
//! Content-Security-Policy: scripts and styles only from the embedded assets), and the small
//! pieces of markup the screens repeat; and the signed-in operator they are shown to.

use actix_web::http::{header, StatusCode};
use actix_web::HttpResponse;
use maud::{html, Markup, DOCTYPE};

use crate::auth::{Caller, CapCheck, ScopeCtx};
use crate::domain::TaskStatus;
use crate::http::time::format_ms;

pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
    connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The capabilities of the repairs a page offers.
pub const REQUEUE: &str = "a2a.repair.requeue";
pub const FORCE_ERROR: &str = "a2a.repair.force_error";

/// What the posture `operator_accepted` says, wherever a requeue offers it.
pub const ACCEPTED: &str = "operator_accepted: I accept that it may run twice";

/// `cap`, when the session's token holds no grant of it at all: a button needing it is disabled
/// and names it. (A scoped grant is judged row by row when the action runs.)
pub fn lacks(s: &SignedIn, cap: &'static str) -> Option<&'static str> {
    (s.caller.check(cap, &ScopeCtx::default()) == CapCheck::Missing).then_some(cap)
}

/// A form's first submit button, disabled: the form's default button, which Enter in one of
/// its text fields would press, so that Enter submits nothing.
pub fn no_enter() -> Markup {
    html! { button type="submit" disabled hidden aria-hidden="true" {} }
}

/// A submit button for an action needing `missing`'s capability: disabled, naming it, when
/// the token lacks it.
pub fn needs(missing: Option<&str>) -> Markup {
    html! { @if let Some(cap) = missing { " " span.needs { "needs " (cap) } } }
}

/// The signed-in operator (`session.rs` signs them in).
pub struct SignedIn {
    pub caller: Caller,
    /// What every state-changing form of this session must carry.
    pub csrf: String,
}

/// A whole page: the navigation (with sign-out) for a signed-in operator, then `body`.
pub fn page(title: &str, session: Option<&SignedIn>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · a2a-mailbox" }
                link rel="stylesheet" href=(concat!("/dashboard/assets/app.css?v=", env!("CARGO_PKG_VERSION")));
                script src=(concat!("/dashboard/assets/app.js?v=", env!("CARGO_PKG_VERSION"))) defer {}
            }
            body {
                @if let Some(s) = session {
                    header {
                        strong.brand { "a2a-mailbox" }
                        nav {
                            a href="/dashboard" { "Overview" }
                            a href="/dashboard/leases" { "Stale leases" }
                            a href="/dashboard/retry" { "Retry gate" }
                            a href="/dashboard/tasks" { "Tasks" }
                            a href="/dashboard/audit" { "Audit" }
                        }
                        form.signout method="post" action="/dashboard/logout" {
                            (csrf_field(s))
                            span.who { (s.caller.sub.as_str()) }
                            button { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

pub fn csrf_field(s: &SignedIn) -> Markup {
    html! { input type="hidden" name="csrf" value=(s.csrf); }
}

/// An HTML answer with the dashboard's headers.
pub fn respond(status: StatusCode, markup: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .body(markup.into_string())
}

/// A page for a signed-in operator, answered 200.
pub fn ok(title: &str, s: &SignedIn, body: Markup) -> HttpResponse {
    respond(StatusCode::OK, page(title, Some(s), body))
}

/// A time as people read it, in UTC.
pub fn when(ms: u64) -> String {
    let t = format_ms(ms);
    format!("{} {}", &t[..10], &t[11..19])
}

/// A past instant as people read it (`7 min ago`), the UTC time itself on hover.
pub fn ago(ms: u64, now: u64) -> Markup {
    html! { span.ago title=(format!("{} UTC", when(ms))) { (age(now.saturating_sub(ms))) " ago" } }
}

/// A task's state, coloured by what it asks of an operator; an answered task's result status
/// beside it (an error answer is not a success).
pub fn state_badge(t: &TaskStatus) -> Markup {
    let state = t.state.as_str();
    let result = t.result.as_ref().map(|r| r.status.as_str());
    html! {
        span class=(format!("state s-{state}")) { (state) }
        @if let Some(r) = result { " " span class=(format!("result r-{r}")) { (r) } }
    }
}

/// A duration as people read it: `42 s`, `7 min`, `3 h 5 min`.
pub fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        _ => format!("{} h {} min", s / 3600, s / 60 % 60),
    }
}

/// An outcome page that says one sentence: a request that did nothing.
pub fn notice(
    s: &SignedIn,
    status: StatusCode,
    title: &str,
    says: &str,
    back: &str,
) -> HttpResponse {
    outcome_page(s, title, status, html! { p { (says) } }, back)
}

/// A refusal or failure of an action, explained on the page rather than as an error page.
pub fn outcome_page(
    s: &SignedIn,
    title: &str,
    status: StatusCode,
    body: Markup,
    back: &str,
) -> HttpResponse {
    respond(
        status,
        page(
            title,
            Some(s),
            html! {
                h1 { (title) }
                (body)
                p { a href=(back) { "Back" } }
            },
        ),
    )
}

/// A filter's value as given: `None` when absent or blank.
pub fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// A value as it goes into a page address (`?k=v&…`).
pub fn encode(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'@' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A page address's query: the pairs given, in order, the blank ones left out.
pub fn query_of(pairs: &[(&str, &Option<String>)]) -> String {
    pairs
        .iter()
        .filter_map(|(k, v)| given(v).map(|v| format!("{k}={}", encode(v))))
        .collect::<Vec<_>>()
        .join("&")
}

/// The address of the tasks queued for `recipient`.
pub(super) fn queued_in(recipient: &str) -> String {
    format!("/dashboard/tasks?recipient={recipient}&state=queued")
}
