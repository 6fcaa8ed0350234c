//! What a browser meets at the edges of a session: a sign-in refused (in words, and audited as
//! the API's refused tokens are), a token that has just expired, an action sent after the
//! session ended (nothing is done, and signing in again returns to the page), an outcome cookie
//! nobody but the server could have signed, and a search filter out of range.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::web::*;
use crate::common::*;

/// The `authentication_failed` rows, as an operator sees them.
async fn failure_rows(app: &TestApp) -> Vec<Value> {
    let r = app
        .get(
            "/audit/recent?limit=1000&kind=authentication_failed",
            &app.ops(),
        )
        .await;
    r.expect(200)["events"].as_array().unwrap().clone()
}

both_engines!(a_refused_sign_in_writes_an_authentication_failed_row);
async fn a_refused_sign_in_writes_an_authentication_failed_row(app: TestApp) {
    let r = sign_in(&app, "not-a-token").await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(!touches_session(&r), "{:?}", set_cookies(&r));
    let deadline = Instant::now() + Duration::from_secs(10);
    let rows = loop {
        let rows = failure_rows(&app).await;
        if !rows.is_empty() || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(rows.len(), 1, "one row for the refused sign-in: {rows:?}");
    assert_eq!(rows[0]["issuer"], "anonymous", "{rows:?}");
    assert_eq!(rows[0]["kind"]["count"], 1, "{rows:?}");
    assert_eq!(rows[0]["kind"]["address"], "127.0.0.1", "{rows:?}");
}

both_engines!(a_token_expired_moments_ago_is_refused_in_words);
async fn a_token_expired_moments_ago_is_refused_in_words(app: TestApp) {
    // Within the validation leeway: the API still takes it, but a session made of it would
    // end at once, so the sign-in page says why instead.
    let token = app.jwt(
        &json!({"sub": "ops", "exp": now_ms() / 1000 - 10, "caps": ["a2a.operator"]}),
        jsonwebtoken::Algorithm::HS256,
    );
    let r = sign_in(&app, &token).await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(r.text.contains("expired"), "{}", r.text);
    assert!(
        r.text.contains("id=\"login\""),
        "a sign-in form: {}",
        r.text
    );
    assert!(!touches_session(&r), "{:?}", set_cookies(&r));
}

both_engines!(an_action_after_the_session_ended_does_nothing_and_says_so);
async fn an_action_after_the_session_ended_does_nothing_and_says_so(app: TestApp) {
    let ops = operator(&app);
    let (id, lease) = in_flight(&app).await;
    let csrf = csrf(&app, &ops).await;
    let target = format!("{id}:{lease}");
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "requeue"),
        ("duplicate_risk", "operator_accepted"),
        ("task", target.as_str()),
    ];
    let expired = app.jwt(
        &json!({"sub": "ops", "exp": now_ms() / 1000 - 3600, "caps": ["a2a.operator"]}),
        jsonwebtoken::Algorithm::HS256,
    );
    let gone = format!("a2a_dashboard={expired}");
    // The browser dropped the cookie when it expired, or still sends a dead one.
    for headers in [vec![], vec![("Cookie", gone.as_str())]] {
        let r = post_with(&app, "/dashboard/leases/act", &headers, &form).await;
        assert_eq!(r.status, 401, "{headers:?}: {}", r.text);
        assert!(r.text.contains("nothing was done"), "{}", r.text);
        assert_eq!(app.status_ok(&id).await["state"], "in_flight");
        // Signing in again from that page returns to the page the action came from.
        let pre = set_cookies(&r)
            .into_iter()
            .find(|c| c.starts_with("a2a_dashboard_login="))
            .expect("the page is a sign-in form");
        let pre = pre.split(';').next().unwrap().to_owned();
        let fields = hidden_fields(&r.text, "login");
        assert!(
            fields
                .iter()
                .any(|(k, v)| k == "next" && v == "/dashboard/leases"),
            "{fields:?}"
        );
        let mut login: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        login.push(("token", &ops));
        let r = post_with(&app, "/dashboard/login", &[("Cookie", &pre)], &login).await;
        assert_eq!(r.status, 303, "{}", r.text);
        assert_eq!(r.header("location"), Some("/dashboard/leases"));
    }
    // A page asked for without a session signs in and comes back to it.
    let r = app.get_anon("/dashboard/tasks?state=queued").await;
    assert_eq!(r.status, 303, "{}", r.text);
    let to = r.header("location").unwrap().to_owned();
    assert!(to.starts_with("/dashboard/login?"), "{to}");
    let login = app.get_anon(&to).await;
    let fields = hidden_fields(&login.text, "login");
    assert!(
        fields
            .iter()
            .any(|(k, v)| k == "next" && v == "/dashboard/tasks?state=queued"),
        "{fields:?}"
    );
    // Only a page of the dashboard is a place to return to.
    for elsewhere in [
        "https://example.com/",
        "//example.com/dashboard",
        "/a2a/tasks",
    ] {
        let (cookie, fields) = login_form(&app).await;
        let mut form: Vec<(&str, &str)> = fields
            .iter()
            .filter(|(k, _)| k != "next")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        form.push(("next", elsewhere));
        form.push(("token", &ops));
        let r = post_with(&app, "/dashboard/login", &[("Cookie", &cookie)], &form).await;
        assert_eq!(r.status, 303, "{}", r.text);
        assert_eq!(r.header("location"), Some("/dashboard"), "{elsewhere}");
    }
}

