//! Tokens from an identity provider (docs/configuration.md#authentication): keys published as a
//! JWKS, fetched at start-up, refetched for an unknown `kid` at most once per 30 s, refreshed
//! periodically; a failing endpoint keeps the keys known, a key that left the set is refused.
//! The agent id and the capabilities may come from other claims, OAuth scopes among them.

use std::time::{Duration, Instant};

use jsonwebtoken::Algorithm;
use serde_json::{json, Value};
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::common::jwks::{claims, scratch, JwksServer, Key, Mode, Serve};
use crate::common::*;

const OK_FETCHES: &str = "a2a_jwks_fetches_total{outcome=\"ok\"}";
const FAILED_FETCHES: &str = "a2a_jwks_fetches_total{outcome=\"error\"}";

/// alice (may send to bob) sends to bob with `token`: the answer.
async fn send_as_alice(app: &Api, token: &str) -> Resp {
    app.send(token, &task("alice", "bob")).await
}

#[track_caller]
fn assert_refused(r: &Resp, needle: &str) {
    assert_error(r, 401, "unauthenticated");
    let message = r.body["message"].as_str().unwrap();
    assert!(message.contains(needle), "{}: {message}", r.what);
}

fn alice_claims() -> Value {
    claims("alice", json!(["a2a.send.bob"]))
}

both_engines!(keys_rotate_in_and_a_flood_of_unknown_kids_costs_one_fetch);
async fn keys_rotate_in_and_a_flood_of_unknown_kids_costs_one_fetch(app: TestApp) {
    let jwks = JwksServer::start().await;
    let k1 = Key::generate(&app.dir, "k1", Algorithm::RS256).await;
    let k2 = Key::generate(&app.dir, "k2", Algorithm::ES256).await;
    let k3 = Key::generate(&app.dir, "k3", Algorithm::EdDSA)
        .await
        .without_alg();
    jwks.publish(&[&k1]);
    let app = jwks.app(&app, &[]).await;
    jwks.until_requests(1).await;
    app.until_metric(OK_FETCHES, 1.0).await;
    let fetched = jwks.requests();

    let t1 = k1.sign(&alice_claims());
    send_as_alice(&app, &t1).await.expect(201);
    assert_eq!(jwks.requests(), fetched, "a known kid needs no fetch");

    // k2 and k3 are published together: the first token of either fetches the set once.
    jwks.publish(&[&k1, &k2, &k3]);
    let t2 = k2.sign(&alice_claims());
    send_as_alice(&app, &t2).await.expect(201);
    let t3 = k3.sign(&alice_claims());
    send_as_alice(&app, &t3).await.expect(201);
    assert_eq!(jwks.requests(), fetched + 1, "one fetch brought k2 and k3");
    // The harness's HS256 secret keeps working beside the set.
    send_as_alice(&app, &app.alice()).await.expect(201);

    // A key verifies its own algorithm only: ES256 under k1's RS256 kid is refused.
    let confused = k2.sign_as("k1", &alice_claims());
    assert_error(
        &send_as_alice(&app, &confused).await,
        401,
        "unauthenticated",
    );

    // 50 made-up kids at once: all refused, at most one more fetch.
    let before = jwks.requests();
    let mut flood = JoinSet::new();
    for _ in 0..50 {
        let api = app.api.clone();
        let token = k1.sign_as(&Uuid::new_v4().to_string(), &alice_claims());
        flood.spawn(async move { send_as_alice(&api, &token).await });
    }
    while let Some(r) = flood.join_next().await {
        assert_refused(&r.unwrap(), "kid");
    }
    let after = jwks.requests();
    assert!(
        after <= before + 1,
        "the flood cost {} fetches",
        after - before
    );

    // The endpoint goes down: known keys keep working, for tokens seen and new ones alike.
    jwks.set(Mode::Down);
    assert_refused(
        &send_as_alice(&app, &k1.sign_as("k9", &alice_claims())).await,
        "kid",
    );
    for token in [
        t1,
        t2,
        t3,
        k1.sign(&alice_claims()),
        k2.sign(&alice_claims()),
    ] {
        send_as_alice(&app, &token).await.expect(201);
    }
    assert!(app.metric(OK_FETCHES).await >= 2.0);
}

both_engines!(a_flood_of_unknown_kids_makes_exactly_one_fetch);
async fn a_flood_of_unknown_kids_makes_exactly_one_fetch(app: TestApp) {
    let jwks = JwksServer::start().await;
    let k1 = Key::generate(&app.dir, "k1", Algorithm::RS256).await;
    jwks.publish(&[&k1]);
    let app = jwks.app(&app, &[]).await;
    jwks.until_requests(1).await;
    // No fetch for an unknown kid has happened yet: the flood's first token makes one, and
    // every other token of the flood, at once or after it, waits for it or finds it recent.
    let before = jwks.requests();
    let mut flood = JoinSet::new();
    for _ in 0..100 {
        let api = app.api.clone();
        let token = k1.sign_as(&Uuid::new_v4().to_string(), &alice_claims());
        flood.spawn(async move { send_as_alice(&api, &token).await });
    }
    while let Some(r) = flood.join_next().await {
        assert_refused(&r.unwrap(), "kid");
    }
    assert_eq!(jwks.requests(), before + 1, "100 unknown kids, one fetch");
    send_as_alice(&app, &k1.sign(&alice_claims()))
        .await
        .expect(201);
    assert_eq!(jwks.requests(), before + 1, "a known kid needs none");
}

