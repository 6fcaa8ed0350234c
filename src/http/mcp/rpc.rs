//! JSON-RPC 2.0 as MCP's Streamable HTTP carries it: one message per POST, its kind (a request,
//! a notification, a client's response), and the errors a request can answer.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use serde_json::{json, Value};

use crate::error::{ErrorCode, MailboxError};
use crate::http::error::error_body;

/// Why a request failed: a JSON-RPC error (with its `data`, if any), or a refusal of the
/// transport (a storage fault, the limits on waiting requests) answered with its native status
/// and body.
#[derive(Debug)]
pub enum RpcError {
    Rpc {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    Native(MailboxError),
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError::Rpc {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32602, invalid params (also MCP's "task not found" and "unknown tool").
    pub fn params(message: impl Into<String>) -> RpcError {
        RpcError::new(-32602, message)
    }

    /// -32601, method not found.
    pub fn method(message: impl Into<String>) -> RpcError {
        RpcError::new(-32601, message)
    }
}

/// A mailbox error as an MCP request answers it (docs/mcp.md#refusals): a refusal of the
/// operation (a capability, what the caller may see, the task's state) is -32602 with the native
/// error body in `data`, answered with HTTP 200; a refusal of the transport (the token, the
/// body's size or type, the limits on waiting requests) and a fault of the server keep their
/// native status and body.
impl From<MailboxError> for RpcError {
    fn from(e: MailboxError) -> RpcError {
        if is_transport(e.code) {
            return RpcError::Native(e);
        }
        RpcError::Rpc {
            code: -32602,
            message: e.message.clone(),
            data: Some(json!(error_body(&e))),
        }
    }
}

/// Whether a code refuses the request's transport or reports a fault of the server, rather than
/// refusing the operation it asks for.
fn is_transport(code: ErrorCode) -> bool {
    use ErrorCode::*;
    matches!(
        code,
        Unauthenticated
            | PayloadTooLarge
            | HeadersTooLarge
            | RequestTimeout
            | UnsupportedMediaType
            | MethodNotAllowed
            | TooManyWaiting
            | Overloaded
            | StorageUnavailable
            | Internal
    )
}

/// One message a client posted.
pub enum Message {
    /// A request: its id, method and params (`{}` when absent).
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification, or a client's answer to a request of the server's: nothing to answer.
    NoAnswer,
}

/// Reads one JSON-RPC 2.0 message, or why it is not one.
pub fn message(v: &Value) -> Result<Message, (Value, String)> {
    let Some(fields) = v.as_object() else {
        let why = if v.is_array() {
            "batches are not supported: send one JSON-RPC message per request"
        } else {
            "a JSON-RPC message is an object"
        };
        return Err((Value::Null, why.into()));
    };
    let id = fields.get("id").cloned();
    if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id.unwrap_or(Value::Null), "jsonrpc must be \"2.0\"".into()));
    }
    let Some(method) = fields.get("method") else {
        return if fields.contains_key("result") || fields.contains_key("error") {
            Ok(Message::NoAnswer)
        } else {
            Err((id.unwrap_or(Value::Null), "a message needs a method".into()))
        };
    };
    let Some(method) = method.as_str() else {
        return Err((id.unwrap_or(Value::Null), "method must be a string".into()));
    };
    let Some(id) = id else {
        return Ok(Message::NoAnswer);
    };
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        return Err((Value::Null, "id must be a string or an integer".into()));
    }
    let params = match fields.get("params") {
        None | Some(Value::Null) => json!({}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => return Err((id, "params must be an object".into())),
    };
    Ok(Message::Request {
        id,
        method: method.to_owned(),
        params,
    })
}

/// A JSON-RPC success.
pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error.
pub fn failure(id: &Value, code: i64, message: &str) -> Value {
    failure_with(id, code, message, None)
}

/// A JSON-RPC error with its `data`, when given.
pub fn failure_with(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        crate::http::json::set(&mut error, "data", data);
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// A refusal at the HTTP level (no session, an unknown one, a message that is not JSON-RPC),
/// with a JSON-RPC error that has no id as its body.
pub fn refuse(status: StatusCode, code: i64, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(failure(&Value::Null, code, message))
}
