//! Signing in: an operator pastes a token once; the server checks it and keeps it in an
//! HttpOnly, SameSite=Strict cookie that expires with the token. Every state-changing form
//! carries a CSRF token derived from the cookie, which a page of another origin cannot read.
//!
//! Signing in and out are guarded the same way, so that another site can neither sign the
//! browser in (with a token of its choosing) nor out: the sign-in form carries a random token of
//! its own, double-submitted with a pre-session cookie (HttpOnly, SameSite=Strict, limited to the
//! sign-in path); signing out needs the session's CSRF token. A request the browser marks as
//! sent from another site (`Sec-Fetch-Site: cross-site` or `same-site`) is refused too. The
//! `Origin` header is not compared with the host: behind a proxy the host the server sees may
//! differ from the one the browser used.

use actix_web::cookie::{time::Duration as CookieAge, Cookie, SameSite};
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use maud::html;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::layout::{encode, page, respond, SignedIn};
use crate::auth::{now_secs, refused, AuthReason, Caller};
use crate::http::extract::client_address;
use crate::http::state::{AppState, State};

pub const COOKIE: &str = "a2a_dashboard";
/// The pre-session cookie: the sign-in form's own token.
pub const LOGIN_COOKIE: &str = "a2a_dashboard_login";
const LOGIN_PATH: &str = "/dashboard/login";
/// How long a sign-in form stays valid.
const LOGIN_FORM_AGE: CookieAge = CookieAge::days(1);

/// The session of a request, or the page to answer instead: without a valid token, the
/// sign-in page (which returns to the page asked for; an action is not done, and the page says
/// so), a refusal for a token without `a2a.operator`.
pub fn session(req: &HttpRequest, state: &AppState) -> Result<SignedIn, Box<HttpResponse>> {
    let cookie = req.cookie(COOKIE);
    let valid = cookie
        .as_ref()
        .and_then(|c| state.verifier.verify_expiring(c.value()).ok());
    let (Some(cookie), Some((caller, _))) = (cookie, valid) else {
        return Err(Box::new(signed_out(req)));
    };
    if !caller.is_operator() {
        return Err(Box::new(refusal(&caller, cookie.value())));
    }
    Ok(SignedIn {
        csrf: csrf_of(cookie.value()),
        caller,
    })
}

/// The CSRF token of a session: a digest of its token.
fn csrf_of(token: &str) -> String {
    let digest = Sha256::digest(format!("a2a-dashboard-csrf\u{0}{token}").as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// Whether two tokens are equal, in a time that does not depend on where they differ.
pub(super) fn same(given: Option<&str>, expected: &str) -> bool {
    given.is_some_and(|g| {
        g.len() == expected.len()
            && g.bytes()
                .zip(expected.bytes())
                .fold(0, |d, (a, b)| d | (a ^ b))
                == 0
    })
}

/// Refuses a state-changing request whose form does not carry the session's CSRF token.
pub fn check_csrf(s: &SignedIn, given: Option<&str>) -> Result<(), Box<HttpResponse>> {
    if same(given, &s.csrf) {
        return Ok(());
    }
    Err(Box::new(forbidden(
        "Refused: the form's CSRF token is missing or wrong",
    )))
}

/// The session of a form posted as name-value pairs, its CSRF token checked: what a repair
/// form (a row's, the bulk bar's, the retry gate's) answers before anything else.
pub fn form_session(
    req: &HttpRequest,
    state: &AppState,
    pairs: &[(String, String)],
) -> Result<SignedIn, Box<HttpResponse>> {
    let s = session(req, state)?;
    let given = pairs
        .iter()
        .find(|(k, _)| k == "csrf")
        .map(|(_, v)| v.as_str());
    check_csrf(&s, given)?;
    Ok(s)
}

/// Whether the browser says the request comes from a page of another site (Fetch Metadata).
/// Browsers that do not send the header are left to the tokens.
fn cross_site(req: &HttpRequest) -> bool {
    req.headers()
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.eq_ignore_ascii_case("cross-site") || v.eq_ignore_ascii_case("same-site")
        })
}

/// 403: a form refused, and nothing changed.
fn forbidden(why: &str) -> HttpResponse {
    respond(
        StatusCode::FORBIDDEN,
        page(
            "Refused",
            None,
            html! {
                h1 { (why) }
                p { "Nothing was changed. Reload the page you came from and try again." }
            },
        ),
    )
}

pub fn see_other(to: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((header::LOCATION, to))
        .finish()
}

