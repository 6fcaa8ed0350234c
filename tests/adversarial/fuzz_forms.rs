//! The fuzzer's requests to the dashboard's forms (with the session's CSRF token, or not) and
//! to MCP (a session of the bearer, or revision 2026-07-28 with its headers).

use serde_json::{json, Value};

use super::fuzz_gen::*;
use super::fuzz_surfaces::{body, id, FReq};

pub fn dashboard_form(rng: &mut Rng, token: &str) -> FReq {
    let target = "${in_flight}:${lease}";
    let (path, fields): (String, Vec<(&str, &str)>) = match rng.below(6) {
        0 | 1 => (
            "/dashboard/leases/act".into(),
            vec![
                ("csrf", "${csrf}"),
                ("task", target),
                (
                    "action",
                    *rng.pick(&["requeue", "force_error", "cancel", "x"]),
                ),
                ("duplicate_risk", "operator_accepted"),
                ("message", "m"),
                ("reason", "r"),
            ],
        ),
        2 => (
            "/dashboard/leases/act".into(),
            vec![
                ("csrf", "${csrf}"),
                ("all", "force_error"),
                ("message", "m"),
                ("row", target),
            ],
        ),
        3 => (
            "/dashboard/retry".into(),
            vec![("csrf", "${csrf}"), ("row", target)],
        ),
        4 => (
            format!("/dashboard/tasks/{}/cancel", id(rng)),
            vec![("csrf", "${csrf}"), ("reason", "r")],
        ),
        _ => (
            "/dashboard/login".into(),
            vec![("login_csrf", "x"), ("token", "${jwt}")],
        ),
    };
    let body = form_body(rng, &fields);
    FReq {
        content_type: form_media(rng),
        body: Some(body),
        ..FReq::new(token, "POST", path)
    }
}

const MCP_TOOLS: &[(&str, &str)] = &[
    (
        "send_task",
        r#"{"recipient": "${recipient}", "intent_text": "hi", "content": [{"type": "json", "value": "${payload}"}], "metadata": {"k": "${payload}"}}"#,
    ),
    (
        "next_task",
        r#"{"recipient": "${recipient}", "wait_ms": 0}"#,
    ),
    (
        "post_result",
        r#"{"task_id": "${in_flight}", "lease_id": "${lease}", "status": "ok", "content": [{"type": "json", "value": "${payload}"}]}"#,
    ),
    ("next_result", r#"{"wait_ms": 0}"#),
    ("get_task", r#"{"task_id": "${queued}"}"#),
    ("list_tasks", r#"{"limit": 10, "state": "queued"}"#),
    ("cancel_task", r#"{"task_id": "${queued}", "reason": "r"}"#),
    (
        "heartbeat",
        r#"{"task_id": "${in_flight}", "lease_id": "${lease}"}"#,
    ),
];

pub fn mcp(rng: &mut Rng, token: &str) -> FReq {
    let (tool, args) = *rng.pick(MCP_TOOLS);
    let args: Value = serde_json::from_str(args).expect("a tool's arguments");
    let mut params = match rng.below(6) {
        0..=2 => json!({"name": tool, "arguments": args}),
        3 => json!({"taskId": id(rng)}),
        4 => json!({"cursor": "x"}),
        _ => json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "fuzz", "version": "1"}}),
    };
    let method = match rng.below(6) {
        0..=2 => "tools/call",
        3 => *rng.pick(&["tasks/get", "tasks/cancel", "tasks/result"]),
        4 => "tasks/list",
        _ => "initialize",
    };
    let modern = rng.chance(35);
    if modern {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities":
                {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        });
        if rng.chance(50) {
            params["task"] = json!({"ttl": 60000});
        }
    }
    let envelope = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let body = body(rng, &envelope);
    let mut r = FReq::json(token, "/mcp".into(), body, rng);
    let accept = [
        "application/json, text/event-stream",
        "application/json",
        "*/*",
        "x/y",
    ];
    r.headers
        .push(("Accept".into(), (*rng.pick(&accept)).into()));
    if modern {
        r.headers
            .push(("MCP-Protocol-Version".into(), "2026-07-28".into()));
        if rng.chance(60) {
            let name = if rng.chance(50) {
                tool.to_owned()
            } else {
                text(rng, 5)
            };
            r.headers.push(("Mcp-Name".into(), name));
        }
        if rng.chance(50) {
            r.headers.push(("Mcp-Method".into(), method.into()));
        }
    } else if rng.chance(90) {
        r.headers
            .push(("Mcp-Session-Id".into(), "${mcp_session}".into()));
    }
    r
}
