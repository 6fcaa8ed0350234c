//! The MCP server with every kind of token: each tool and each MCP task method meets the native
//! API's gates (401 at the HTTP level, the native refusal as an `isError` result, an invisible
//! task exactly like a missing one), and a refusal changes nothing.

use serde_json::{json, Value};

use super::kit::*;
use super::world::{Fix, Sweep};
use crate::common::{Resp, TestApp};

#[derive(Clone, Copy, Debug)]
enum Op {
    SendTask,
    SendAsTheSender,
    LeaseForTheRecipient,
    /// `get_task` of the fixture's task in this state.
    GetTask(usize),
    /// `tasks/get` of the fixture's task in this state.
    TasksGet(usize),
    Heartbeat,
    PostResult,
    CancelQueued,
    TasksCancelInFlight,
    /// `tasks/result` of the fixture's answered task: it must not deliver someone else's result.
    TasksResultPending,
    ListTasks,
    TasksList,
    /// Revision 2026-07-28 (no session, the tasks extension asked for in the request):
    /// `send_task` as a task, `tasks/get` and `tasks/cancel`.
    SendTask2026,
    TasksGet2026(usize),
    TasksCancel2026,
}

/// Columns as in the native table: caps-less, wildcard, scoped, scoped operator.
const TABLE: &[(Op, [Want; 4])] = &[
    (Op::SendTask, [CM, OK, CSM, CM]),
    (Op::SendAsTheSender, [SM, SM, SM, SM]),
    (Op::LeaseForTheRecipient, [CM, OK, CSM, CM]),
    (Op::GetTask(0), [H, H, H, H]),
    (Op::GetTask(1), [H, H, H, H]),
    (Op::GetTask(2), [H, H, H, H]),
    (Op::GetTask(3), [H, H, H, H]),
    (Op::GetTask(4), [H, H, H, H]),
    (Op::TasksGet(0), [H, H, H, H]),
    (Op::TasksGet(2), [H, H, H, H]),
    (Op::Heartbeat, [H, H, H, H]),
    (Op::PostResult, [H, H, H, H]),
    (Op::CancelQueued, [H, H, H, H]),
    (Op::TasksCancelInFlight, [H, H, H, H]),
    (Op::TasksResultPending, [H, H, H, H]),
    (Op::ListTasks, [R, R, R, R]),
    (Op::TasksList, [R, R, R, R]),
    (Op::SendTask2026, [CM, OK, CSM, CM]),
    (Op::TasksGet2026(0), [H, H, H, H]),
    (Op::TasksGet2026(3), [H, H, H, H]),
    (Op::TasksCancel2026, [H, H, H, H]),
];

/// A request of revision 2026-07-28: its context, with the tasks extension, in `_meta`.
fn modern(method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "mallory", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    rpc(method, params)
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

fn tool(name: &str, args: Value) -> Value {
    rpc("tools/call", json!({"name": name, "arguments": args}))
}

fn message(op: Op, fix: &Fix) -> Value {
    let ids = fix.ids();
    let (agent, sender) = (&fix.recipient, &fix.sender);
    let lease = json!({"task_id": fix.in_flight, "lease_id": fix.lease});
    match op {
        Op::SendTask => tool(
            "send_task",
            json!({"recipient": agent, "intent_text": "hi"}),
        ),
        Op::SendAsTheSender => tool(
            "send_task",
            json!({"recipient": agent, "intent_text": "hi", "sender": sender}),
        ),
        Op::LeaseForTheRecipient => tool("next_task", json!({"recipient": agent})),
        Op::GetTask(i) => tool("get_task", json!({"task_id": ids[i]})),
        Op::TasksGet(i) => rpc("tasks/get", json!({"taskId": ids[i]})),
        Op::Heartbeat => tool("heartbeat", lease),
        Op::PostResult => {
            let mut args = lease;
            args["status"] = json!("ok");
            tool("post_result", args)
        }
        Op::CancelQueued => tool("cancel_task", json!({"task_id": fix.queued})),
        Op::TasksCancelInFlight => rpc("tasks/cancel", json!({"taskId": fix.in_flight})),
        Op::TasksResultPending => rpc("tasks/result", json!({"taskId": fix.pending})),
        Op::ListTasks => tool("list_tasks", json!({"limit": 1000})),
        Op::TasksList => rpc("tasks/list", json!({})),
        Op::SendTask2026 => modern(
            "tools/call",
            json!({"name": "send_task", "arguments": {"recipient": agent, "intent_text": "hi"}}),
        ),
        Op::TasksGet2026(i) => modern("tasks/get", json!({"taskId": ids[i]})),
        Op::TasksCancel2026 => modern("tasks/cancel", json!({"taskId": fix.queued})),
    }
}

/// The MCP answer as a class: a tool's native refusal, MCP's "task not found", or success.
fn got(r: &Resp) -> Got {
    match r.status {
        401 if r.body["code"] == "unauthenticated" => return Got::Unauth,
        200 => {}
        s => return Got::Other(format!("{s} {}", short(&r.text))),
    }
    let result = &r.body["result"];
    if r.body["error"]["code"] == -32602 {
        return Got::Hidden;
    }
    if result["isError"] == true {
        let code = result["structuredContent"]["code"]
            .as_str()
            .unwrap_or_default();
        return match code {
            "not_found" | "unknown_task" => Got::Hidden,
            _ => Got::Deny(code.to_owned()),
        };
    }
    if result.is_object() {
        Got::Ok
    } else {
        Got::Other(short(&r.text))
    }
}

/// Initializes a session for `auth`: its id, or the refusal.
async fn session(app: &TestApp, auth: Option<&str>) -> Result<String, Resp> {
    let init = rpc(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "mallory", "version": "1"}}),
    );
    let r = call(app, &Req::post("/mcp", &init), auth).await;
    match r.header("mcp-session-id") {
        Some(id) if r.status == 200 => Ok(id.to_owned()),
        _ => Err(r),
    }
}

both_engines!(the_mcp_server_with_every_token);
async fn the_mcp_server_with_every_token(app: TestApp) {
    let mut sweep = Sweep::new(&app).await;
    for (op, row) in TABLE {
        for tok in Tok::ALL {
            let case = format!("MCP {op:?} as {tok:?}");
            let auth = tok.auth(&app);
            let stateless = matches!(
                op,
                Op::SendTask2026 | Op::TasksGet2026(_) | Op::TasksCancel2026
            );
            let r = match session(&app, auth.as_deref()).await {
                _ if stateless => {
                    let req = Req::post("/mcp", &message(*op, &sweep.fix));
                    call(&app, &req, auth.as_deref()).await
                }
                Ok(id) => {
                    let req = Req::post("/mcp", &message(*op, &sweep.fix))
                        .header("Mcp-Session-Id", &id)
                        .header("Accept", "application/json");
                    call(&app, &req, auth.as_deref()).await
                }
                Err(refused) => refused,
            };
            sweep.judge_one(&case, want(*row, tok), &got(&r), &r).await;
        }
    }
    sweep.finish("the MCP server under attack").await;
}
