//! `/mcp` as an OAuth protected resource (RFC 9728), opt-in with `A2A_MAILBOX_MCP_RESOURCE`:
//! its metadata document, the `resource_metadata` of every 401, tokens for that resource only;
//! and the reference client (`mcp` 1.30.0, `scripts/mcp/oauth_e2e.py`) finding its way from a
//! bare 401 to the authorization endpoint of the authorization server the document names.

use std::process::Command;
use std::sync::Mutex;

use jsonwebtoken::Algorithm;
use reqwest::Method;
use serde_json::{json, Value};

use super::wire::{rpc, Mcp};
use crate::common::python::{python_for, run_checked, scripts};
use crate::common::*;

const METADATA: &str = "/.well-known/oauth-protected-resource/mcp";
const SCOPES: &str = "a2a.send.bob a2a.respond.alice";

/// (mailbox port, authorization server port) of each server started by [`resource_server`].
static PORTS: Mutex<Vec<(u16, u16)>> = Mutex::new(Vec::new());

/// Two distinct free loopback ports (held together while chosen, then let go).
fn free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// The server on a port chosen beforehand, so that its resource URL can name it.
fn on_port(port: u16) -> AppConfig {
    AppConfig::default()
        .env("A2A_MAILBOX_BIND", &format!("127.0.0.1:{port}"))
        .env(
            "A2A_MAILBOX_MCP_RESOURCE",
            &format!("http://127.0.0.1:{port}/mcp"),
        )
}

/// A resource server whose authorization servers are ours (on a port the test serves), then
/// another; with scopes.
fn resource_server() -> AppConfig {
    let (port, as_port) = free_ports();
    PORTS.lock().unwrap().push((port, as_port));
    let issuers = format!("http://127.0.0.1:{as_port},https://login.example");
    on_port(port)
        .env("A2A_MAILBOX_OAUTH_ISSUERS", &issuers)
        .env("A2A_MAILBOX_OAUTH_SCOPES", SCOPES)
}

/// A resource server naming the JWT issuers, with an audience for the native API.
fn resource_server_beside_an_audience() -> AppConfig {
    on_port(free_ports().0)
        .env(
            "A2A_MAILBOX_JWT_ISSUER",
            "https://a.example,https://b.example",
        )
        .env("A2A_MAILBOX_JWT_AUDIENCE", "https://api.example")
}

/// The resource URL of this server: `/mcp` at the address it listens on, the port it was given.
fn resource(app: &TestApp) -> String {
    format!("{}/mcp", app.address)
}

/// alice's token (she may send to bob) with these extra claims, HS256.
fn alice_with(app: &TestApp, extra: Value) -> String {
    let mut claims =
        json!({"sub": "alice", "exp": now_ms() / 1000 + 3600, "caps": ["a2a.send.bob"]});
    for (k, v) in extra.as_object().unwrap() {
        claims[k] = v.clone();
    }
    app.jwt(&claims, Algorithm::HS256)
}

/// `initialize` on /mcp with `token` (or none).
async fn initialize(app: &TestApp, token: Option<&str>) -> Resp {
    let body = rpc(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}),
    );
    let auth = token.map(|t| format!("Bearer {t}"));
    app.raw_with(
        Method::POST,
        "/mcp",
        auth.as_deref(),
        Some("application/json"),
        Some(serde_json::to_vec(&body).unwrap()),
        &[("Accept", "application/json, text/event-stream")],
    )
    .await
}

/// A 401 on /mcp whose `WWW-Authenticate` points at this server's metadata document.
#[track_caller]
fn assert_points_at_metadata(r: &Resp, app: &TestApp) {
    assert_eq!(r.status, 401, "{}: {}", r.what, r.text);
    let challenge = r.header("www-authenticate").unwrap_or_default();
    let wanted = format!("resource_metadata=\"{}{METADATA}\"", app.address);
    assert!(
        challenge.starts_with("Bearer") && challenge.contains(&wanted),
        "{}: WWW-Authenticate {challenge:?} lacks {wanted}",
        r.what
    );
}

