//! Calling an agent of the facade: JSON-RPC and HTTP+JSON requests with `A2A-Version: 1.0`.

use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

/// The base path of `agent`'s A2A endpoints.
pub fn base(agent: &str) -> String {
    format!("/a2a/agents/{agent}")
}

/// A JSON-RPC call of `method` on `agent`, with `headers` added to `A2A-Version: 1.0`.
pub async fn rpc_with(
    api: &Api,
    agent: &str,
    token: &str,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
) -> Resp {
    let body = json!({"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params});
    let mut all = vec![("A2A-Version", "1.0")];
    all.extend_from_slice(headers);
    api.post_with(&format!("{}/jsonrpc", base(agent)), token, &body, &all)
        .await
}

pub async fn rpc(api: &Api, agent: &str, token: &str, method: &str, params: Value) -> Resp {
    rpc_with(api, agent, token, method, params, &[]).await
}

/// A call that must succeed: its `result`.
#[track_caller]
pub fn rpc_result(r: &Resp) -> Value {
    let b = r.expect(200);
    assert_eq!(b["jsonrpc"], "2.0", "{}", r.text);
    assert!(b.get("error").is_none(), "{}: {}", r.what, r.text);
    b["result"].clone()
}

/// A call that must fail with JSON-RPC `code` at HTTP 200: its `error`, whose first ErrorInfo
/// must carry `reason`.
#[track_caller]
pub fn rpc_error(r: &Resp, code: i64, reason: &str) -> Value {
    let e = r.expect(200)["error"].clone();
    assert_eq!(e["code"], code, "{}: {}", r.what, r.text);
    assert!(
        e["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{}",
        r.text
    );
    let info = &e["data"][0];
    assert_eq!(
        info["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{}",
        r.text
    );
    assert_eq!(info["domain"], "a2a-protocol.org", "{}", r.text);
    assert_eq!(info["reason"], reason, "{}", r.text);
    e
}

/// An HTTP+JSON request to `path` under `agent`'s base, with `A2A-Version: 1.0`.
pub async fn rest(
    api: &Api,
    method: Method,
    agent: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Resp {
    let body = body.map(|b| serde_json::to_vec(&b).unwrap());
    let ct = body.as_ref().map(|_| "application/json");
    api.raw_with(
        method,
        &format!("{}{path}", base(agent)),
        Some(&format!("Bearer {token}")),
        ct,
        body,
        &[("A2A-Version", "1.0")],
    )
    .await
}

/// An HTTP+JSON error: the status, `error.status` and the first ErrorInfo's reason.
#[track_caller]
pub fn rest_error(r: &Resp, status: u16, name: &str, reason: &str) -> Value {
    let e = r.expect(status)["error"].clone();
    assert_eq!(e["code"], status, "{}", r.text);
    assert_eq!(e["status"], name, "{}", r.text);
    assert_eq!(e["details"][0]["reason"], reason, "{}", r.text);
    assert_eq!(
        e["details"][0]["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{}",
        r.text
    );
    e
}

/// A user message with a fresh `messageId` and one text part.
pub fn message(text: &str) -> Value {
    json!({"messageId": Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// SendMessage params that answer at once.
pub fn send_now(message: Value) -> Value {
    json!({"message": message, "configuration": {"returnImmediately": true}})
}

/// Sends `text` from `token`'s agent to `agent` and answers the Task.
pub async fn send_task(api: &Api, agent: &str, token: &str, text: &str) -> Value {
    let r = rpc(api, agent, token, "SendMessage", send_now(message(text))).await;
    rpc_result(&r)["task"].clone()
}

/// The A2A state of a task as `token` reads it through GetTask.
pub async fn state_of(api: &Api, agent: &str, token: &str, id: &str) -> String {
    let r = rpc(api, agent, token, "GetTask", json!({"id": id})).await;
    rpc_result(&r)["status"]["state"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The recipient leases the next task natively and posts `outcome` (status, content, ...) for it.
pub async fn answer(api: &Api, recipient_token: &str, outcome: Value) -> String {
    let (id, lease) = api.lease_some(recipient_token).await;
    let mut body = outcome;
    body["task_id"] = json!(id);
    body["lease_id"] = lease["lease_id"].clone();
    api.post_result(recipient_token, &body).await.expect(201);
    id
}
