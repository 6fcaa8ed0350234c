//! One nesting limit for every free-form JSON value a caller supplies (content values, metadata,
//! A2A data parts and metadata, MCP tool arguments): the same payload is accepted or refused
//! alike on every surface, a refusal stores nothing, a body far deeper is refused before it is
//! parsed, and whatever is stored (rows written before the limit included) still lists, leases
//! and shows on the dashboard.

use serde_json::{json, Value};
use uuid::Uuid;

use super::facade::{a2a_request, Binding};
use super::kit::{call, plant_body, Req};
use crate::common::*;

/// The default limit (A2A_MAILBOX_MAX_JSON_DEPTH).
const LIMIT: usize = 64;

/// `levels` arrays nested around a number: a value `levels` deep.
pub fn nested(levels: usize) -> Value {
    (0..levels).fold(json!(1), |v, _| json!([v]))
}

/// A body deeper than the 128 levels serde_json reads by default, read without a limit.
fn unbounded(text: &str) -> Value {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    Value::deserialize(&mut de).unwrap_or_else(|e| panic!("not JSON ({e}): {text:.200}"))
}

/// A task alice sends bob whose one content value is `value`.
fn with_value(value: Value) -> Value {
    let mut t = task("alice", "bob");
    t["content"] = json!([{"type": "json", "value": value}]);
    t
}

fn a2a_message(data: Value) -> Value {
    json!({"message": {"messageId": Uuid::new_v4().to_string(), "role": "ROLE_USER",
        "parts": [{"text": "deep"}, {"data": data}]}})
}

/// One surface a free-form value can arrive through.
#[derive(Clone, Copy, Debug)]
enum Surface {
    Send,
    SendMetadata,
    Batch,
    JsonRpc,
    HttpJson,
    Mcp,
}

impl Surface {
    const ALL: [Surface; 6] = [
        Surface::Send,
        Surface::SendMetadata,
        Surface::Batch,
        Surface::JsonRpc,
        Surface::HttpJson,
        Surface::Mcp,
    ];

    /// Sends `value` through this surface as alice: whether it was accepted. A refusal must be
    /// the surface's refusal of bad input, nothing else.
    async fn send(self, app: &TestApp, value: Value) -> bool {
        let alice = app.alice();
        let r = match self {
            Surface::Send => app.send(&alice, &with_value(value)).await,
            Surface::SendMetadata => {
                let mut t = task("alice", "bob");
                t["metadata"] = json!({"deep": value});
                app.send(&alice, &t).await
            }
            Surface::Batch => {
                let body = json!({"tasks": [task("alice", "bob"), with_value(value)]});
                app.post("/a2a/tasks/batch", &alice, &body).await
            }
            Surface::JsonRpc | Surface::HttpJson => {
                let b = match self {
                    Surface::JsonRpc => Binding::JsonRpc,
                    _ => Binding::HttpJson,
                };
                let mut params = a2a_message(value);
                params["configuration"] = json!({"returnImmediately": true});
                let req = a2a_request(b, "bob", "SendMessage", params);
                call(app, &req, Some(&format!("Bearer {alice}"))).await
            }
            Surface::Mcp => {
                let args = with_value(value);
                let r = mcp(
                    app,
                    &alice,
                    "tools/call",
                    json!({"name": "send_task", "arguments": args}),
                )
                .await;
                assert_eq!(r.status, 200, "{self:?}: {}", r.text);
                return match r.body.get("error") {
                    None => {
                        assert_eq!(r.body["result"]["isError"], false, "{self:?}: {}", r.text);
                        true
                    }
                    Some(e) => {
                        assert_eq!(e["code"], -32602, "{self:?}: {}", r.text);
                        false
                    }
                };
            }
        };
        let rpc_error = &r.body["error"]["code"];
        match (self, r.status) {
            (Surface::JsonRpc, 200) if rpc_error.is_null() => true,
            (Surface::JsonRpc, 200) => {
                assert_eq!(*rpc_error, -32602, "{self:?}: {}", r.text);
                false
            }
            (_, 200 | 201) => true,
            (Surface::HttpJson, 400) => {
                assert_eq!(r.body["error"]["status"], "INVALID_ARGUMENT", "{}", r.text);
                false
            }
            (_, 400) => {
                assert_eq!(r.body["code"], "invalid_request", "{self:?}: {}", r.text);
                false
            }
            (_, s) => panic!("{self:?}: HTTP {s}: {}", r.text),
        }
    }
}

