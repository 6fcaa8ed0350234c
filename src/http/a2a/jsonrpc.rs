//! The JSON-RPC 2.0 binding: one POST endpoint per agent. Every A2A error is a JSON-RPC error
//! object sent with HTTP 200 (the `id` echoed); refusals of the transport (authentication,
//! capability, media type, size, storage) keep their native status and body.

use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::errors::{A2aError, Fault, Kind};
use super::methods::Call;
use super::request::{check_version, key_header, recipient};
use super::stream::{self, Framing, Opens};
use crate::auth::Caller;
use crate::error::MailboxError;
use crate::http::extract::{BodyFault, JsonBytes, NUL_REFUSED};
use crate::http::state::State;

pub async fn endpoint(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: JsonBytes,
) -> Result<HttpResponse, MailboxError> {
    let recipient = recipient(&req)?;
    let (request, nul) = match body.parse() {
        Some(Ok(v)) => (v, false),
        Some(Err(BodyFault::Nul(v))) => (v, true),
        // Too deep to be read: not a document the method's params could come from.
        Some(Err(BodyFault::TooDeep(why))) => {
            return Ok(reply(Value::Null, Err(A2aError::params(why))));
        }
        None | Some(Err(BodyFault::Malformed(_))) => {
            let e = A2aError::new(Kind::ParseError, "the body is not a JSON document");
            return Ok(reply(Value::Null, Err(e)));
        }
    };
    let (id, method, params) = match envelope(&request) {
        Ok(parts) => parts,
        Err((id, e)) => return Ok(reply(id, Err(e))),
    };
    if nul {
        return Ok(reply(
            id,
            Err(A2aError::new(Kind::InvalidParams, NUL_REFUSED)),
        ));
    }
    if let Err(e) = check_version(&req) {
        return Ok(reply(id, Err(e)));
    }
    let key = match key_header(&req) {
        Ok(k) => k,
        Err(e) => return Ok(reply(id, Err(e))),
    };
    let opens = match method {
        "SendStreamingMessage" => Some(Opens::Send),
        "SubscribeToTask" => Some(Opens::Subscribe),
        _ => None,
    };
    if let Some(opens) = opens {
        let request = stream::Request {
            state,
            caller,
            recipient,
            key_header: key,
            trace: crate::http::trace::from_headers(req.headers()),
            params,
        };
        return match stream::respond(request, opens, Framing::Rpc(id.clone())).await {
            Ok(response) => Ok(response),
            Err(Fault::A2a(e)) => Ok(reply(id, Err(e))),
            Err(Fault::Native(e)) => Err(e),
        };
    }
    let trace = crate::http::trace::from_headers(req.headers());
    let call = Call {
        state: &state,
        caller: &caller,
        recipient: &recipient,
        key_header: key.as_deref(),
        trace: trace.as_ref(),
    };
    let outcome = match method {
        "SendMessage" => call.send_message(&params).await,
        "GetTask" => call.get_task(&params).await,
        "CancelTask" => call.cancel_task(&params).await,
        "ListTasks" => call.list_tasks(&params).await,
        other => Err(refused_method(other).into()),
    };
    match outcome {
        Ok(result) => Ok(reply(id, Ok(result))),
        Err(Fault::A2a(e)) => Ok(reply(id, Err(e))),
        Err(Fault::Native(e)) => Err(e),
    }
}

/// The request's `id`, `method` and `params`, or why it is not a JSON-RPC 2.0 request (with the
/// `id` to answer, `null` when it could not be read).
fn envelope(request: &Value) -> Result<(Value, &str, Value), (Value, A2aError)> {
    let invalid = |id: Value, why: &str| (id, A2aError::new(Kind::InvalidRequest, why));
    let Some(fields) = request.as_object() else {
        let why = if request.is_array() {
            "batch requests are not supported: send one request per call"
        } else {
            "a JSON-RPC request is an object"
        };
        return Err(invalid(Value::Null, why));
    };
    let id = match fields.get("id") {
        None => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id.clone(),
        Some(_) => {
            return Err(invalid(
                Value::Null,
                "id must be a string, a number or null",
            ))
        }
    };
    if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "jsonrpc must be \"2.0\""));
    }
    let Some(method) = fields.get("method").and_then(Value::as_str) else {
        return Err(invalid(id, "method must be a string"));
    };
    let params = match fields.get("params") {
        None | Some(Value::Null) => json!({}),
        Some(p) => p.clone(),
    };
    Ok((id, method, params))
}

/// The answer to a method the facade does not serve.
fn refused_method(method: &str) -> A2aError {
    match method {
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => A2aError::new(
            Kind::PushNotificationNotSupported,
            format!("{method}: push notifications are not supported; poll with GetTask"),
        ),
        other => A2aError::new(
            Kind::MethodNotFound,
            format!(
                "no method {other:?}: use SendMessage, SendStreamingMessage, GetTask, \
                 SubscribeToTask, CancelTask or ListTasks"
            ),
        ),
    }
}

fn reply(id: Value, outcome: Result<Value, A2aError>) -> HttpResponse {
    let body = match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e.rpc_error()}),
    };
    HttpResponse::Ok().json(body)
}