/// The MCP endpoint serves `token`: it initializes and lists the tools.
async fn serves(app: &TestApp, token: &str) {
    let (mcp, _) = Mcp::init(app, token, "2025-11-25").await;
    let tools = mcp.result("tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"send_task"), "{tools}");
}

/// The metadata document: 200 JSON.
async fn metadata(app: &TestApp) -> Value {
    let r = app.get_anon(METADATA).await;
    let doc = r.expect(200).clone();
    let kind = r.header("content-type").unwrap_or_default();
    assert!(kind.starts_with("application/json"), "{kind}");
    doc
}

both_engines!(
    the_reference_client_goes_from_a_401_to_our_authorization_server,
    config = resource_server
);
async fn the_reference_client_goes_from_a_401_to_our_authorization_server(app: TestApp) {
    let port: u16 = app.address.rsplit(':').next().unwrap().parse().unwrap();
    let as_port = PORTS
        .lock()
        .unwrap()
        .iter()
        .find(|(p, _)| *p == port)
        .map(|(_, a)| *a)
        .expect("the server listens on the port chosen for it");
    let resource = resource(&app);
    assert_eq!(resource, format!("http://127.0.0.1:{port}/mcp"));

    assert_points_at_metadata(&initialize(&app, None).await, &app);
    let doc = metadata(&app).await;
    assert_eq!(doc["resource"], json!(resource), "{doc}");
    let ours = format!("http://127.0.0.1:{as_port}");
    assert_eq!(
        doc["authorization_servers"],
        json!([ours, "https://login.example"]),
        "{doc}"
    );
    assert_eq!(
        doc["scopes_supported"],
        json!(["a2a.send.bob", "a2a.respond.alice"])
    );
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]), "{doc}");

    // Tokens for this resource only; `aud` may be a list holding it.
    serves(&app, &alice_with(&app, json!({"aud": resource}))).await;
    let listed = alice_with(&app, json!({"aud": ["https://other.example", resource]}));
    serves(&app, &listed).await;
    for other in [
        alice_with(&app, json!({"aud": "https://other.example/mcp"})),
        alice_with(&app, json!({})),
    ] {
        assert_points_at_metadata(&initialize(&app, Some(&other)).await, &app);
        // Without A2A_MAILBOX_JWT_AUDIENCE the native API takes any audience.
        app.send_ok(&other, &task("alice", "bob")).await;
    }
    let resource_token = alice_with(&app, json!({"aud": resource}));
    app.send_ok(&resource_token, &task("alice", "bob")).await;

    let python = tokio::task::spawn_blocking(|| python_for("mcp", "A2A_MAILBOX_MCP_PYTHON"))
        .await
        .unwrap();
    let mut cmd = Command::new(&python);
    cmd.arg(scripts("mcp").join("oauth_e2e.py"))
        .args([&app.address, &as_port.to_string(), SCOPES]);
    tokio::task::spawn_blocking(move || run_checked(&mut cmd, "the mcp OAuth discovery script"))
        .await
        .unwrap();
}

both_engines!(
    the_resource_audience_holds_on_mcp_and_the_jwt_audience_elsewhere,
    config = resource_server_beside_an_audience
);
async fn the_resource_audience_holds_on_mcp_and_the_jwt_audience_elsewhere(app: TestApp) {
    let doc = metadata(&app).await;
    assert_eq!(doc["resource"], json!(resource(&app)), "{doc}");
    assert_eq!(
        doc["authorization_servers"],
        json!(["https://a.example", "https://b.example"]),
        "without A2A_MAILBOX_OAUTH_ISSUERS, the JWT issuers: {doc}"
    );
    assert_eq!(doc["scopes_supported"], json!([]), "{doc}");

    let for_mcp = alice_with(
        &app,
        json!({"aud": resource(&app), "iss": "https://a.example"}),
    );
    let for_api = alice_with(
        &app,
        json!({"aud": "https://api.example", "iss": "https://b.example"}),
    );
    serves(&app, &for_mcp).await;
    assert_points_at_metadata(&initialize(&app, Some(&for_api)).await, &app);
    app.send_ok(&for_api, &task("alice", "bob")).await;
    assert_error(
        &app.send(&for_mcp, &task("alice", "bob")).await,
        401,
        "unauthenticated",
    );
    // The issuers still hold on /mcp.
    let elsewhere = alice_with(
        &app,
        json!({"aud": resource(&app), "iss": "https://c.example"}),
    );
    assert_points_at_metadata(&initialize(&app, Some(&elsewhere)).await, &app);
}

both_engines!(without_a_resource_there_is_no_metadata_and_no_pointer);
async fn without_a_resource_there_is_no_metadata_and_no_pointer(app: TestApp) {
    assert_eq!(app.get_anon(METADATA).await.status, 404);
    let r = initialize(&app, None).await;
    assert_eq!(r.status, 401, "{}", r.text);
    let challenge = r.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with("Bearer") && !challenge.contains("resource_metadata"),
        "{challenge:?}"
    );
    let other = alice_with(&app, json!({"aud": "https://other.example/mcp"}));
    serves(&app, &other).await;
}
