//! Authentication (docs/contract.md#capabilities, docs/contract.md#details): every way a bearer token can be wrong is 401
//! `unauthenticated`, and the open endpoints need no token.

use jsonwebtoken::Algorithm;
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

/// (method, path, JSON body) for each authenticated mailbox route.
fn protected_routes() -> Vec<(Method, String, Option<Value>)> {
    let id = Uuid::new_v4().to_string();
    vec![
        (
            Method::POST,
            "/a2a/tasks".into(),
            Some(task("alice", "bob")),
        ),
        (Method::GET, "/a2a/tasks/next".into(), None),
        (Method::GET, "/a2a/tasks/recent".into(), None),
        (Method::GET, format!("/a2a/tasks/{id}"), None),
        (
            Method::POST,
            "/a2a/results".into(),
            Some(result(&id, "ok", "x")),
        ),
        (Method::GET, "/a2a/results/next".into(), None),
        (Method::GET, "/a2a/results/recent".into(), None),
        (Method::GET, "/a2a/queue".into(), None),
    ]
}

async fn call(
    app: &TestApp,
    auth: Option<&str>,
    m: &Method,
    path: &str,
    body: &Option<Value>,
) -> Resp {
    let (ct, bytes) = match body {
        Some(b) => (
            Some("application/json"),
            Some(serde_json::to_vec(b).unwrap()),
        ),
        None => (None, None),
    };
    app.raw(m.clone(), path, auth, ct, bytes).await
}

both_engines!(missing_token_is_401_on_every_mailbox_route);
async fn missing_token_is_401_on_every_mailbox_route(app: TestApp) {
    for (m, path, body) in protected_routes() {
        let r = call(&app, None, &m, &path, &body).await;
        assert_error(&r, 401, "unauthenticated");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"), "{m} {path}");
    }
    app.assert_empty("after unauthenticated calls").await;
}