/// An outcome cookie as a page's CSRF token signs it (what the server once did).
fn signed_with_csrf(csrf: &str, payload: &str) -> String {
    let digest = Sha256::digest(format!("a2a-dashboard-outcome\u{0}{csrf}\u{0}{payload}"));
    let mac: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    let hex: String = payload.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.{mac}")
}

both_engines!(an_outcome_is_shown_only_as_the_server_signed_it_and_escaped);
async fn an_outcome_is_shown_only_as_the_server_signed_it_and_escaped(app: TestApp) {
    let ops = operator(&app);
    let csrf = csrf(&app, &ops).await;
    // Whoever reads a page knows its CSRF token: it signs nothing the server shows.
    let payload = json!(["Forged", 200, "<script>alert(1)</script>", "/dashboard"]).to_string();
    let cookie = format!(
        "a2a_dashboard={ops}; a2a_dashboard_outcome={}",
        signed_with_csrf(&csrf, &payload)
    );
    let r = app
        .raw_with(
            reqwest::Method::GET,
            "/dashboard/done",
            None,
            None,
            None,
            &[("Cookie", &cookie)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(!r.text.contains("<script>alert"), "{}", r.text);
    assert!(r.text.contains("Nothing more to show"), "{}", r.text);
    // What a form sends comes back escaped.
    let (id, lease) = in_flight(&app).await;
    let target = format!("{id}:{lease}");
    let form = [
        ("csrf", csrf.as_str()),
        ("action", "<b>bold</b>"),
        ("task", target.as_str()),
    ];
    let r = post_form(&app, "/dashboard/leases/act", &ops, &form).await;
    assert!(r.text.contains("&lt;b&gt;bold"), "{}", r.text);
    assert!(!r.text.contains("<b>bold"), "{}", r.text);
}

both_engines!(a_creation_time_out_of_range_is_a_bad_value);
async fn a_creation_time_out_of_range_is_a_bad_value(app: TestApp) {
    let ops = operator(&app);
    for minutes in ["9223372036854775807", "153722867280913", "1000000000000"] {
        let r = page(&app, &format!("/dashboard/tasks?created={minutes}"), &ops).await;
        assert_eq!(r.status, 200, "{minutes}: {}", r.text);
        assert!(
            r.text.contains("is not a number of minutes"),
            "{minutes}: {}",
            r.text
        );
    }
    let r = page(&app, "/dashboard/tasks?created=60", &ops).await;
    assert!(!r.text.contains("is not a number of minutes"), "{}", r.text);
}
