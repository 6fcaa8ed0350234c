//! The MCP server (docs/mcp.md): one Streamable HTTP endpoint, `POST /mcp`, that serves the
//! mailbox's operations as MCP tools and its tasks as MCP tasks, with the native API's bearer
//! token. A translation over the mailbox's own operations, like the A2A facade: no rule of the
//! mailbox is written here a second time.
//!
//! Not in the OpenAPI document: the route follows the MCP specification, which MCP clients are
//! built from.

mod modern;
mod resource;
mod result_stream;
mod rpc;
mod schemas;
mod session;
mod tasks;
mod tools;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::extract::{BodyFault, JsonBytes, NUL_REFUSED};
use super::respond::routes;
use super::state::State;
use crate::error::MailboxError;
use rpc::{failure_with, refuse, success, Message, RpcError};
use session::Session;
use tools::ToolCall;

/// The header that carries a session's id.
const SESSION: &str = "Mcp-Session-Id";

pub fn configure(cfg: &mut web::ServiceConfig) {
    routes!(cfg;
        "/mcp" => POST endpoint;
        "/.well-known/oauth-protected-resource/mcp" => GET resource::metadata);
}

/// `POST /mcp`: one JSON-RPC message.
pub async fn endpoint(
    state: State,
    resource::McpCaller(caller): resource::McpCaller,
    req: HttpRequest,
    body: JsonBytes,
) -> Result<HttpResponse, MailboxError> {
    let parsed = match body.parse() {
        Some(Ok(v)) => v,
        Some(Err(BodyFault::Nul(_))) => {
            return Ok(refuse(StatusCode::BAD_REQUEST, -32602, NUL_REFUSED))
        }
        Some(Err(BodyFault::TooDeep(why))) => {
            return Ok(refuse(StatusCode::BAD_REQUEST, -32602, &why))
        }
        None | Some(Err(BodyFault::Malformed(_))) => {
            let why = "the body is not a JSON document";
            return Ok(refuse(StatusCode::BAD_REQUEST, -32700, why));
        }
    };
    let (id, method, params) = match rpc::message(&parsed) {
        Ok(Message::Request { id, method, params }) => (id, method, params),
        Ok(Message::NoAnswer) => return Ok(HttpResponse::Accepted().finish()),
        Err((_, why)) => return Ok(refuse(StatusCode::BAD_REQUEST, -32600, &why)),
    };
    let call = ToolCall {
        state: &state,
        caller: &caller,
    };
    if let Some(version) = modern::asked(&params) {
        return modern::answer(&call, &req, &id, &method, &params, version).await;
    }
    if method == "initialize" {
        return Ok(initialize(&call, &id, &params));
    }
    let session = match req.headers().get(SESSION).map(|v| v.to_str()) {
        None => {
            let why = "Mcp-Session-Id is required: send initialize first";
            return Ok(refuse(StatusCode::BAD_REQUEST, -32600, why));
        }
        Some(raw) => raw
            .ok()
            .and_then(|raw| session::check(&state.mcp_sessions, caller.sub.as_str(), raw)),
    };
    let Some(session) = session else {
        let why =
            "no such session (it is not one this mailbox issued to this caller): initialize again";
        return Ok(refuse(StatusCode::NOT_FOUND, -32600, why));
    };
    if method == "tasks/result" && session.has_tasks() {
        let s = match call.readable(&params).await {
            Ok(s) => s,
            Err(e) => return answer(&id, Err(e)),
        };
        if accepts_events(&req) {
            let stream = result_stream::respond(state.clone(), caller.clone(), id.clone(), s);
            return match stream.await {
                Ok(response) => Ok(response),
                Err(e) => answer(&id, Err(e)),
            };
        }
        let wait = state.a2a.block;
        let outcome = async {
            let s = call.settled(s, wait).await?;
            if !tasks::is_terminal(&s) {
                return Err(tasks::still_working(&s, wait));
            }
            call.result(s).await
        };
        return answer(&id, outcome.await);
    }
    answer(&id, dispatch(&call, session, &method, &params).await)
}

/// Whether the client takes an answer as a stream of events.
fn accepts_events(req: &HttpRequest) -> bool {
    req.headers()
        .get_all("accept")
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"))
}

/// The answer to a request: JSON-RPC, or a refusal of the transport with its native status.
fn answer(id: &Value, outcome: Result<Value, RpcError>) -> Result<HttpResponse, MailboxError> {
    match outcome {
        Ok(result) => Ok(HttpResponse::Ok().json(success(id, result))),
        Err(RpcError::Rpc {
            code,
            message,
            data,
        }) => Ok(HttpResponse::Ok().json(failure_with(id, code, &message, data))),
        Err(RpcError::Native(e)) => Err(e),
    }
}

/// `initialize`: the revision both sides speak, what the server offers, and a new session.
fn initialize(call: &ToolCall<'_>, id: &Value, params: &Value) -> HttpResponse {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = session::negotiate(asked);
    let session = Session { version };
    let mut capabilities = json!({"tools": {}});
    if session.has_tasks() {
        let tasks = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
        crate::http::json::set(&mut capabilities, "tasks", tasks);
    }
    let result = json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": "a2a-mailbox", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "A durable task mailbox between agents. send_task gives a task to another agent \
            (run it as a task to wait for the answer); next_task and post_result are a worker's loop.",
    });
    let id_header = session::issue(&call.state.mcp_sessions, call.caller.sub.as_str(), version);
    HttpResponse::Ok()
        .insert_header((SESSION, id_header))
        .json(success(id, result))
}

/// Every other request of a session.
async fn dispatch(
    call: &ToolCall<'_>,
    session: Session,
    method: &str,
    params: &Value,
) -> Result<Value, RpcError> {
    match method {
        "ping" => Ok(json!({})),
        "tools/list" => Ok(tools::list(session.has_tasks())),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            if !tools::exists(name) {
                return Err(RpcError::params(format!("unknown tool {name:?}")));
            }
            let args = call.arguments(params)?;
            match params.get("task").filter(|_| session.has_tasks()) {
                Some(task) if name == "send_task" => call.send_as_task(&args, task).await,
                Some(_) => Err(RpcError::params(format!(
                    "tool {name:?} does not run as a task (only send_task does)"
                ))),
                None => Ok(tools::call_result(call.run(name, &args).await)),
            }
        }
        "tasks/get" if session.has_tasks() => call.get(params).await,
        "tasks/list" if session.has_tasks() => call.list(params).await,
        "tasks/cancel" if session.has_tasks() => call.cancel(params).await,
        other => Err(RpcError::method(format!(
            "no method {other:?} in protocol revision {}",
            session.version
        ))),
    }
}
