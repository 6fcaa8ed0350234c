#![allow(dead_code)]

//! The dashboard's actions answer 303 to the page that shows their outcome once, the outcome in
//! a cookie (post/redirect/get). Tests follow it as a browser does.

use reqwest::Method;

use super::{Api, Resp};

/// `r`, or, when it is an action's 303 to its outcome, that page as the browser whose request
/// carried `cookie` (the session) gets it.
pub async fn follow_outcome(app: &Api, r: Resp, cookie: &str) -> Resp {
    if r.status != 303 || r.header("location") != Some("/dashboard/done") {
        return r;
    }
    let outcome = r
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with("a2a_dashboard_outcome="))
        .expect("the outcome travels in a cookie");
    let outcome = outcome.split(';').next().unwrap_or_default();
    let cookie = format!("{cookie}; {outcome}");
    app.raw_with(
        Method::GET,
        "/dashboard/done",
        None,
        None,
        None,
        &[("Cookie", &cookie)],
    )
    .await
}