/// One MCP request of `token` in a session of its own (revision 2025-11-25).
async fn mcp(app: &TestApp, token: &str, method: &str, params: Value) -> Resp {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params":
        {"protocolVersion": "2025-11-25", "capabilities": {},
         "clientInfo": {"name": "depth", "version": "1"}}});
    let r = app.post("/mcp", token, &init).await;
    let session = r.header("mcp-session-id").expect("a session").to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    app.post_with(
        "/mcp",
        token,
        &body,
        &[("Mcp-Session-Id", &session), ("Accept", "application/json")],
    )
    .await
}

/// Every listing, the queue snapshot, the dashboard's leases and each task's page answer (the
/// harness fails on a 500 and on a dropped connection); the answers are read without a
/// recursion limit, as what they show may be deeper than a default parser reads.
async fn everything_still_reads(app: &TestApp) {
    let ops = full_ops(app);
    let mut ids = Vec::new();
    for (token, role) in [
        (&ops, "any"),
        (&app.alice(), "sender"),
        (&app.bob(), "recipient"),
    ] {
        let r = app
            .get(&format!("/a2a/tasks?role={role}&limit=200"), token)
            .await;
        assert_eq!(r.status, 200, "{role}: {}", r.text);
        let tasks = unbounded(&r.text)["tasks"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        ids.extend(
            tasks
                .iter()
                .map(|t| t["task"]["id"].as_str().unwrap().to_owned()),
        );
    }
    for path in ["/a2a/queue?limit=200", "/a2a/tasks/recent"] {
        let r = app.get(path, &ops).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
    let cookie = format!("a2a_dashboard={ops}");
    ids.sort();
    ids.dedup();
    let pages = ids.iter().map(|id| format!("/dashboard/tasks/{id}"));
    for path in std::iter::once("/dashboard/leases".to_owned()).chain(pages) {
        let r = app
            .raw_with(
                reqwest::Method::GET,
                &path,
                None,
                None,
                None,
                &[("Cookie", &cookie)],
            )
            .await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
    }
}

/// Leases every queued task of bob's: each lease answers, and holds what was sent.
async fn every_lease_answers(app: &TestApp) {
    let bob = app.bob();
    loop {
        let r = app.next(&bob, "").await;
        assert_eq!(r.status, 200, "{}", r.text);
        if unbounded(&r.text)["task"].is_null() {
            break;
        }
    }
}

both_engines!(the_issues_depth_bomb_is_refused_and_nothing_is_stored);
async fn the_issues_depth_bomb_is_refused_and_nothing_is_stored(app: TestApp) {
    let req = a2a_request(
        Binding::JsonRpc,
        "bob",
        "SendMessage",
        a2a_message(nested(122)),
    );
    let r = call(&app, &req, Some(&format!("Bearer {}", app.alice()))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["error"]["code"], -32602, "{}", r.text);
    app.assert_empty("a refused depth bomb").await;
    everything_still_reads(&app).await;
    every_lease_answers(&app).await;
}

both_engines!(one_limit_on_every_surface);
async fn one_limit_on_every_surface(app: TestApp) {
    for surface in Surface::ALL {
        // The value of a metadata key sits one level below the metadata itself.
        let at = if matches!(surface, Surface::SendMetadata) {
            LIMIT - 1
        } else {
            LIMIT
        };
        let before = app.queue(&full_ops(&app), "?limit=200").await["tasks"].clone();
        assert!(
            !surface.send(&app, nested(at + 1)).await,
            "{surface:?}: one too deep was accepted"
        );
        let after = app.queue(&full_ops(&app), "?limit=200").await["tasks"].clone();
        assert_eq!(before, after, "{surface:?}: a refusal stored something");
        assert!(
            surface.send(&app, nested(at)).await,
            "{surface:?}: the limit was refused"
        );
        everything_still_reads(&app).await;
    }
    // A result's content values: the same limit.
    let bob = app.bob();
    for (levels, status) in [(LIMIT + 1, 400), (LIMIT, 201)] {
        let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
        let leased = loop {
            let (got, lease) = app.lease(&bob).await.expect("a task");
            if got["id"] == id.as_str() {
                break lease;
            }
        };
        let mut result = result(&id, "ok", "deep");
        result["content"] = json!([{"type": "json", "value": nested(levels)}]);
        result["lease_id"] = leased["lease_id"].clone();
        let r = app.post_result(&bob, &result).await;
        assert_eq!(r.status, status, "a result {levels} deep: {}", r.text);
        let state = &app.status_ok(&id).await["state"];
        assert_eq!(
            *state,
            if status == 201 {
                "result_pending"
            } else {
                "in_flight"
            }
        );
    }
    everything_still_reads(&app).await;
    every_lease_answers(&app).await;
    assert!(app.drain(&app.alice()).await.is_some());
}

/// Bodies up to 4 MiB, so that a 2 MB one meets the depth rule, not the size limit.
fn big_bodies() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_MAX_BODY_BYTES", "4194304")
}

both_engines!(
    a_body_far_deeper_is_refused_before_it_is_parsed,
    config = big_bodies
);
async fn a_body_far_deeper_is_refused_before_it_is_parsed(app: TestApp) {
    let bomb = vec![b'['; 2 * 1024 * 1024 - 1024];
    let alice = format!("Bearer {}", app.alice());
    for path in [
        "/a2a/tasks",
        "/a2a/tasks/batch",
        "/a2a/agents/bob/message:send",
        "/a2a/agents/bob/jsonrpc",
        "/mcp",
    ] {
        let mut req = Req::post(path, &json!(null)).header("A2A-Version", "1.0");
        req.body = Some(bomb.clone());
        let r = call(&app, &req, Some(&alice)).await;
        match path {
            "/a2a/agents/bob/jsonrpc" => {
                assert_eq!(r.status, 200, "{path}: {}", r.text);
                assert_eq!(r.body["error"]["code"], -32602, "{path}: {}", r.text);
            }
            "/mcp" => {
                assert_eq!(r.status, 400, "{path}: {}", r.text);
                assert_eq!(r.body["error"]["code"], -32602, "{path}: {}", r.text);
            }
            "/a2a/agents/bob/message:send" => {
                assert_eq!(r.status, 400, "{path}: {}", r.text);
                assert_eq!(
                    r.body["error"]["status"], "INVALID_ARGUMENT",
                    "{path}: {}",
                    r.text
                );
            }
            _ => assert_error(&r, 400, "invalid_request"),
        }
    }
    // Deep JSON inside a string is no nesting at all; and the server still serves.
    let mut t = task("alice", "bob");
    t["intent_text"] = json!("[".repeat(10_000));
    app.send_ok(&app.alice(), &t).await;
    everything_still_reads(&app).await;
}

both_engines!(rows_stored_before_the_limit_still_list_lease_and_show);
async fn rows_stored_before_the_limit_still_list_lease_and_show(app: TestApp) {
    // A row as the facade stored messages before the limit: the content value, and the whole
    // message again in the metadata, the task's body 130 levels deep.
    let id = app.send_ok(&app.alice(), &task("alice", "bob")).await;
    let mut body = with_value(nested(126));
    body["id"] = json!(id);
    body["metadata"] = json!({"urn:a2a-mailbox:v1:a2a": {"message": {"messageId": "m",
        "role": "ROLE_USER", "parts": [{"data": nested(124)}]}}});
    let body = serde_json::to_string(&body).unwrap();
    plant_body(&app, &id, &body).await;
    everything_still_reads(&app).await;
    let r = app.next(&app.bob(), "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        unbounded(&r.text)["task"]["content"][0]["value"],
        nested(126)
    );
    everything_still_reads(&app).await;
    for b in [Binding::JsonRpc, Binding::HttpJson] {
        let req = a2a_request(b, "bob", "GetTask", json!({"id": id}));
        let r = call(&app, &req, Some(&format!("Bearer {}", full_ops(&app)))).await;
        assert_eq!(r.status, 200, "{b:?}: {}", r.text);
    }
}

/// The deepest setting the service starts with.
fn deepest() -> AppConfig {
    AppConfig::default().env("A2A_MAILBOX_MAX_JSON_DEPTH", "100")
}

both_engines!(
    the_typed_client_leases_a_task_at_the_deepest_setting,
    config = deepest
);
async fn the_typed_client_leases_a_task_at_the_deepest_setting(app: TestApp) {
    assert!(Surface::Send.send(&app, nested(100)).await);
    assert!(Surface::JsonRpc.send(&app, nested(100)).await);
    assert!(!Surface::HttpJson.send(&app, nested(101)).await);
    let bob = a2a_mailbox_client::Client::new(app.address.clone(), app.bob()).unwrap();
    for _ in 0..2 {
        let leased = bob
            .next_task(std::time::Duration::ZERO)
            .await
            .expect("the lease reads");
        let leased = leased.expect("a task");
        let json = leased.task.content.iter().find_map(|c| match c {
            a2a_mailbox_client::types::Content::Json { value } => Some(value.clone()),
            _ => None,
        });
        assert_eq!(json, Some(nested(100)));
    }
    everything_still_reads(&app).await;
}
