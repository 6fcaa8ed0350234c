//! Revision 2026-07-28 (docs/mcp.md#revision-2026-07-28): requests that carry their own
//! context. Each names its revision, client and capabilities in `params._meta`; there is no
//! `initialize` and no session, and `server/discover` says what the server offers. The tasks
//! extension (`io.modelcontextprotocol/tasks`) is negotiated per request: a `tools/call` of
//! `send_task` becomes a task only when the request's capabilities list the extension.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::rpc::{success, RpcError};
use super::tasks::{self, call_tool_result};
use super::tools::{self, ToolCall};
use crate::domain::{ResultStatus, TaskStatus};
use crate::error::MailboxError;

/// The revision served this way.
pub const VERSION: &str = "2026-07-28";
/// The tasks extension's name.
const TASKS: &str = "io.modelcontextprotocol/tasks";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The revision a request's `_meta` names, if it carries its own context.
pub fn asked(params: &Value) -> Option<&str> {
    params.get("_meta")?.get(META_VERSION)?.as_str()
}

/// Whether the request's capabilities list the tasks extension.
fn wants_tasks(params: &Value) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(META_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS))
        .is_some_and(Value::is_object)
}

/// A refusal of this revision: an HTTP status and a JSON-RPC error, with `data` when given.
fn refuse(
    status: StatusCode,
    id: &Value,
    code: i64,
    message: &str,
    data: Option<Value>,
) -> HttpResponse {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        crate::http::json::set(&mut error, "data", data);
    }
    HttpResponse::build(status).json(json!({"jsonrpc": "2.0", "id": id, "error": error}))
}

/// The name a request's `Mcp-Name` header must repeat, for the methods that have one.
fn routed_name<'p>(method: &str, params: &'p Value) -> Option<&'p str> {
    match method {
        "tools/call" => params.get("name")?.as_str(),
        "tasks/get" | "tasks/cancel" | "tasks/update" => params.get("taskId")?.as_str(),
        _ => None,
    }
}

/// The headers a proxy may route by must say what the body says (-32020 otherwise).
fn headers_agree(req: &HttpRequest, method: &str, params: &Value, version: &str) -> Option<String> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .map(|v| v.to_str().unwrap_or("\u{fffd}"))
    };
    if let Some(v) = header("mcp-protocol-version").filter(|v| *v != version) {
        return Some(format!(
            "MCP-Protocol-Version {v:?} is not the request's {version:?}"
        ));
    }
    if let Some(m) = header("mcp-method").filter(|m| *m != method) {
        return Some(format!(
            "Mcp-Method {m:?} is not the request's method {method:?}"
        ));
    }
    let name = header("mcp-name")?;
    let plain = routed_name(method, params).unwrap_or_default();
    (header_value(name).as_deref() != Some(plain))
        .then(|| format!("Mcp-Name {name:?} is not the request's {plain:?}"))
}

