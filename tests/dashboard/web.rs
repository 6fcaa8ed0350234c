//! Talking to the dashboard as a browser would: the session cookie, forms, the CSRF token.

use reqwest::Method;
use serde_json::json;

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
    let body = form
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&");
    app.raw_with(
        Method::POST,
        path,
        None,
        Some("application/x-www-form-urlencoded"),
        Some(body.into_bytes()),
        &[("Cookie", &cookie)],
    )
    .await
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
