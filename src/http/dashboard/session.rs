//! Signing in: an operator pastes a token once; the server checks it and keeps it in an
//! HttpOnly, SameSite=Strict cookie that expires with the token. Every state-changing form
//! carries a CSRF token derived from the cookie, which a page of another origin cannot read.

use actix_web::cookie::{time::Duration as CookieAge, Cookie, SameSite};
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use maud::html;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::layout::{page, respond};
use crate::auth::{now_secs, Caller};
use crate::http::{AppState, State};

pub const COOKIE: &str = "a2a_dashboard";

/// The signed-in operator.
pub struct Session {
    pub caller: Caller,
    /// What every state-changing form of this session must carry.
    pub csrf: String,
}

/// The session of a request, or the page to answer instead: the sign-in page without a valid
/// token, a refusal for a token without `a2a.operator`.
pub fn session(req: &HttpRequest, state: &AppState) -> Result<Session, Box<HttpResponse>> {
    let Some(cookie) = req.cookie(COOKIE) else {
        return Err(Box::new(see_other("/dashboard/login")));
    };
    let Ok((caller, _)) = state.verifier.verify_expiring(cookie.value()) else {
        return Err(Box::new(see_other("/dashboard/login?expired=1")));
    };
    if !caller.is_operator() {
        return Err(Box::new(refusal(&caller)));
    }
    Ok(Session {
        csrf: csrf_of(cookie.value()),
        caller,
    })
}

/// The CSRF token of a session: a digest of its token.
fn csrf_of(token: &str) -> String {
    let digest = Sha256::digest(format!("a2a-dashboard-csrf\u{0}{token}").as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// Refuses a state-changing request whose form does not carry the session's CSRF token.
pub fn check_csrf(s: &Session, given: Option<&str>) -> Result<(), Box<HttpResponse>> {
    if given == Some(s.csrf.as_str()) {
        return Ok(());
    }
    Err(Box::new(respond(
        StatusCode::FORBIDDEN,
        page(
            "Refused",
            None,
            html! {
                h1 { "Refused: the form's CSRF token is missing or wrong" }
                p { "Nothing was changed. Reload the page you came from and try again." }
            },
        ),
    )))
}

pub fn see_other(to: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, to))
        .finish()
}

fn refusal(caller: &Caller) -> HttpResponse {
    respond(
        StatusCode::FORBIDDEN,
        page(
            "Not an operator",
            None,
            html! {
                h1 { "This token cannot open the dashboard" }
                p { "The token of " strong { (caller.sub.as_str()) } " does not grant "
                    code { "a2a.operator" } ". The dashboard is for operators: sign in with a token that holds it." }
                form method="post" action="/dashboard/logout-refused" { button { "Sign in with another token" } }
            },
        ),
    )
}

#[derive(Deserialize)]
pub struct LoginQuery {
    expired: Option<String>,
}

pub async fn login_page(q: web::Query<LoginQuery>) -> HttpResponse {
    respond(
        StatusCode::OK,
        login(
            q.expired
                .is_some()
                .then_some("Your session ended: sign in again."),
        ),
    )
}

fn login(note: Option<&str>) -> maud::Markup {
    page(
        "Sign in",
        None,
        html! {
            h1 { "a2a-mailbox operator dashboard" }
            @if let Some(note) = note { p.note { (note) } }
            form.login method="post" action="/dashboard/login" {
                label for="token" { "Operator token (a JWT holding a2a.operator)" }
                textarea #token name="token" rows="4" required autocomplete="off" {}
                button type="submit" { "Sign in" }
            }
            p.hint { "The token is kept in an HttpOnly cookie until it expires or you sign out." }
        },
    )
}

#[derive(Deserialize)]
pub struct LoginForm {
    token: String,
}

pub async fn sign_in(state: State, req: HttpRequest, form: web::Form<LoginForm>) -> HttpResponse {
    let token = form.token.trim();
    let (caller, exp) = match state.verifier.verify_expiring(token) {
        Ok(ok) => ok,
        Err((_, e)) => {
            return respond(StatusCode::UNAUTHORIZED, login(Some(&e.message)));
        }
    };
    if !caller.is_operator() {
        return refusal(&caller);
    }
    let age = exp.saturating_sub(now_secs()).min(i64::MAX as u64) as i64;
    let cookie = Cookie::build(COOKIE, token.to_owned())
        .path("/dashboard")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(req.connection_info().scheme() == "https")
        .max_age(CookieAge::seconds(age))
        .finish();
    let mut res = see_other("/dashboard");
    let _ = res.add_cookie(&cookie);
    res
}

#[derive(Deserialize)]
pub struct CsrfForm {
    pub csrf: Option<String>,
}

pub async fn sign_out(state: State, req: HttpRequest, form: web::Form<CsrfForm>) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    if let Err(refused) = check_csrf(&s, form.csrf.as_deref()) {
        return *refused;
    }
    forget()
}

/// Signing out from the refusal page: there is no operator session to protect.
pub async fn sign_out_refused() -> HttpResponse {
    forget()
}

fn forget() -> HttpResponse {
    let mut res = see_other("/dashboard/login");
    let mut gone = Cookie::build(COOKIE, "").path("/dashboard").finish();
    gone.make_removal();
    let _ = res.add_cookie(&gone);
    res
}
