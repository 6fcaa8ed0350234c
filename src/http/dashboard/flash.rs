//! Post/redirect/get: an action's outcome is not the answer to its POST. The POST answers 303 to
//! `/dashboard/done`, and the outcome travels there in a short-lived cookie (HttpOnly,
//! SameSite=Strict), signed with a secret of the server's own (generated once per database, so
//! every instance recognises it) and bound to the session. That page shows it once, escaped as
//! every value on a page is, and forgets it, so refreshing an outcome runs nothing again.
//!
//! The cookie carries data, not markup: a title, sentences, and one line per row acted on (the
//! task's id as 16 bytes and the index of what is said of it), so that the outcome of a whole
//! page of rows lists every row.

use actix_web::cookie::time::Duration as CookieAge;
use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use maud::html;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use uuid::Uuid;

use super::layout::{notice, outcome_page, SignedIn};
use super::session::{removal, see_other, session};
use crate::http::state::{AppState, State};

const COOKIE: &str = "a2a_dashboard_outcome";
pub const PATH: &str = "/dashboard/done";
/// The most the cookie's value may weigh (browsers keep a cookie of up to 4 KiB).
const BUDGET: usize = 3800;

/// How a row ended, as the page colours it.
#[derive(Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Tone {
    Good,
    Hint,
    Bad,
}

impl Tone {
    fn class(self) -> &'static str {
        match self {
            Tone::Good => "good",
            Tone::Hint => "hint",
            Tone::Bad => "bad",
        }
    }
}

/// An action's outcome: what the page says, then one line per row acted on.
pub struct Report {
    pub title: String,
    pub status: StatusCode,
    pub back: String,
    pub says: Vec<String>,
    /// The table's id on the page.
    pub table: &'static str,
    pub rows: Vec<(Uuid, Tone, String)>,
}

/// The outcome as the cookie carries it.
#[derive(Serialize, Deserialize)]
struct Wire {
    t: String,
    s: u16,
    b: String,
    p: Vec<String>,
    i: String,
    /// What is said of rows, each once.
    m: Vec<(Tone, String)>,
    /// The rows: 16 bytes of task id and one byte of `m`'s index each, base64.
    r: String,
    /// Rows left out for want of room.
    x: usize,
}

impl Report {
    fn wire(&self, keep: usize) -> Wire {
        let mut said: Vec<(Tone, String)> = Vec::new();
        let mut rows = Vec::with_capacity(keep.saturating_mul(17));
        for (id, tone, text) in self.rows.iter().take(keep) {
            let at = match said.iter().position(|(t, s)| t == tone && s == text) {
                Some(at) => at,
                None => {
                    said.push((*tone, text.clone()));
                    said.len().saturating_sub(1)
                }
            };
            rows.extend_from_slice(id.as_bytes());
            rows.push(u8::try_from(at).unwrap_or(u8::MAX));
        }
        Wire {
            t: self.title.clone(),
            s: self.status.as_u16(),
            b: self.back.clone(),
            p: self.says.clone(),
            i: self.table.to_owned(),
            m: said,
            r: B64.encode(rows),
            x: self.rows.len().saturating_sub(keep),
        }
    }
}

impl Wire {
    fn open(self) -> Option<Report> {
        let bytes = B64.decode(self.r).ok()?;
        let rows = bytes
            .chunks(17)
            .map(|c| {
                let (id, at) = c.split_at_checked(16)?;
                let (tone, text) = self.m.get(usize::from(*at.first()?))?;
                Some((Uuid::from_slice(id).ok()?, *tone, text.clone()))
            })
            .collect::<Option<Vec<_>>>()?;
        let mut says = self.p;
        if self.x > 0 {
            says.push(format!(
                "{} more rows did not fit on this page: the audit feed lists them.",
                self.x
            ));
        }
        Some(Report {
            title: self.t,
            status: StatusCode::from_u16(self.s).ok()?,
            back: self.b,
            says,
            table: if self.i == "outcomes" {
                "outcomes"
            } else {
                "requeued"
            },
            rows,
        })
    }
}

/// The signature of `payload` for the session whose CSRF token is `csrf`.
fn mac(state: &AppState, csrf: &str, payload: &str) -> String {
    let key = state.dashboard_outcomes.as_bytes();
    let Ok(mut m) = Hmac::<Sha256>::new_from_slice(key) else {
        return String::new();
    };
    for part in ["a2a-dashboard-outcome", csrf, payload] {
        m.update(part.as_bytes());
        m.update(&[0]);
    }
    let digest = m.finalize().into_bytes();
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// Answers an action's POST: 303 to the page that shows its outcome once.
pub fn redirect(req: &HttpRequest, state: &AppState, s: &SignedIn, o: &Report) -> HttpResponse {
    let seal = |keep: usize| {
        let payload = serde_json::to_string(&o.wire(keep)).unwrap_or_default();
        format!("{}.{}", B64.encode(&payload), mac(state, &s.csrf, &payload))
    };
    let mut keep = o.rows.len();
    let mut value = seal(keep);
    // A row costs about 23 characters: leave out as many as the excess needs.
    while value.len() > BUDGET && keep > 0 {
        keep = keep.saturating_sub((value.len().saturating_sub(BUDGET) / 23).saturating_add(1));
        value = seal(keep);
    }
    let cookie = Cookie::build(COOKIE, value)
        .path(PATH)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(req.connection_info().scheme() == "https")
        .max_age(CookieAge::seconds(300))
        .finish();
    let mut res = see_other(PATH);
    let _ = res.add_cookie(&cookie);
    res
}

/// The outcome the cookie carries, if the server signed it for this session.
fn open(state: &AppState, s: &SignedIn, value: &str) -> Option<Report> {
    let (sealed, given) = value.split_once('.')?;
    let payload = String::from_utf8(B64.decode(sealed).ok()?).ok()?;
    let expected = mac(state, &s.csrf, &payload);
    if expected.is_empty() || !super::session::same(Some(given), &expected) {
        return None;
    }
    serde_json::from_str::<Wire>(&payload).ok()?.open()
}

/// `GET /dashboard/done`: the last action's outcome, once.
pub async fn done(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let shown = req.cookie(COOKIE).and_then(|c| open(&state, &s, c.value()));
    let mut res = match shown {
        Some(o) => {
            let body = html! {
                @for p in &o.says { p { (p) } }
                @if !o.rows.is_empty() {
                    table id=(o.table) {
                        tr { th { "task" } th { "outcome" } }
                        @for (id, tone, text) in &o.rows {
                            tr data-task=(id) {
                                td { a.mono href=(format!("/dashboard/tasks/{id}")) { (id) } }
                                td class=(tone.class()) { (text) }
                            }
                        }
                    }
                }
            };
            outcome_page(&s, &o.title, o.status, body, &o.back)
        }
        None => notice(
            &s,
            StatusCode::OK,
            "Nothing more to show",
            "An action's outcome is shown once: showing this page again runs nothing again. \
             The audit feed lists what was done.",
            "/dashboard/audit",
        ),
    };
    let _ = res.add_cookie(&removal(COOKIE, PATH));
    res
}
