//! HTTP routes: thin handlers that parse, call the mailbox and map errors.

mod extract;
pub mod openapi;
pub mod ops;

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::{Caller, Verifier};
use crate::domain::{AgentId, PostResult, QueueState};
use crate::error::{ApiError, ErrorCode};
use crate::mailbox::tasks::QueueFilter;
use crate::mailbox::{IdemRequest, Mailbox, Reply};

pub use extract::{
    json_config, path_config as extract_path_config, query_config as extract_query_config,
};

/// Shared by every handler; holds no per-request state.
pub struct AppState {
    pub mailbox: Mailbox,
    pub verifier: Verifier,
    pub max_body_bytes: usize,
    /// The policy `POST /a2a/scheduler/tick` runs (from `A2A_MAILBOX_AUTO_RETRY_*`).
    pub scheduler_policy: crate::mailbox::retry::RetryPolicy,
}

pub type State = web::Data<Arc<AppState>>;

pub const MAX_WAIT_MS: u64 = 30_000;
pub const DEFAULT_LIMIT: i64 = 10;
pub const MAX_LIMIT: i64 = 1000;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/version", web::get().to(version))
        .route("/metrics", web::get().to(metrics))
        .route("/a2a/tasks", web::post().to(send_task))
        .route("/a2a/tasks/next", web::get().to(next_task))
        .route("/a2a/tasks/recent", web::get().to(recent_tasks))
        .route("/a2a/tasks/{id}", web::get().to(get_task))
        .route("/a2a/results", web::post().to(post_result))
        .route("/a2a/results/next", web::get().to(next_result))
        .route("/a2a/results/recent", web::get().to(recent_results))
        .route("/a2a/queue", web::get().to(queue))
        .configure(ops::configure)
        .configure(openapi::configure);
}

/// Every unmatched path answers the contract's error shape.
pub async fn not_found_route(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::new(
        ErrorCode::NotFound,
        format!("no route {} {}", req.method(), req.path()),
    ))
}

/// Records request latency per route pattern.
pub async fn observe_latency(
    req: ServiceRequest,
    next: actix_web::middleware::Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let start = Instant::now();
    let state = req.app_data::<State>().cloned();
    let method = req.method().to_string();
    let res = next.call(req).await?;
    if let Some(state) = state {
        let route = res
            .request()
            .match_pattern()
            .unwrap_or_else(|| "unmatched".to_owned());
        state.mailbox.metrics.observe(
            &method,
            &route,
            res.status().as_u16(),
            start.elapsed().as_secs_f64(),
        );
    }
    Ok(res)
}

pub(crate) fn reply(r: Reply) -> HttpResponse {
    let mut res = HttpResponse::build(
        StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
    );
    if r.replayed {
        res.insert_header(("Idempotent-Replayed", "true"));
    }
    res.json(r.body)
}

pub(crate) fn idem_request(
    req: &HttpRequest,
    body: &Value,
) -> Result<Option<IdemRequest>, ApiError> {
    match req.headers().get("Idempotency-Key") {
        None => Ok(None),
        Some(v) => {
            let key = v.to_str().map_err(|_| {
                ApiError::invalid("the Idempotency-Key header must be visible ASCII")
            })?;
            IdemRequest::new(key, req.method().as_str(), req.path(), body).map(Some)
        }
    }
}

fn wait(wait_ms: Option<u64>) -> Result<Duration, ApiError> {
    match wait_ms.unwrap_or(0) {
        w if w <= MAX_WAIT_MS => Ok(Duration::from_millis(w)),
        w => Err(ApiError::invalid(format!(
            "wait_ms {w} is out of range 0..={MAX_WAIT_MS}"
        ))),
    }
}

pub(crate) fn limit(limit: Option<i64>) -> i64 {
    limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
}

fn non_negative(name: &str, v: Option<i64>) -> Result<Option<i64>, ApiError> {
    match v {
        Some(v) if v < 0 => Err(ApiError::invalid(format!("{name} must not be negative"))),
        v => Ok(v),
    }
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"kind": "health", "status": "ok"}))
}

async fn readyz(state: State) -> Result<HttpResponse, ApiError> {
    state.mailbox.db.ping().await?;
    Ok(HttpResponse::Ok().json(json!({"kind": "ready", "status": "ok"})))
}