/// What a header that may carry a value in the RFC 2047-style `=?base64?<value>?=` form says:
/// the value decoded (UTF-8), or the header as it is; `None` when the encoded form does not
/// decode.
fn header_value(raw: &str) -> Option<String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
    use base64::Engine;
    let Some(encoded) = raw
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Some(raw.to_owned());
    };
    let bytes = STANDARD
        .decode(encoded)
        .or_else(|_| STANDARD_NO_PAD.decode(encoded))
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// Answers one request of revision 2026-07-28 (or refuses the revision it names).
pub async fn answer(
    call: &ToolCall<'_>,
    req: &HttpRequest,
    id: &Value,
    method: &str,
    params: &Value,
    version: &str,
) -> Result<HttpResponse, MailboxError> {
    if version != VERSION {
        let data = json!({"supported": [VERSION], "requested": version});
        let why = format!("protocol version {version:?} is not served this way: use {VERSION}");
        return Ok(refuse(
            StatusCode::BAD_REQUEST,
            id,
            -32022,
            &why,
            Some(data),
        ));
    }
    if let Some(why) = headers_agree(req, method, params, version) {
        return Ok(refuse(StatusCode::BAD_REQUEST, id, -32020, &why, None));
    }
    let task_method = matches!(method, "tasks/get" | "tasks/cancel" | "tasks/update");
    if task_method && !wants_tasks(params) {
        let data = json!({"requiredCapabilities": {"extensions": {TASKS: {}}}});
        let why = format!("{method} needs the {TASKS} extension in the request's capabilities");
        return Ok(refuse(
            StatusCode::BAD_REQUEST,
            id,
            -32021,
            &why,
            Some(data),
        ));
    }
    let outcome = match method {
        "server/discover" => Ok(discover()),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(tools::list(false)),
        "tools/call" => tools_call(call, params).await,
        "tasks/get" => get(call, params).await,
        "tasks/cancel" => call.cancel(params).await.map(|_| json!({})),
        "tasks/update" => Err(RpcError::params(
            "no task of this server waits for input: there is nothing to update",
        )),
        other => {
            let why = format!("no method {other:?} in protocol revision {VERSION}");
            return Ok(refuse(StatusCode::NOT_FOUND, id, -32601, &why, None));
        }
    };
    match outcome {
        Ok(mut result) => {
            if result.get("resultType").is_none() {
                crate::http::json::set(&mut result, "resultType", json!("complete"));
            }
            Ok(HttpResponse::Ok().json(success(id, result)))
        }
        Err(RpcError::Rpc {
            code,
            message,
            data,
        }) => Ok(refuse(StatusCode::OK, id, code, &message, data)),
        Err(RpcError::Native(e)) => Err(e),
    }
}

/// `server/discover`: the revision, the tools and the tasks extension.
fn discover() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": [VERSION],
        "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo":
            {"name": "a2a-mailbox", "version": env!("CARGO_PKG_VERSION")}},
    })
}

/// `tools/call`: `send_task` becomes a task when the request takes the tasks extension.
async fn tools_call(call: &ToolCall<'_>, params: &Value) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    if !tools::exists(name) {
        return Err(RpcError::params(format!("unknown tool {name:?}")));
    }
    let args = call.arguments(params)?;
    if name == "send_task" && wants_tasks(params) {
        return Ok(match call.queue(&args, None).await? {
            Ok(s) => {
                let mut task = call.task_2026(&s);
                crate::http::json::set(&mut task, "resultType", json!("task"));
                task
            }
            Err(e) => tools::call_result(Err(e)),
        });
    }
    Ok(tools::call_result(call.run(name, &args).await))
}

/// `tasks/get`: the task, with the recipient's result once it is completed (delivered to its
/// sender, as a drain would) or the error it failed with.
async fn get(call: &ToolCall<'_>, params: &Value) -> Result<Value, RpcError> {
    let mut s = call.readable(params).await?;
    if tasks::is_terminal(&s) {
        let mut all = vec![s];
        call.state.mailbox.deliver(call.caller, &mut all).await?;
        let missing = || crate::error::MailboxError::internal("a delivered task went missing");
        s = all.pop().ok_or_else(missing)?;
    }
    let mut task = call.task_2026(&s);
    match outcome(&s) {
        Some(Ok(result)) => crate::http::json::set(&mut task, "result", result),
        Some(Err(error)) => crate::http::json::set(&mut task, "error", error),
        None => {}
    }
    Ok(task)
}

/// A terminal task's payload: the result of a completed one, the error of a failed one.
fn outcome(s: &TaskStatus) -> Option<Result<Value, Value>> {
    let r = s.result.as_ref()?;
    if r.status != ResultStatus::Error {
        return Some(Ok(call_tool_result(s)));
    }
    let message = r
        .error_message
        .clone()
        .unwrap_or_else(|| "the task failed".into());
    let result = call_tool_result(s);
    Some(Err(json!({"code": -32000, "message": message,
        "data": crate::http::json::field(&result, "structuredContent")})))
}