/// The page for a token without `a2a.operator` (`token`): its form forgets that token, and
/// carries the CSRF token derived from it.
fn refusal(caller: &Caller, token: &str) -> HttpResponse {
    respond(
        StatusCode::FORBIDDEN,
        page(
            "Not an operator",
            None,
            html! {
                h1 { "This token cannot open the dashboard" }
                p { "The token of " strong { (caller.sub.as_str()) } " does not grant "
                    code { "a2a.operator" } ". The dashboard is for operators: sign in with a token that holds it." }
                form #forget method="post" action="/dashboard/logout-refused" {
                    input type="hidden" name="csrf" value=(csrf_of(token));
                    button { "Sign in with another token" }
                }
            },
        ),
    )
}

/// The answer to a request without a valid session. A page asked for is the sign-in page,
/// which returns to it; an action (a POST) was not done, and the sign-in page says so and
/// returns to the page the action was on.
fn signed_out(req: &HttpRequest) -> HttpResponse {
    if req.method() == actix_web::http::Method::GET {
        let here = match req.query_string() {
            "" => req.path().to_owned(),
            q => format!("{}?{q}", req.path()),
        };
        let ended = if req.cookie(COOKIE).is_some() {
            "expired=1&"
        } else {
            ""
        };
        return see_other(&format!("{LOGIN_PATH}?{ended}next={}", encode(&here)));
    }
    let page = action_page(req.path());
    let note = "Your session ended before this action reached the server, so nothing was \
                done. Sign in again to return to the page, then do it again if it is still \
                needed.";
    let kept = kept_login_token(req);
    login(req, StatusCode::UNAUTHORIZED, Some(note), kept, Some(&page))
}

/// The page an action's form is on (`/dashboard/tasks/{id}/cancel` → the task's page).
fn action_page(path: &str) -> String {
    let page = path
        .strip_suffix("/act")
        .or_else(|| path.strip_suffix("/cancel"))
        .unwrap_or(path);
    match page {
        "/dashboard/logout" | "/dashboard/logout-refused" => "/dashboard".to_owned(),
        page => page.to_owned(),
    }
}

/// Where a sign-in may return to: a page of the dashboard, else its overview.
fn return_to(next: Option<&str>) -> &str {
    next.filter(|n| {
        (*n == "/dashboard" || n.starts_with("/dashboard/") || n.starts_with("/dashboard?"))
            && !n.contains(['\\', '\r', '\n'])
            && !n.starts_with(LOGIN_PATH)
    })
    .unwrap_or("/dashboard")
}

#[derive(Deserialize)]
pub struct LoginQuery {
    expired: Option<String>,
    next: Option<String>,
}