async fn version(state: State) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "kind": "version",
        "name": env!("CARGO_PKG_NAME"),
        "version": env!("CARGO_PKG_VERSION"),
        "engine": format!("{:?}", state.mailbox.db.engine()).to_lowercase(),
    }))
}

async fn metrics(state: State) -> Result<HttpResponse, ApiError> {
    let gauges = state.mailbox.gauges().await?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(state.mailbox.metrics.render(&gauges)))
}

async fn send_task(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let idem = idem_request(&req, &body)?;
    let r = state.mailbox.send(&caller, idem.as_ref(), &body).await?;
    Ok(reply(r))
}

#[derive(Deserialize)]
struct NextTaskQuery {
    recipient: Option<String>,
    wait_ms: Option<u64>,
}

async fn next_task(
    state: State,
    caller: Caller,
    q: web::Query<NextTaskQuery>,
) -> Result<HttpResponse, ApiError> {
    let recipient = match &q.recipient {
        Some(r) => AgentId::parse(r).map_err(ApiError::invalid)?,
        None => caller.sub.clone(),
    };
    let wait = wait(q.wait_ms)?;
    let leased = state
        .mailbox
        .lease_next(&caller, recipient.as_str(), wait)
        .await?;
    let (task, lease) = match leased {
        Some((t, l)) => (Some(t), Some(l)),
        None => (None, None),
    };
    Ok(HttpResponse::Ok().json(json!({"kind": "a2a_task_opt", "task": task, "lease": lease})))
}

#[derive(Deserialize)]
struct LimitQuery {
    limit: Option<i64>,
}

async fn recent_tasks(
    state: State,
    caller: Caller,
    q: web::Query<LimitQuery>,
) -> Result<HttpResponse, ApiError> {
    let tasks = state.mailbox.recent_tasks(&caller, limit(q.limit)).await?;
    Ok(HttpResponse::Ok().json(json!({"kind": "a2a_tasks", "tasks": tasks})))
}

pub(crate) fn path_uuid(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::invalid(format!("{raw:?} is not a UUID")))
}

async fn get_task(
    state: State,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = path_uuid(&id)?;
    let status = state.mailbox.task_status(&caller, id).await?;
    let mut body = serde_json::to_value(status).map_err(ApiError::internal)?;
    body["kind"] = json!("a2a_task_status");
    Ok(HttpResponse::Ok().json(body))
}

async fn post_result(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let input: PostResult = serde_json::from_value(body.0.clone())
        .map_err(|e| ApiError::invalid(format!("invalid result: {e}")))?;
    let idem = idem_request(&req, &body)?;
    let r = state
        .mailbox
        .post_result(&caller, idem.as_ref(), &input)
        .await?;
    Ok(reply(r))
}

#[derive(Deserialize)]
struct WaitQuery {
    wait_ms: Option<u64>,
}

async fn next_result(
    state: State,
    caller: Caller,
    q: web::Query<WaitQuery>,
) -> Result<HttpResponse, ApiError> {
    let result = state
        .mailbox
        .drain_result(&caller, wait(q.wait_ms)?)
        .await?;
    Ok(HttpResponse::Ok().json(json!({"kind": "a2a_result_opt", "result": result})))
}

async fn recent_results(
    state: State,
    caller: Caller,
    q: web::Query<LimitQuery>,
) -> Result<HttpResponse, ApiError> {
    let results = state
        .mailbox
        .recent_results(&caller, limit(q.limit))
        .await?;
    Ok(HttpResponse::Ok().json(json!({"kind": "a2a_results", "results": results})))
}

#[derive(Deserialize)]
struct QueueQuery {
    limit: Option<i64>,
    min_lease_age_ms: Option<i64>,
    deadline_within_ms: Option<i64>,
    state: Option<QueueState>,
}

async fn queue(
    state: State,
    caller: Caller,
    q: web::Query<QueueQuery>,
) -> Result<HttpResponse, ApiError> {
    let filter = QueueFilter {
        limit: limit(q.limit),
        min_lease_age_ms: non_negative("min_lease_age_ms", q.min_lease_age_ms)?,
        deadline_within_ms: non_negative("deadline_within_ms", q.deadline_within_ms)?,
        state: q.state,
    };
    let snap = state.mailbox.queue(&caller, &filter).await?;
    Ok(HttpResponse::Ok().json(json!({
        "kind": "a2a_queue",
        "tasks": snap.tasks,
        "results": snap.results,
    })))
}
