//! The HTTP+JSON binding: `POST /message:send`, `GET /tasks/{id}`, `POST /tasks/{id}:cancel`,
//! `GET /tasks`, and the streams `POST /message:stream` and `GET`/`POST /tasks/{id}:subscribe`
//! under the agent's base URL. A2A errors answer their HTTP status with
//! `{"error": {code, status, message, details}}`; refusals of the transport stay native.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::{Map, Value};

use super::errors::{A2aError, Fault, Kind};
use super::methods::Call;
use super::request::{check_version, key_header, recipient};
use super::stream::{self, Framing, Opens};
use crate::auth::Caller;
use crate::http::extract::{BodyFault, JsonBytes, NUL_REFUSED};
use crate::http::respond::Answer;
use crate::http::state::State;

/// Which method a route runs.
#[derive(Clone, Copy)]
enum Method {
    Send,
    Get,
    Cancel,
    List,
}

/// Runs `method` with `params` for the request's agent and answers in this binding's shape.
async fn run(
    state: &State,
    caller: &Caller,
    req: &HttpRequest,
    method: Method,
    params: Result<Value, A2aError>,
) -> Answer {
    let recipient = recipient(req)?;
    let outcome = async {
        let (params, key) = checked(req, params)?;
        let trace = crate::http::trace::from_headers(req.headers());
        let call = Call {
            state,
            caller,
            recipient: &recipient,
            key_header: key.as_deref(),
            trace: trace.as_ref(),
        };
        match method {
            Method::Send => call.send_message(&params).await,
            Method::Get => call.get_task(&params).await,
            Method::Cancel => call.cancel_task(&params).await,
            Method::List => call.list_tasks(&params).await,
        }
    };
    match outcome.await {
        Ok(body) => Ok(HttpResponse::Ok().json(body)),
        Err(Fault::A2a(e)) => Ok(e.rest_response()),
        Err(Fault::Native(e)) => Err(e),
    }
}

/// What every route checks before its method runs: the A2A version, its params, and the
/// `Idempotency-Key` header.
fn checked(
    req: &HttpRequest,
    params: Result<Value, A2aError>,
) -> Result<(Value, Option<String>), A2aError> {
    check_version(req)?;
    Ok((params?, key_header(req)?))
}

/// The body as params: a JSON object (an empty body is `{}`).
fn body_params(body: &JsonBytes) -> Result<Map<String, Value>, A2aError> {
    let Some(parsed) = body.parse() else {
        return Ok(Map::new());
    };
    match parsed {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(A2aError::new(
            Kind::InvalidRequest,
            "the body must be a JSON object",
        )),
        Err(BodyFault::Malformed(e)) => Err(A2aError::new(
            Kind::InvalidRequest,
            format!("the body is not valid JSON: {e}"),
        )),
        Err(BodyFault::Nul(_)) => Err(A2aError::new(Kind::InvalidParams, NUL_REFUSED)),
        Err(BodyFault::TooDeep(why)) => Err(A2aError::params(why)),
    }
}

/// The query string as params (every value a string; the methods read numbers and booleans
/// from strings as ProtoJSON allows), plus the task id of the path when there is one.
fn query_params(req: &HttpRequest) -> Result<Value, A2aError> {
    let pairs = web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .map_err(|e| A2aError::new(Kind::InvalidRequest, format!("bad query string: {e}")))?;
    let mut params: Map<String, Value> = pairs
        .into_inner()
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    with_path_id(req, &mut params);
    Ok(Value::Object(params))
}

fn with_path_id(req: &HttpRequest, params: &mut Map<String, Value>) {
    if let Some(id) = req.match_info().get("id") {
        params.insert("id".into(), Value::String(id.to_owned()));
    }
}

pub async fn send_message(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: JsonBytes,
) -> Answer {
    let params = body_params(&body).map(Value::Object);
    run(&state, &caller, &req, Method::Send, params).await
}

pub async fn get_task(state: State, caller: Caller, req: HttpRequest) -> Answer {
    run(&state, &caller, &req, Method::Get, query_params(&req)).await
}

pub async fn cancel_task(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: JsonBytes,
) -> Answer {
    let params = body_params(&body).map(|mut p| {
        with_path_id(&req, &mut p);
        Value::Object(p)
    });
    run(&state, &caller, &req, Method::Cancel, params).await
}

pub async fn list_tasks(state: State, caller: Caller, req: HttpRequest) -> Answer {
    run(&state, &caller, &req, Method::List, query_params(&req)).await
}

/// `POST /message:stream`: SendStreamingMessage.
pub async fn stream_message(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: JsonBytes,
) -> Answer {
    let params = body_params(&body).map(Value::Object);
    run_stream(state, caller, &req, Opens::Send, params).await
}

/// `GET /tasks/{id}:subscribe` (the query's params) and `POST` (the body's): SubscribeToTask.
pub async fn subscribe(state: State, caller: Caller, req: HttpRequest, body: JsonBytes) -> Answer {
    let params = if body.bytes.is_some() {
        body_params(&body).map(|mut p| {
            with_path_id(&req, &mut p);
            Value::Object(p)
        })
    } else {
        query_params(&req)
    };
    run_stream(state, caller, &req, Opens::Subscribe, params).await
}

async fn run_stream(
    state: State,
    caller: Caller,
    req: &HttpRequest,
    opens: Opens,
    params: Result<Value, A2aError>,
) -> Answer {
    let recipient = recipient(req)?;
    let opened = async {
        let (params, key_header) = checked(req, params)?;
        let request = stream::Request {
            state,
            caller,
            recipient,
            key_header,
            trace: crate::http::trace::from_headers(req.headers()),
            params,
        };
        stream::respond(request, opens, Framing::Rest).await
    };
    match opened.await {
        Ok(response) => Ok(response),
        Err(Fault::A2a(e)) => Ok(e.rest_response()),
        Err(Fault::Native(e)) => Err(e),
    }
}

/// Push-notification routes.
pub async fn no_push(_: Caller, req: HttpRequest) -> Answer {
    refuse(
        &req,
        Kind::PushNotificationNotSupported,
        "push notifications are not supported: poll with GetTask",
    )
}

fn refuse(req: &HttpRequest, kind: Kind, message: &str) -> Answer {
    recipient(req)?;
    let e = check_version(req)
        .err()
        .unwrap_or_else(|| A2aError::new(kind, message));
    Ok(e.rest_response())
}