both_engines!(a_retired_key_is_refused_and_a_failing_endpoint_keeps_the_keys);
async fn a_retired_key_is_refused_and_a_failing_endpoint_keeps_the_keys(app: TestApp) {
    let jwks = JwksServer::start().await;
    let k1 = Key::generate(&app.dir, "k1", Algorithm::RS256).await;
    let k2 = Key::generate(&app.dir, "k2", Algorithm::ES256).await;
    jwks.publish(&[&k1]);
    let app = jwks
        .app(&app, &[("A2A_MAILBOX_JWT_JWKS_REFRESH_MS", "1000")])
        .await;
    jwks.until_requests(1).await;
    let t1 = k1.sign(&alice_claims());
    send_as_alice(&app, &t1).await.expect(201);

    // k1 leaves the set: at the next refresh its tokens are refused, the verified one included.
    jwks.publish(&[&k2]);
    app.until_refused(&t1).await;
    assert_refused(&send_as_alice(&app, &t1).await, "kid");
    assert_refused(&send_as_alice(&app, &k1.sign(&alice_claims())).await, "kid");
    let t2 = k2.sign(&alice_claims());
    send_as_alice(&app, &t2).await.expect(201);

    // Down (503), garbage, nobody listening: each failed refresh keeps k2.
    for mode in [Mode::Down, Mode::Garbage] {
        jwks.set(mode);
        let failed = app.metric(FAILED_FETCHES).await;
        jwks.until_requests(jwks.requests() + 2).await;
        until_metric_above(&app, FAILED_FETCHES, failed + 1.0).await;
        send_as_alice(&app, &t2).await.expect(201);
        send_as_alice(&app, &k2.sign(&alice_claims()))
            .await
            .expect(201);
        assert_refused(&send_as_alice(&app, &k1.sign(&alice_claims())).await, "kid");
    }
    jwks.stop();
    let failed = app.metric(FAILED_FETCHES).await;
    until_metric_above(&app, FAILED_FETCHES, failed + 1.0).await;
    send_as_alice(&app, &t2).await.expect(201);
    send_as_alice(&app, &k2.sign(&alice_claims()))
        .await
        .expect(201);
}

