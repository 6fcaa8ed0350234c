//! Signing in and out cannot be done by another site: the sign-in form carries a token of its own
//! (double-submitted with a pre-session cookie), and signing out needs the session's CSRF token.

use super::web::*;
use crate::common::*;

type Headers<'a> = Vec<(&'a str, &'a str)>;
type Form<'a> = Vec<(&'a str, &'a str)>;

both_engines!(signing_in_needs_the_sign_in_forms_own_token);
async fn signing_in_needs_the_sign_in_forms_own_token(app: TestApp) {
    let ops = operator(&app);
    let (cookie, fields) = login_form(&app).await;
    assert!(
        fields
            .iter()
            .any(|(k, v)| k == "login_csrf" && v.len() >= 32),
        "the form carries its token: {fields:?}"
    );
    let (_, field) = fields.iter().find(|(k, _)| k == "login_csrf").unwrap();
    let (other_cookie, _) = login_form(&app).await;
    assert_ne!(cookie, other_cookie, "each sign-in page gets a fresh token");
    let refused: [(Headers, Form); 4] = [
        // What a page of another site can post: a token, and nothing of this site's.
        (vec![], vec![("token", &ops)]),
        // The cookie without the form's token, and the form's token without the cookie.
        (vec![("Cookie", &cookie)], vec![("token", &ops)]),
        (vec![], vec![("login_csrf", field), ("token", &ops)]),
        // Another sign-in page's cookie.
        (
            vec![("Cookie", &other_cookie)],
            vec![("login_csrf", field), ("token", &ops)],
        ),
    ];
    for (headers, form) in &refused {
        let r = post_with(&app, "/dashboard/login", headers, form).await;
        assert_eq!(r.status, 403, "{headers:?} {form:?}: {}", r.text);
        assert!(!touches_session(&r), "no session: {:?}", set_cookies(&r));
    }
    // A cross-site request is refused even with both halves.
    let both = [("login_csrf", field.as_str()), ("token", &ops)];
    let r = post_with(
        &app,
        "/dashboard/login",
        &[("Cookie", &cookie), ("Sec-Fetch-Site", "cross-site")],
        &both,
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(!touches_session(&r));
    // The form as the page drew it signs in, and its pre-session cookie is spent.
    let r = post_with(&app, "/dashboard/login", &[("Cookie", &cookie)], &both).await;
    assert_eq!(
        (r.status, r.header("location")),
        (303, Some("/dashboard")),
        "{}",
        r.text
    );
    let cookies = set_cookies(&r);
    assert!(touches_session(&r), "{cookies:?}");
    assert!(
        cookies
            .iter()
            .any(|c| c.starts_with("a2a_dashboard_login=") && c.contains("Max-Age=0")),
        "{cookies:?}"
    );
    assert!(
        cookies
            .iter()
            .all(|c| c.contains("SameSite=Strict") && c.contains("HttpOnly")),
        "{cookies:?}"
    );
}

both_engines!(signing_out_needs_the_sessions_csrf_token);
async fn signing_out_needs_the_sessions_csrf_token(app: TestApp) {
    let ops = operator(&app);
    let session = format!("a2a_dashboard={ops}");
    let csrf = csrf(&app, &ops).await;
    let still_signed_in = || async { page(&app, "/dashboard", &ops).await.status == 200 };
    // What another site can send: no session cookie (it is SameSite=Strict), no CSRF token; or,
    // were the cookie sent, still no token.
    for (path, headers) in [
        ("/dashboard/logout", vec![]),
        ("/dashboard/logout", vec![("Cookie", session.as_str())]),
        ("/dashboard/logout-refused", vec![]),
        (
            "/dashboard/logout-refused",
            vec![("Cookie", session.as_str())],
        ),
    ] {
        let r = post_with(&app, path, &headers, &[]).await;
        assert!(
            !touches_session(&r),
            "{path} {headers:?} signed out: {:?}",
            set_cookies(&r)
        );
        assert_ne!(r.status, 200, "{path}");
        assert!(
            still_signed_in().await,
            "{path}: the session is still valid"
        );
    }
    // A cross-site request with the token (were it known) is refused too.
    let cross = [
        ("Cookie", session.as_str()),
        ("Sec-Fetch-Site", "cross-site"),
    ];
    let r = post_with(&app, "/dashboard/logout", &cross, &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(!touches_session(&r));
    // The page's own form signs out.
    let own = [
        ("Cookie", session.as_str()),
        ("Sec-Fetch-Site", "same-origin"),
    ];
    let r = post_with(&app, "/dashboard/logout", &own, &[("csrf", &csrf)]).await;
    assert_eq!(
        (r.status, r.header("location")),
        (303, Some("/dashboard/login"))
    );
    let gone = set_cookies(&r);
    assert!(
        gone.iter()
            .any(|c| c.starts_with("a2a_dashboard=;") && c.contains("Max-Age=0")),
        "{gone:?}"
    );
}

both_engines!(a_token_that_is_not_an_operators_is_forgotten_from_its_own_page);
async fn a_token_that_is_not_an_operators_is_forgotten_from_its_own_page(app: TestApp) {
    let plain = app.alice();
    let r = page(&app, "/dashboard", &plain).await;
    assert_eq!(r.status, 403);
    let fields = hidden_fields(&r.text, "forget");
    let form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let cookie = format!("a2a_dashboard={plain}");
    let r = post_with(
        &app,
        "/dashboard/logout-refused",
        &[("Cookie", &cookie)],
        &form,
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert!(touches_session(&r), "the token is forgotten");
}
