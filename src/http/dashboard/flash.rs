//! Post/redirect/get: an action's outcome is not the answer to its POST. The POST answers 303 to
//! `/dashboard/done`, and the outcome travels there in a short-lived cookie (HttpOnly,
//! SameSite=Strict, signed with the session's CSRF token). That page shows it once and forgets
//! it, so refreshing an outcome runs nothing again.

use actix_web::cookie::time::Duration as CookieAge;
use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use maud::{Markup, PreEscaped};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::layout::{notice, outcome_page, Session};
use super::session::{removal, see_other, session};
use crate::http::state::State;

const COOKIE: &str = "a2a_dashboard_outcome";
pub const PATH: &str = "/dashboard/done";
/// The most an outcome's JSON may weigh (hex-encoded in a cookie, which browsers keep up to
/// 4 KiB).
const BUDGET: usize = 1800;

fn mac(csrf: &str, payload: &str) -> String {
    let digest = Sha256::digest(format!("a2a-dashboard-outcome\u{0}{csrf}\u{0}{payload}"));
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// Answers an action's POST: 303 to the page that shows its outcome once. `body` is the whole
/// outcome; `brief`, what is shown when that is too long to carry (e.g. the rows not done).
pub fn redirect(
    req: &HttpRequest,
    s: &Session,
    (title, status): (&str, StatusCode),
    body: Markup,
    brief: impl FnOnce() -> Markup,
    back: &str,
) -> HttpResponse {
    let fits = |html: &str| json!([title, status.as_u16(), html, back]).to_string();
    let mut payload = fits(&body.into_string());
    if payload.len() > BUDGET {
        payload = fits(&brief().into_string());
    }
    if payload.len() > BUDGET {
        payload = fits("<p>The outcome is too long to show here: the audit feed lists it.</p>");
    }
    let value = format!("{}.{}", hex(&payload), mac(&s.csrf, &payload));
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

/// The outcome the cookie carries, if this session signed it.
fn open(s: &Session, value: &str) -> Option<(String, StatusCode, String, String)> {
    let (hexed, given) = value.split_once('.')?;
    let payload = unhex(hexed)?;
    if mac(&s.csrf, &payload) != given {
        return None;
    }
    let v: Value = serde_json::from_str(&payload).ok()?;
    let text = |i: usize| v.get(i)?.as_str().map(str::to_owned);
    let status = StatusCode::from_u16(v.get(1)?.as_u64()? as u16).ok()?;
    Some((text(0)?, status, text(2)?, text(3)?))
}

/// `GET /dashboard/done`: the last action's outcome, once.
pub async fn done(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let shown = req.cookie(COOKIE).and_then(|c| open(&s, c.value()));
    let mut res = match shown {
        Some((title, status, html, back)) => {
            outcome_page(&s, &title, status, PreEscaped(html), &back)
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