/// Waits (at most 15 s) until the sample reads more than `floor`.
async fn until_metric_above(app: &Api, sample: &str, floor: f64) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let now = app.metric(sample).await;
        if now > floor {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{sample} reads {now}, waited 15 s for more than {floor}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An Auth0-style token: an opaque `sub`, the agent id in `agent_id`.
fn opaque(key: &Key, iss: &str, extra: Value) -> String {
    let mut c = json!({"sub": "auth0|5f7c8ec7c33c6c004bbafe82", "agent_id": "alice", "iss": iss,
        "exp": now_ms() / 1000 + 3600});
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    key.sign(&c)
}

both_engines!(the_agent_id_and_the_capabilities_come_from_the_configured_claims);
async fn the_agent_id_and_the_capabilities_come_from_the_configured_claims(app: TestApp) {
    let jwks = JwksServer::start().await;
    let key = Key::generate(&app.dir, "k1", Algorithm::RS256).await;
    jwks.publish(&[&key]);
    let env = [
        ("A2A_MAILBOX_JWT_SUBJECT_CLAIM", "agent_id"),
        ("A2A_MAILBOX_JWT_CAPS_CLAIM", "a2a_caps"),
        (
            "A2A_MAILBOX_JWT_ISSUER",
            "https://a.example,https://b.example",
        ),
    ];
    let app = jwks.app(&app, &env).await;
    let caps = json!({"a2a_caps": ["a2a.send.bob"]});
    for iss in ["https://a.example", "https://b.example"] {
        let token = opaque(&key, iss, caps.clone());
        app.send_ok(&token, &task("alice", "bob")).await;
    }
    let third = opaque(&key, "https://c.example", caps.clone());
    assert_error(&send_as_alice(&app, &third).await, 401, "unauthenticated");
    // The capabilities are read from the configured claim, not from `caps`.
    let old_claim = opaque(&key, "https://a.example", json!({"caps": ["a2a.send.bob"]}));
    assert_error(
        &send_as_alice(&app, &old_claim).await,
        403,
        "capability_missing",
    );
}

both_engines!(an_opaque_subject_is_refused_by_name_and_scopes_are_capabilities);
async fn an_opaque_subject_is_refused_by_name_and_scopes_are_capabilities(app: TestApp) {
    let jwks = JwksServer::start().await;
    let key = Key::generate(&app.dir, "k1", Algorithm::RS256).await;
    jwks.publish(&[&key]);
    let app = jwks.app(&app, &[]).await;
    let token = opaque(&key, "https://a.example", json!({"caps": ["a2a.send.bob"]}));
    let r = send_as_alice(&app, &token).await;
    assert_refused(&r, "A2A_MAILBOX_JWT_SUBJECT_CLAIM");
    let message = r.body["message"].as_str().unwrap().to_lowercase();
    assert!(message.contains("agent id"), "{message}");

    let scoped = |scope: Value| {
        let mut c = claims("alice", json!([]));
        c.as_object_mut().unwrap().remove("caps");
        for (k, v) in scope.as_object().unwrap() {
            c[k] = v.clone();
        }
        key.sign(&c)
    };
    let granted = [
        json!({"scope": "openid a2a.send.bob"}),
        json!({"scp": "a2a.send.bob"}),
        json!({"scp": ["openid", "a2a.send.bob"]}),
    ];
    for grant in granted {
        let token = scoped(grant.clone());
        app.send_ok(&token, &task("alice", "bob")).await;
        let r = app.send(&token, &task("alice", "carol")).await;
        assert_error(&r, 403, "capability_missing");
    }
    for none in [
        json!({"scope": "openid profile"}),
        json!({"scp": ["openid"]}),
    ] {
        let r = send_as_alice(&app, &scoped(none.clone())).await;
        assert_error(&r, 403, "capability_missing");
    }
}

// ----- start-up, on SQLite: the binary spawned by hand ---------------------------------------

/// `FOO_BAR` and `--foo-bar` alike: lower case, `_` for `-`.
fn plain(text: &str) -> String {
    text.to_lowercase().replace('-', "_")
}

#[tokio::test]
async fn a_jwks_url_refuses_another_key_source_and_a_remote_plain_http_url() {
    let dir = scratch();
    let key = Key::generate(&dir, "k1", Algorithm::RS256).await;
    let public = key.public_pem().await;
    let public = public.to_str().unwrap();
    let url = JwksServer::start().await.url.clone();
    let secret = ("A2A_MAILBOX_JWT_SECRET", "a-secret-of-the-tests");
    let jwks = ("A2A_MAILBOX_JWT_JWKS_URL", url.as_str());
    let cases = [
        (
            vec![jwks, secret, ("A2A_MAILBOX_JWT_ALGORITHM", "RS256")],
            "jwt_algorithm",
        ),
        (
            vec![jwks, secret, ("A2A_MAILBOX_JWT_ALGORITHM", "HS256")],
            "jwt_algorithm",
        ),
        (
            vec![jwks, secret, ("A2A_MAILBOX_JWT_PUBLIC_KEY_FILE", public)],
            "jwt_public_key_file",
        ),
        (
            vec![
                ("A2A_MAILBOX_JWT_JWKS_URL", "http://192.0.2.1/jwks"),
                secret,
            ],
            "jwt_jwks_url",
        ),
    ];
    let mut last = String::new();
    for (i, (env, named)) in cases.iter().enumerate() {
        let case = dir.join(format!("case-{i}"));
        std::fs::create_dir_all(&case).unwrap();
        let (status, stderr) = Serve::spawn(&case, env).exit().await;
        assert!(!status.success(), "{env:?}: started");
        assert!(
            plain(&stderr).contains(named),
            "{env:?}: names {named}: {stderr}"
        );
        last = stderr;
    }
    // The remote plain-http URL: the message names the variable and says what is allowed.
    assert!(last.contains("A2A_MAILBOX_JWT_JWKS_URL"), "{last}");
    let stderr = last.to_lowercase();
    assert!(
        stderr.contains("https")
            && ["loopback", "127.0.0.1", "localhost"]
                .iter()
                .any(|w| stderr.contains(w)),
        "the refusal says https or loopback: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn with_a_jwks_url_no_secret_is_needed_and_a_failed_first_fetch_is_not_fatal() {
    let dir = scratch();
    let jwks = JwksServer::start().await;
    let key = Key::generate(&dir, "k1", Algorithm::EdDSA).await;
    jwks.publish(&[&key]);
    jwks.set(Mode::Down);
    let mut serve = Serve::spawn(&dir, &[("A2A_MAILBOX_JWT_JWKS_URL", &jwks.url)]);
    let api = Api {
        address: serve.address().await,
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
        secret: "not-the-servers".into(),
    };
    jwks.until_requests(1).await;
    // The provider is back: the first token naming its key fetches the set.
    jwks.set(Mode::Up);
    api.send_ok(&key.sign(&alice_claims()), &task("alice", "bob"))
        .await;
    assert_eq!(jwks.requests(), 2);
    assert_error(
        &send_as_alice(&api, &api.alice()).await,
        401,
        "unauthenticated",
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}
