//! Talking to the dashboard as a browser would: the session cookie, forms, the CSRF token.

use reqwest::Method;
use serde_json::json;

use crate::common::outcome::follow_outcome;
use crate::common::*;

/// An operator who may repair.
pub fn operator(app: &Api) -> String {
    app.token(
        "ops",
        json!([
            "a2a.operator",
            "a2a.repair.requeue",
            "a2a.repair.force_error"
        ]),
    )
}

/// A GET with the session cookie of `token`.
pub async fn page(app: &Api, path: &str, token: &str) -> Resp {
    let cookie = format!("a2a_dashboard={token}");
    app.raw_with(Method::GET, path, None, None, None, &[("Cookie", &cookie)])
        .await
}

/// A form POST with the session cookie of `token`.
pub async fn post_form(app: &Api, path: &str, token: &str, form: &[(&str, &str)]) -> Resp {
    let cookie = format!("a2a_dashboard={token}");
    post_with(app, path, &[("Cookie", &cookie)], form).await
}

/// A form POST with the request headers given (cookies included), and nothing else.
pub async fn post_with(
    app: &Api,
    path: &str,
    headers: &[(&str, &str)],
    form: &[(&str, &str)],
) -> Resp {
    let body = form
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&");
    let r = app
        .raw_with(
            Method::POST,
            path,
            None,
            Some("application/x-www-form-urlencoded"),
            Some(body.into_bytes()),
            headers,
        )
        .await;
    let session = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("cookie"))
        .map_or("", |(_, v)| *v);
    follow_outcome(app, r, session).await
}

/// The `Set-Cookie` headers of an answer.
pub fn set_cookies(r: &Resp) -> Vec<String> {
    r.headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

/// Whether an answer sets (or removes) the session cookie.
pub fn touches_session(r: &Resp) -> bool {
    set_cookies(r)
        .iter()
        .any(|c| c.starts_with("a2a_dashboard="))
}

/// The sign-in page as a browser gets it: its pre-session cookie (`name=value`) and the hidden
/// fields of its form.
pub async fn login_form(app: &Api) -> (String, Vec<(String, String)>) {
    let r = app.get_anon("/dashboard/login").await;
    r.expect(200);
    let cookie = set_cookies(&r)
        .into_iter()
        .find(|c| c.starts_with("a2a_dashboard_login="))
        .unwrap_or_else(|| panic!("no pre-session cookie: {:?}", r.headers));
    let cookie = cookie.split(';').next().unwrap().to_owned();
    (cookie, hidden_fields(&r.text, "login"))
}

/// Signs in with `token` through the sign-in form, as a browser does.
pub async fn sign_in(app: &Api, token: &str) -> Resp {
    let (cookie, fields) = login_form(app).await;
    let mut form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    form.push(("token", token));
    post_with(app, "/dashboard/login", &[("Cookie", &cookie)], &form).await
}

/// The hidden inputs (name, value) of the form with id `form` in `html`, in order.
pub fn hidden_fields(html: &str, form: &str) -> Vec<(String, String)> {
    let start = html
        .find(&format!("<form id=\"{form}\""))
        .or_else(|| html.find(&format!("id=\"{form}\"")))
        .unwrap_or_else(|| panic!("no form {form:?} in {html}"));
    let end = start + html[start..].find("</form>").unwrap();
    let mut out = Vec::new();
    let mut rest = &html[start..end];
    while let Some(at) = rest.find("<input ") {
        let tag_end = at + rest[at..].find('>').unwrap();
        let tag = &rest[at..tag_end];
        if attr(tag, "type") == Some("hidden") {
            if let (Some(name), Some(value)) = (attr(tag, "name"), attr(tag, "value")) {
                out.push((name.to_owned(), value.to_owned()));
            }
        }
        rest = &rest[tag_end..];
    }
    out
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(&tag[at..at + tag[at..].find('"')?])
}

/// The markup of the table row of task `id` (`<tr data-task="id"` … `</tr>`) in `html`.
pub fn row_of<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<tr data-task=\"{id}\""))
        .unwrap_or_else(|| panic!("no row of {id} in {html}"));
    &html[start..start + html[start..].find("</tr>").unwrap()]
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The CSRF token the pages of `token`'s session carry.
pub async fn csrf(app: &Api, token: &str) -> String {
    let r = page(app, "/dashboard", token).await;
    let at = r.text.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    r.text[at..at + 32].to_owned()
}

/// Sends a task alice → bob and leases it as bob: (task id, lease id).
pub async fn in_flight(app: &Api) -> (String, String) {
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let (leased, lease) = app.lease_some(&app.bob()).await;
    assert_eq!(leased, id);
    (id, lease["lease_id"].as_str().unwrap().to_owned())
}

/// Asserts the answer to an address edited by hand: a 400 page (HTML, not the API's JSON) with
/// a way back.
#[track_caller]
pub fn assert_bad_address(r: &Resp, path: &str) {
    assert_eq!(r.status, 400, "{path}: {}", r.text);
    assert!(
        r.header("content-type")
            .unwrap_or_default()
            .starts_with("text/html"),
        "{path}: a page, not JSON: {}",
        r.text
    );
    assert!(r.text.contains(">Back</a>"), "{path}: a way back");
}

/// One batch from alice to `n` recipients (`agent-0`…): `n` passed capability checks in the
/// audit feed, one per recipient.
pub async fn fan_out(app: &Api, n: usize) {
    let alice = app.token("alice", json!(["a2a.send.*"]));
    let tasks: Vec<_> = (0..n)
        .map(|i| task("alice", &format!("agent-{i}")))
        .collect();
    let r = app
        .post("/a2a/tasks/batch", &alice, &json!({ "tasks": tasks }))
        .await;
    r.expect(201);
}
