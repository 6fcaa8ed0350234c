//! The operator dashboard with every kind of token: signing in, every page, and every form that
//! changes something (repair, cancel, the retry gate), each posted with the session cookie of
//! the token and the very CSRF token that session would carry. Only an operator gets a session:
//! the others are sent back to sign in (no token, an expired or a forged one) or refused (403),
//! see nothing of the fixture, and change nothing.

use reqwest::Method;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::kit::*;
use super::world::{audit_bounded, fixture, snapshot, unchanged, Fix};
use crate::common::{full_ops, Api, Resp, TestApp};

/// Refused because the session is not an operator's.
const NO: Want = Want::Deny("forbidden");

/// The dashboard's answer as a class: back to the sign-in page (or a 401 from it) is
/// `Unauth`, a 403 page is `Deny("forbidden")`.
fn dash_got(r: &Resp) -> Got {
    let location = r.header("location").unwrap_or_default();
    match r.status {
        303 if location.starts_with("/dashboard/login") => Got::Unauth,
        401 => Got::Unauth,
        403 => Got::Deny("forbidden".into()),
        200..=399 => Got::Ok,
        s => Got::Other(format!("{s} {}", short(&r.text))),
    }
}

/// The CSRF token a session of `token` carries, computed as the server computes it (anyone who
/// holds the token can): a form that carries it is not refused for its CSRF.
pub fn csrf_of(token: &str) -> String {
    let digest = Sha256::digest(format!("a2a-dashboard-csrf\u{0}{token}").as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

pub fn form(path: &str, fields: &[(&str, &str)]) -> Req {
    let body = fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&");
    Req {
        method: Method::POST,
        path: path.to_owned(),
        body: Some(body.into_bytes()),
        content_type: Some("application/x-www-form-urlencoded"),
        headers: Vec::new(),
    }
}

/// `req` with the session cookie of `token` (none for `None`).
pub fn with_session(req: Req, token: Option<&str>) -> Req {
    match token {
        Some(t) => req.header("Cookie", &format!("a2a_dashboard={t}")),
        None => req,
    }
}

fn pages(fix: &Fix) -> Vec<String> {
    [
        "/dashboard",
        "/dashboard/live",
        "/dashboard/leases?min_age_ms=0",
        "/dashboard/retry",
        "/dashboard/tasks",
        "/dashboard/audit",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain(fix.ids().iter().map(|id| format!("/dashboard/tasks/{id}")))
    .collect()
}

/// Every state-changing form, with the CSRF of `token`'s session.
fn forms(fix: &Fix, csrf: &str) -> Vec<(&'static str, Req)> {
    let target = format!("{}:{}", fix.in_flight, fix.lease);
    let act = |extra: &[(&str, &str)]| {
        let mut fields = vec![("csrf", csrf), ("task", target.as_str())];
        fields.extend_from_slice(extra);
        form("/dashboard/leases/act", &fields)
    };
    vec![
        (
            "requeue",
            act(&[
                ("action", "requeue"),
                ("duplicate_risk", "operator_accepted"),
            ]),
        ),
        (
            "force error",
            act(&[("action", "force_error"), ("message", "no")]),
        ),
        (
            "cancel a lease",
            act(&[("action", "cancel"), ("reason", "mine")]),
        ),
        (
            "force every row",
            form(
                "/dashboard/leases/act",
                &[
                    ("csrf", csrf),
                    ("all", "force_error"),
                    ("message", "no"),
                    ("row", &target),
                ],
            ),
        ),
        (
            "run the retry gate",
            form("/dashboard/retry", &[("csrf", csrf), ("row", &target)]),
        ),
        (
            "cancel a task",
            form(
                &format!("/dashboard/tasks/{}/cancel", fix.queued),
                &[("csrf", csrf), ("reason", "mine")],
            ),
        ),
        ("sign out", form("/dashboard/logout", &[("csrf", csrf)])),
    ]
}

/// Signs in as a browser does: the sign-in page's pre-session cookie and its hidden token go
/// back with `token`.
async fn sign_in(api: &Api, token: &str) -> Resp {
    let page = call(api, &Req::get("/dashboard/login"), None).await;
    let cookie = page
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with("a2a_dashboard_login="))
        .and_then(|c| c.split(';').next())
        .unwrap_or_else(|| panic!("no pre-session cookie: {:?}", page.headers))
        .to_owned();
    let mark = "name=\"login_csrf\" value=\"";
    let at = page.text.find(mark).expect("no login_csrf field") + mark.len();
    let login_csrf = &page.text[at..at + page.text[at..].find('"').unwrap()];
    let req = form(
        "/dashboard/login",
        &[("login_csrf", login_csrf), ("token", token)],
    );
    call(api, &req.header("Cookie", &cookie), None).await
}

both_engines!(only_an_operator_gets_a_dashboard_session, config = eager);
async fn only_an_operator_gets_a_dashboard_session(app: TestApp) {
    let mut judge = Judge::default();
    let mut n = 0;
    let mut fix = fixture(&app, n).await;
    let mut before = snapshot(&app).await;
    for tok in Tok::ALL {
        let jwt = tok.jwt(&app);
        let want = want([NO; 4], tok);
        // Signing in.
        let case = format!("dashboard sign-in as {tok:?}");
        let r = sign_in(&app, jwt.as_deref().unwrap_or("")).await;
        judge.outcome(&case, want, &dash_got(&r), &r);
        let cookie = r.header("set-cookie").unwrap_or_default();
        judge.check(
            !cookie.contains("a2a_dashboard=ey"),
            &case,
            format!("a session cookie for a non-operator: {cookie}"),
        );
        // Every page.
        for path in pages(&fix) {
            let case = format!("dashboard GET {path} as {tok:?}");
            let r = call(&app, &with_session(Req::get(&path), jwt.as_deref()), None).await;
            judge.outcome(&case, want, &dash_got(&r), &r);
            judge.check(
                !fix.leaks_into(&r.text),
                &case,
                format!("the page shows the fixture: {}", short(&r.text)),
            );
        }
        // Every form, with the CSRF token that session would carry.
        let csrf = csrf_of(jwt.as_deref().unwrap_or(""));
        for (what, req) in forms(&fix, &csrf) {
            let case = format!("dashboard form {what} as {tok:?}");
            let r = call(&app, &with_session(req, jwt.as_deref()), None).await;
            judge.outcome(&case, want, &dash_got(&r), &r);
            let after = snapshot(&app).await;
            unchanged(&mut judge, &case, &before, &after);
            if before != after {
                n += 1;
                fix = fixture(&app, n).await;
                before = snapshot(&app).await;
            }
        }
    }
    // An operator's session with the CSRF token of another token's session is refused too.
    let ops = full_ops(&app);
    for (what, req) in forms(&fix, &csrf_of(&app.token("mallory", json!([])))) {
        let case = format!("dashboard form {what} as the operator with mallory's CSRF");
        let r = call(&app, &with_session(req, Some(&ops)), None).await;
        judge.outcome(&case, NO, &dash_got(&r), &r);
        let after = snapshot(&app).await;
        unchanged(&mut judge, &case, &before, &after);
    }
    // The control: the same forms from the operator's own session do what they say, so the
    // refusals above are the session's, not a malformed form's.
    for i in 0..forms(&fix, "").len() - 1 {
        n += 1;
        fix = fixture(&app, n).await;
        let before = snapshot(&app).await;
        let (what, req) = forms(&fix, &csrf_of(&ops)).swap_remove(i);
        let case = format!("dashboard form {what} as the operator");
        let r = call(&app, &with_session(req, Some(&ops)), None).await;
        judge.outcome(&case, Want::Ok, &dash_got(&r), &r);
        judge.check(
            before != snapshot(&app).await,
            &case,
            "the operator's form changed nothing",
        );
    }
    audit_bounded(&app, &mut judge).await;
    judge.finish("the dashboard under attack");
}