/// A pre-session token still valid, kept so that two sign-in tabs both work.
fn kept_login_token(req: &HttpRequest) -> Option<String> {
    req.cookie(LOGIN_COOKIE)
        .map(|c| c.value().to_owned())
        .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

pub async fn login_page(req: HttpRequest, q: web::Query<LoginQuery>) -> HttpResponse {
    let note = q
        .expired
        .is_some()
        .then_some("Your session ended: sign in again.");
    let next = q.next.as_deref().map(|n| return_to(Some(n)));
    login(&req, StatusCode::OK, note, kept_login_token(&req), next)
}

/// The sign-in page, with its own token (`kept`, or a fresh one) in its form and in the
/// pre-session cookie, and the page to return to once signed in (`next`).
fn login(
    req: &HttpRequest,
    status: StatusCode,
    note: Option<&str>,
    kept: Option<String>,
    next: Option<&str>,
) -> HttpResponse {
    let token = kept.unwrap_or_else(|| {
        let (a, b) = (uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        format!("{a}{b}")
    });
    let markup = page(
        "Sign in",
        None,
        html! {
            h1 { "a2a-mailbox operator dashboard" }
            @if let Some(note) = note { p.note { (note) } }
            form.login #login method="post" action=(LOGIN_PATH) {
                input type="hidden" name="login_csrf" value=(token);
                @if let Some(next) = next { input type="hidden" name="next" value=(next); }
                label for="token" { "Operator token (a JWT holding a2a.operator)" }
                textarea #token name="token" rows="4" required autocomplete="off" {}
                button type="submit" { "Sign in" }
            }
            p.hint { "The token is kept in an HttpOnly cookie until it expires or you sign out." }
        },
    );
    let cookie = Cookie::build(LOGIN_COOKIE, token)
        .path(LOGIN_PATH)
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(req.connection_info().scheme() == "https")
        .max_age(LOGIN_FORM_AGE)
        .finish();
    let mut res = respond(status, markup);
    let _ = res.add_cookie(&cookie);
    res
}

#[derive(Deserialize)]
pub struct LoginForm {
    token: String,
    /// The sign-in form's own token; it must equal the pre-session cookie.
    login_csrf: Option<String>,
    /// The page to return to.
    next: Option<String>,
}

pub async fn sign_in(state: State, req: HttpRequest, form: web::Form<LoginForm>) -> HttpResponse {
    // Another site's form, or one without this browser's pre-session token: refused before the
    // token is even looked at, and no session is made.
    let pre = req.cookie(LOGIN_COOKIE).map(|c| c.value().to_owned());
    let own = pre
        .as_deref()
        .is_some_and(|pre| same(form.login_csrf.as_deref(), pre));
    if cross_site(&req) || !own {
        let note = "This sign-in form was not this page's own (it came from another site, or it \
                    expired): nothing was done. Sign in again here.";
        return login(&req, StatusCode::FORBIDDEN, Some(note), None, None);
    }
    let token = form.token.trim();
    let next = form.next.as_deref().map(|n| return_to(Some(n)));
    // A token inside the validation leeway is no session: it would end at once. Refused as
    // expired, in words.
    let verified = state
        .verifier
        .verify_fetching(token)
        .await
        .and_then(|(caller, exp)| match exp > now_secs() {
            true => Ok((caller, exp)),
            false => Err(refused(AuthReason::Expired, AuthReason::Expired.describe())),
        });
    let (caller, exp) = match verified {
        Ok(ok) => ok,
        Err((reason, e)) => {
            // Audited as the API's refused tokens are, with the same budget per address.
            let late = state.mailbox.auth_failed(&client_address(&req), reason);
            if let Some(late) = late {
                tokio::time::sleep(late).await;
            }
            let says = format!("Refused: {}", e.message);
            return login(&req, StatusCode::UNAUTHORIZED, Some(&says), pre, next);
        }
    };
    if !caller.is_operator() {
        return refusal(&caller, token);
    }
    let age = exp.saturating_sub(now_secs()).min(i64::MAX as u64) as i64;
    let cookie = Cookie::build(COOKIE, token.to_owned())
        .path("/dashboard")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(req.connection_info().scheme() == "https")
        .max_age(CookieAge::seconds(age))
        .finish();
    let mut res = see_other(return_to(form.next.as_deref()));
    let _ = res.add_cookie(&cookie);
    // The sign-in form's token is spent.
    let _ = res.add_cookie(&removal(LOGIN_COOKIE, LOGIN_PATH));
    res
}

#[derive(Deserialize)]
pub struct CsrfForm {
    pub csrf: Option<String>,
}

/// Signing out: the session's own form only (its CSRF token, not from another site).
pub async fn sign_out(state: State, req: HttpRequest, form: web::Form<CsrfForm>) -> HttpResponse {
    if cross_site(&req) {
        return forbidden("Refused: signing out from another site");
    }
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    if let Err(refused) = check_csrf(&s, form.csrf.as_deref()) {
        return *refused;
    }
    forget()
}

/// Forgetting a token that is not an operator's, from its refusal page: that page's own form
/// only (the CSRF token derived from the token in the cookie). Without a cookie there is
/// nothing to forget.
pub async fn sign_out_refused(req: HttpRequest, form: web::Form<CsrfForm>) -> HttpResponse {
    if cross_site(&req) {
        return forbidden("Refused: signing out from another site");
    }
    let Some(cookie) = req.cookie(COOKIE) else {
        return see_other(LOGIN_PATH);
    };
    if !same(form.csrf.as_deref(), &csrf_of(cookie.value())) {
        return forbidden("Refused: the form's CSRF token is missing or wrong");
    }
    forget()
}

fn forget() -> HttpResponse {
    let mut res = see_other(LOGIN_PATH);
    let _ = res.add_cookie(&removal(COOKIE, "/dashboard"));
    res
}

/// The cookie that removes cookie `name` of `path`.
pub(super) fn removal(name: &'static str, path: &'static str) -> Cookie<'static> {
    let mut gone = Cookie::build(name, "")
        .path(path)
        .http_only(true)
        .same_site(SameSite::Strict)
        .finish();
    gone.make_removal();
    gone
}