/// Every malformed, forged or otherwise unacceptable Authorization header we can think of, and
/// the valid token the forged ones are made from.
fn bad_authorizations(app: &TestApp) -> (String, Vec<(&'static str, String)>) {
    let now = now_ms() / 1000;
    let caps = json!(["a2a.send.bob", "a2a.operator"]);
    let good = json!({"sub": "alice", "exp": now + 3600, "caps": caps});
    let with = |k: &str, v: Value| {
        let mut c = good.clone();
        c[k] = v;
        c
    };
    let without = |k: &str| {
        let mut c = good.clone();
        c.as_object_mut().unwrap().remove(k);
        c
    };
    let hs256 = |claims: &Value| app.jwt(claims, Algorithm::HS256);

    let none_token = format!(
        "{}.{}.",
        b64url(br#"{"alg":"none","typ":"JWT"}"#),
        b64url(good.to_string().as_bytes())
    );
    let none_upper = format!(
        "{}.{}.",
        b64url(br#"{"alg":"NONE","typ":"JWT"}"#),
        b64url(good.to_string().as_bytes())
    );
    let valid = hs256(&good);
    let parts: Vec<&str> = valid.split('.').collect();
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64url(with("sub", json!("mallory")).to_string().as_bytes()),
        parts[2]
    );
    let stripped_signature = format!("{}.{}.", parts[0], parts[1]);

    let bad = vec![
        ("garbage", "Bearer garbage".into()),
        ("three garbage segments", "Bearer a.b.c".into()),
        ("empty bearer", "Bearer ".into()),
        ("basic auth", "Basic YWxpY2U6cGFzc3dvcmQ=".into()),
        ("token without scheme", valid.clone()),
        (
            "expired",
            format!("Bearer {}", hs256(&with("exp", json!(now - 3600)))),
        ),
        (
            "wrong secret",
            format!(
                "Bearer {}",
                mint(b"some-other-secret", &good, Algorithm::HS256)
            ),
        ),
        ("alg none", format!("Bearer {none_token}")),
        ("alg NONE", format!("Bearer {none_upper}")),
        (
            "HS512 with the right secret",
            format!("Bearer {}", app.jwt(&good, Algorithm::HS512)),
        ),
        (
            "HS384 with the right secret",
            format!("Bearer {}", app.jwt(&good, Algorithm::HS384)),
        ),
        ("tampered payload", format!("Bearer {tampered}")),
        ("signature stripped", format!("Bearer {stripped_signature}")),
        ("no exp", format!("Bearer {}", hs256(&without("exp")))),
        ("no sub", format!("Bearer {}", hs256(&without("sub")))),
        (
            "nbf an hour ahead",
            format!("Bearer {}", hs256(&with("nbf", json!(now + 3600)))),
        ),
    ];
    (valid, bad)
}

both_engines!(bad_tokens_are_401_unauthenticated);
async fn bad_tokens_are_401_unauthenticated(app: TestApp) {
    // The valid token the forged ones are made from is used first: the server keeps a token it
    // verified, and a forgery must not pass for it.
    let (valid, bad) = bad_authorizations(&app);
    let r = call(
        &app,
        Some(&format!("Bearer {valid}")),
        &Method::GET,
        "/a2a/queue",
        &None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut failures = Vec::new();
    for (what, auth) in bad {
        for (m, path, body) in [
            (Method::GET, "/a2a/queue".to_string(), None),
            (
                Method::POST,
                "/a2a/tasks".to_string(),
                Some(task("alice", "bob")),
            ),
        ] {
            let r = call(&app, Some(&auth), &m, &path, &body).await;
            if r.status != 401 || r.body["code"] != "unauthenticated" {
                failures.push(format!("{what}: {m} {path} got {} {}", r.status, r.text));
            } else {
                assert_error(&r, 401, "unauthenticated");
            }
        }
    }
    assert!(
        failures.is_empty(),
        "these tokens should be refused with 401 unauthenticated:\n{}",
        failures.join("\n")
    );
    app.assert_empty("after refused tokens").await;

    // The same claims, correctly signed with HS256, are accepted.
    let ok = app.token("alice", json!(["a2a.send.bob"]));
    app.send_ok(&ok, &task("alice", "bob")).await;
}

both_engines!(open_endpoints_answer_without_a_token);
async fn open_endpoints_answer_without_a_token(app: TestApp) {
    for path in ["/healthz", "/readyz", "/version"] {
        let r = app.get_anon(path).await;
        assert_eq!(r.status, 200, "GET {path} without a token: {}", r.text);
    }
}

fn audience_and_issuer() -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_JWT_AUDIENCE", "mailbox-test")
        .env("A2A_MAILBOX_JWT_ISSUER", "https://issuer.test")
}

both_engines!(
    configured_audience_and_issuer_are_enforced,
    config = audience_and_issuer
);
async fn configured_audience_and_issuer_are_enforced(app: TestApp) {
    let exp = now_ms() / 1000 + 3600;
    let claims = |aud: Option<&str>, iss: Option<&str>| {
        let mut c = json!({"sub": "carol", "exp": exp, "caps": []});
        if let Some(aud) = aud {
            c["aud"] = json!(aud);
        }
        if let Some(iss) = iss {
            c["iss"] = json!(iss);
        }
        app.jwt(&c, Algorithm::HS256)
    };
    let good = claims(Some("mailbox-test"), Some("https://issuer.test"));
    let r = app.get("/a2a/tasks/recent", &good).await;
    assert_eq!(r.status, 200, "right aud and iss: {}", r.text);

    for (what, token) in [
        (
            "wrong aud",
            claims(Some("other-service"), Some("https://issuer.test")),
        ),
        ("no aud", claims(None, Some("https://issuer.test"))),
        (
            "wrong iss",
            claims(Some("mailbox-test"), Some("https://evil.test")),
        ),
    ] {
        let r = app.get("/a2a/tasks/recent", &token).await;
        assert_eq!(r.status, 401, "{what}: {}", r.text);
        assert_error(&r, 401, "unauthenticated");
    }

    // A list-valued aud containing the configured audience is fine.
    let list = app.jwt(
        &json!({"sub": "carol", "exp": exp, "caps": [], "aud": ["x", "mailbox-test"],
                "iss": "https://issuer.test"}),
        Algorithm::HS256,
    );
    assert_eq!(app.get("/a2a/tasks/recent", &list).await.status, 200);
}

both_engines!(tokens_without_aud_and_iss_are_accepted_when_none_is_configured);
async fn tokens_without_aud_and_iss_are_accepted_when_none_is_configured(app: TestApp) {
    let plain = app.token("carol", json!([]));
    assert_eq!(app.get("/a2a/tasks/recent", &plain).await.status, 200);
}

both_engines!(
    a_token_without_iss_is_refused_when_an_issuer_is_configured,
    config = audience_and_issuer
);
async fn a_token_without_iss_is_refused_when_an_issuer_is_configured(app: TestApp) {
    // docs/contract.md#capabilities: iss is checked against configuration; docs/contract.md#details: only when unset are tokens
    // without aud/iss accepted.
    let token = app.jwt(
        &json!({"sub": "carol", "exp": now_ms() / 1000 + 3600, "caps": [], "aud": "mailbox-test"}),
        Algorithm::HS256,
    );
    let r = app.get("/a2a/tasks/recent", &token).await;
    assert_error(&r, 401, "unauthenticated");
}

both_engines!(wildcards_that_are_not_a_whole_agent_id_grant_nothing);
async fn wildcards_that_are_not_a_whole_agent_id_grant_nothing(app: TestApp) {
    let (alice, bob) = (app.alice(), app.bob());
    let id = app.send_ok(&alice, &task("alice", "bob")).await;
    let (_, lease) = app.lease_some(&bob).await;
    let lease_id = lease["lease_id"].as_str().unwrap().to_owned();
    let repair = json!({"task_id": id, "reason": "stuck",
        "command": {"action": "requeue", "lease_id": lease_id, "duplicate_risk": "operator_accepted"}});
    let force = json!({"task_id": id, "reason": "stuck",
        "command": {"action": "force_error", "message": "gave up"}});
    let enabled = json!({"enabled": true, "min_lease_age_ms": 0});
    for grant in ["a2a.*", "a2a.repair.*", "*", "a2a.operator.*"] {
        let eve = app.token("eve", json!([grant]));
        let refused = [
            app.post("/a2a/retry-stale", &eve, &enabled).await,
            app.post("/a2a/retry-stale", &eve, &json!({})).await,
            app.post("/a2a/scheduler/tick", &eve, &json!({})).await,
            app.post("/a2a/compact", &eve, &json!({})).await,
            app.post("/a2a/repair", &eve, &repair).await,
            app.post("/a2a/repair", &eve, &force).await,
            app.post("/a2a/tasks", &eve, &task("eve", "bob")).await,
        ];
        for r in &refused {
            assert_error(r, 403, "capability_missing");
        }
        // The operator's view is not granted either: eve sees none of the others' tasks.
        let q = app.get("/a2a/queue", &eve).await;
        assert_eq!(q.expect(200)["tasks"], json!([]), "{grant}");
        assert_error(&app.status(&eve, &id).await, 404, "not_found");
    }
    // Nothing changed: the task is still bob's lease.
    let s = app.status_ok(&id).await;
    assert_eq!(
        (s["state"].as_str(), s["lease"]["lease_id"].as_str()),
        (Some("in_flight"), Some(lease_id.as_str()))
    );
}

both_engines!(a_token_whose_header_names_critical_extensions_is_refused_and_counted);
async fn a_token_whose_header_names_critical_extensions_is_refused_and_counted(app: TestApp) {
    let claims = json!({"sub": "alice", "exp": now_ms() / 1000 + 3600, "caps": ["a2a.send.bob"]});
    // RFC 7515 §4.1.11: the mailbox understands no extension, so it must refuse the token.
    let mut header = jsonwebtoken::Header::new(Algorithm::HS256);
    header.crit = Some(vec!["urn:example:must-understand".into()]);
    header.extras.insert("urn:example:must-understand", true);
    let key = jsonwebtoken::EncodingKey::from_secret(app.secret.as_bytes());
    let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
    for _ in 0..2 {
        // Twice: a refused token is not kept as a verified one.
        let r = app.send(&token, &task("alice", "bob")).await;
        assert_error(&r, 401, "unauthenticated");
        assert!(r.text.contains("crit"), "{}", r.text);
    }
    app.until_metric(r#"a2a_auth_failures_total{reason="malformed"}"#, 2.0)
        .await;
    app.assert_empty("after a token with crit").await;
    // The same claims without `crit` are accepted.
    app.send_ok(&app.jwt(&claims, Algorithm::HS256), &task("alice", "bob"))
        .await;
}
