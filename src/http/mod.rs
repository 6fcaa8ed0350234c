//! HTTP routes: thin handlers that parse, call the mailbox and map errors.

pub mod error;
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
use crate::error::{ErrorCode, MailboxError};
use crate::mailbox::tasks::QueueFilter;
use crate::mailbox::{Done, IdemRequest, Mailbox};

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
    cfg.service(endpoint("/healthz", "GET", web::get().to(healthz)))
        .service(endpoint("/readyz", "GET", web::get().to(readyz)))
        .service(endpoint("/version", "GET", web::get().to(version)))
        .service(endpoint("/metrics", "GET", web::get().to(metrics)))
        .service(endpoint("/a2a/tasks", "POST", web::post().to(send_task)))
        .service(endpoint("/a2a/tasks/next", "GET", web::get().to(next_task)))
        .service(endpoint(
            "/a2a/tasks/recent",
            "GET",
            web::get().to(recent_tasks),
        ))
        .service(endpoint("/a2a/tasks/{id}", "GET", web::get().to(get_task)))
        .service(endpoint(
            "/a2a/results",
            "POST",
            web::post().to(post_result),
        ))
        .service(endpoint(
            "/a2a/results/next",
            "GET",
            web::get().to(next_result),
        ))
        .service(endpoint(
            "/a2a/results/recent",
            "GET",
            web::get().to(recent_results),
        ))
        .service(endpoint("/a2a/queue", "GET", web::get().to(queue)))
        .configure(ops::configure)
        .configure(openapi::configure);
}

/// One path served by one method; any other method answers 405 `method_not_allowed` with
/// `Allow`.
pub(crate) fn endpoint(
    path: &str,
    method: &'static str,
    route: actix_web::Route,
) -> actix_web::Resource {
    web::resource(path)
        .route(route)
        .default_service(web::to(move || async move {
            Ok::<HttpResponse, MailboxError>(error::method_not_allowed(method))
        }))
}

/// Parses a JSON body that must be an object (serde would also fill a struct from an array).
pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    what: &str,
    body: &Value,
) -> Result<T, MailboxError> {
    if !body.is_object() {
        return Err(MailboxError::invalid(format!(
            "the {what} must be a JSON object"
        )));
    }
    serde_json::from_value(body.clone())
        .map_err(|e| MailboxError::invalid(format!("invalid {what}: {e}")))
}

/// Every unmatched path answers the contract's error shape.
pub async fn not_found_route(req: HttpRequest) -> Result<HttpResponse, MailboxError> {
    Err(MailboxError::new(
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

/// A write's answer: 201 when it created something (a task, a result), else 200, with
/// `Idempotent-Replayed: true` when it replays an earlier answer.
pub(crate) fn answer<T, B: serde::Serialize>(done: &Done<T>, body: B) -> HttpResponse {
    let mut res = HttpResponse::build(if done.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    });
    if done.replayed {
        res.insert_header(("Idempotent-Replayed", "true"));
    }
    res.json(body)
}

pub(crate) fn idem_request(
    req: &HttpRequest,
    body: &Value,
) -> Result<Option<IdemRequest>, MailboxError> {
    match req.headers().get("Idempotency-Key") {
        None => Ok(None),
        Some(v) => {
            let key = v.to_str().map_err(|_| {
                MailboxError::invalid("the Idempotency-Key header must be visible ASCII")
            })?;
            IdemRequest::new(key, req.method().as_str(), req.path(), body).map(Some)
        }
    }
}

fn wait(wait_ms: Option<u64>) -> Result<Duration, MailboxError> {
    match wait_ms.unwrap_or(0) {
        w if w <= MAX_WAIT_MS => Ok(Duration::from_millis(w)),
        w => Err(MailboxError::invalid(format!(
            "wait_ms {w} is out of range 0..={MAX_WAIT_MS}"
        ))),
    }
}

pub(crate) fn limit(limit: Option<i64>) -> i64 {
    limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
}

fn non_negative(name: &str, v: Option<i64>) -> Result<Option<i64>, MailboxError> {
    match v {
        Some(v) if v < 0 => Err(MailboxError::invalid(format!(
            "{name} must not be negative"
        ))),
        v => Ok(v),
    }
}

/// Liveness: the process serves requests.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "system",
    responses(
        (status = 200, description = "The process serves requests.", body = openapi::Health,
            example = json!({"kind": "health", "status": "ok"})),
    )
)]
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"kind": "health", "status": "ok"}))
}

/// Readiness: the database answers.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "system",
    responses(
        (status = 200, description = "The database answers.", body = openapi::Ready,
            example = json!({"kind": "ready", "status": "ok"})),
    )
)]
async fn readyz(state: State) -> Result<HttpResponse, MailboxError> {
    state.mailbox.store.ping().await?;
    Ok(HttpResponse::Ok().json(json!({"kind": "ready", "status": "ok"})))
}

/// The service's name, version and storage engine.
#[utoipa::path(
    get,
    path = "/version",
    operation_id = "version",
    tag = "system",
    responses(
        (status = 200, description = "Name, version and storage engine.", body = openapi::Version,
            example = json!({"kind": "version", "name": "a2a-mailbox", "version": "0.1.0", "engine": "sqlite"})),
    )
)]
async fn version(state: State) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "kind": "version",
        "name": env!("CARGO_PKG_NAME"),
        "version": env!("CARGO_PKG_VERSION"),
        "engine": state.mailbox.store.engine().name(),
    }))
}

/// Prometheus metrics: queue depth per state, oldest queued age, oldest lease age, leases,
/// requeues, cache hits, request latency; on PostgreSQL also the group commit (batches run, and
/// by operation: batches that carried it, the requests they carried, requests waiting for the
/// next batch).
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    tag = "system",
    responses(
        (status = 200, description = "Prometheus text exposition format 0.0.4.",
            content_type = "text/plain", body = String,
            example = "# TYPE a2a_queue_depth gauge\na2a_queue_depth{state=\"queued\"} 3\n"),
    )
)]
async fn metrics(state: State) -> Result<HttpResponse, MailboxError> {
    let gauges = state.mailbox.gauges().await?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(state.mailbox.metrics.render(&gauges)))
}

/// Send a task to another agent.
///
/// Gates, in order: the task's `sender` must be the token subject (403 `sender_mismatch`); the
/// token must grant `a2a.send.<recipient>` (403 `capability_missing` /
/// `capability_scope_mismatch`); then the body is validated (400). The task id is chosen by the
/// sender and reused on every retry: the same id with the same body answers 200 with the first
/// answer (`Idempotent-Replayed: true`), even after the task was leased or resolved; the same id
/// with another body, or from another sender, is 409 `task_id_conflict`. An `idempotent` task
/// with a key whose result is in the receiver-side result cache is never queued: a copy of the
/// cached result is queued for the sender at once and the answer carries `replayed_from`.
#[utoipa::path(
    post,
    path = "/a2a/tasks",
    operation_id = "send_task",
    tag = "tasks",
    request_body(content = crate::domain::A2ATask, description = "The task. Unknown fields are ignored.",
        example = openapi::example_task),
    responses(
        (status = 201, description = "Queued; or, with `replayed_from`, answered at once from the result cache.",
            body = openapi::TaskQueued,
            examples(
                ("queued" = (value = json!({"kind": "a2a_task_queued", "task_id": openapi::EXAMPLE_TASK_ID}))),
                ("result_cache_hit" = (value = json!({"kind": "a2a_task_queued", "task_id": openapi::EXAMPLE_TASK_ID,
                    "replayed_from": "9d2b6c1a-3e4f-4a5b-8c7d-0e1f2a3b4c5d"}))),
            )),
        (status = 200, description = "Replay: this task id was already sent with this body; the first answer again.",
            body = openapi::TaskQueued),
        (status = 400, description = "`invalid_request`: malformed JSON, wrong types, a bad AgentId, a blank `task_kind` or `idempotency.key`, `deadline_ms` out of range, or a bad `Idempotency-Key` header.",
            body = crate::http::error::ErrorBody),
        (status = 403, description = "`sender_mismatch`: `sender` is not the token subject. `capability_missing` / `capability_scope_mismatch`: the token does not grant `a2a.send.<recipient>` for this request.",
            body = crate::http::error::ErrorBody),
        (status = 409, description = "`task_id_conflict`: the id is used by a different task (another body or another sender).",
            body = crate::http::error::ErrorBody),
    )
)]
async fn send_task(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: web::Json<Value>,
) -> Result<HttpResponse, MailboxError> {
    if !body.is_object() {
        return Err(MailboxError::invalid("the task must be a JSON object"));
    }
    let idem = idem_request(&req, &body)?;
    let done = state.mailbox.send(&caller, idem.as_ref(), &body).await?;
    let body = openapi::TaskQueued {
        kind: openapi::TaskQueuedKind::Tag,
        task_id: done.value.task_id,
        replayed_from: done.value.replayed_from,
    };
    Ok(answer(&done, body))
}

#[derive(Deserialize)]
struct NextTaskQuery {
    recipient: Option<String>,
    wait_ms: Option<u64>,
}

/// Lease the oldest queued task of a recipient.
///
/// Leases the OLDEST queued task addressed to `recipient` (default: the caller) with a new
/// `lease_id`; `attempt` goes up by one. Two concurrent callers never get the same task. Queued
/// tasks past their deadline are never leased: they are resolved with an error result for their
/// sender instead. Leasing for another recipient needs `a2a.lease.<recipient>`. The lease stays
/// until its holder posts a result, an operator repairs it, or the retry gate requeues it.
#[utoipa::path(
    get,
    path = "/a2a/tasks/next",
    operation_id = "lease_next_task",
    tag = "tasks",
    params(
        ("recipient" = Option<AgentId>, Query, description = "Whose queue to lease from; defaults to the token subject.",
            min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+(@[A-Za-z0-9_.-]+)?$", example = "billing@acme"),
        ("wait_ms" = Option<u64>, Query, description = "Long-poll: how long to wait for something to arrive, in milliseconds (0..=30000, default 0: answer at once). Answers as soon as something arrives (a commit on another instance sharing the PostgreSQL database is seen within about 5 ms: each instance sends at most one NOTIFY per 5 ms; a waiting request also re-checks at least once a second). On PostgreSQL a request waiting on this instance is answered by the very transaction that queues its task or stores its result; if that transaction is running when `wait_ms` runs out, the answer waits for it, so a lease or drain it committed is never lost. Larger values → 400 `invalid_request`.", minimum = 0, maximum = 30000, example = 1000),
    ),
    responses(
        (status = 200, description = "The leased task and its lease, or both `null` when nothing arrived within `wait_ms`.",
            body = openapi::TaskOpt,
            examples(
                ("leased" = (value = json!(openapi::example_task_opt()))),
                ("empty" = (value = json!({"kind": "a2a_task_opt", "task": null, "lease": null}))),
            )),
        (status = 400, description = "`invalid_request`: `recipient` is not an AgentId, or `wait_ms` is not an integer in 0..=30000.",
            body = crate::http::error::ErrorBody),
        (status = 403, description = "`capability_missing` / `capability_scope_mismatch`: leasing for another recipient needs `a2a.lease.<recipient>`.",
            body = crate::http::error::ErrorBody),
    )
)]
async fn next_task(
    state: State,
    caller: Caller,
    q: web::Query<NextTaskQuery>,
) -> Result<HttpResponse, MailboxError> {
    let recipient = match &q.recipient {
        Some(r) => AgentId::parse(r).map_err(MailboxError::invalid)?,
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

/// Peek at queued tasks.
///
/// Queued tasks visible to the caller (sent by it or addressed to it; operators see all), oldest
/// first. Never consumes.
#[utoipa::path(
    get,
    path = "/a2a/tasks/recent",
    operation_id = "recent_tasks",
    tag = "tasks",
    params(("limit" = Option<i64>, Query, description = "How many entries to answer at most. Defaults to 10; any other value is clamped to 1..=1000 (out-of-range values are not refused).", minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64, example = 10)),
    responses(
        (status = 200, description = "Queued tasks, oldest first.", body = openapi::Tasks,
            example = openapi::example_tasks),
        (status = 400, description = "`invalid_request`: `limit` is not a 64-bit integer.", body = crate::http::error::ErrorBody),
    )
)]
async fn recent_tasks(
    state: State,
    caller: Caller,
    q: web::Query<LimitQuery>,
) -> Result<HttpResponse, MailboxError> {
    let tasks = state.mailbox.recent_tasks(&caller, limit(q.limit)).await?;
    Ok(HttpResponse::Ok().json(json!({"kind": "a2a_tasks", "tasks": tasks})))
}

pub(crate) fn path_uuid(raw: &str) -> Result<Uuid, MailboxError> {
    Uuid::parse_str(raw).map_err(|_| MailboxError::invalid(format!("{raw:?} is not a UUID")))
}

/// Read one task's status.
///
/// For clients resuming from a checkpoint: the task, its state, attempt counter, current lease
/// and result. A task that is not visible to the caller answers exactly like a missing one.
#[utoipa::path(
    get,
    path = "/a2a/tasks/{id}",
    operation_id = "get_task",
    tag = "tasks",
    params(("id" = Uuid, Path, description = "The task id.", example = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90")),
    responses(
        (status = 200, description = "The task's status.", body = openapi::TaskStatusBody,
            example = openapi::example_task_status),
        (status = 400, description = "`invalid_request`: the id is not a UUID.", body = crate::http::error::ErrorBody),
        (status = 404, description = "`not_found`: no task with this id is visible to the caller.", body = crate::http::error::ErrorBody),
    )
)]
async fn get_task(
    state: State,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, MailboxError> {
    let id = path_uuid(&id)?;
    let status = state.mailbox.task_status(&caller, id).await?;
    let mut body = serde_json::to_value(status).map_err(MailboxError::internal)?;
    body["kind"] = json!("a2a_task_status");
    Ok(HttpResponse::Ok().json(body))
}

/// Post the result of a leased task.
///
/// Checks, in order: the task must exist and be visible (404 `unknown_task`, before any
/// capability check); the token must grant `a2a.respond.<sender>` (403); the caller must hold
/// the lease or be an operator (403 `not_lessee`); the task must be in flight (409
/// `not_in_flight`); a given `lease_id` must be the current lease (409 `lease_mismatch`). Once a
/// task is answered, the same result posted again by the one who answered it (or an operator) is
/// a 200 replay, and a different one is 409 `result_conflict`.
#[utoipa::path(
    post,
    path = "/a2a/results",
    operation_id = "post_result",
    tag = "results",
    request_body(content = PostResult, description = "The result, with an optional fencing `lease_id`.",
        example = openapi::example_post_result),
    responses(
        (status = 201, description = "Stored for the sender.", body = openapi::ResultPosted),
        (status = 200, description = "Replay: this task was already answered with this result; the first answer again.",
            body = openapi::ResultPosted),
        (status = 400, description = "`invalid_request`: malformed JSON, wrong types, or a bad `Idempotency-Key` header.",
            body = crate::http::error::ErrorBody),
        (status = 403, description = "`capability_missing` / `capability_scope_mismatch`: the token does not grant `a2a.respond.<sender>` for this task. `not_lessee`: the caller does not hold the task's lease (or did not answer it).",
            body = crate::http::error::ErrorBody),
        (status = 404, description = "`unknown_task`: no task with this id is visible to the caller.", body = crate::http::error::ErrorBody),
        (status = 409, description = "`not_in_flight`: the task is queued (never leased, or requeued). `lease_mismatch`: `lease_id` is not the current lease. `result_conflict`: the task was already answered with a different result.",
            body = crate::http::error::ErrorBody),
    )
)]
async fn post_result(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: web::Json<Value>,
) -> Result<HttpResponse, MailboxError> {
    let input: PostResult = typed("result", &body)?;
    input.validate()?;
    let idem = idem_request(&req, &body)?;
    let done = state
        .mailbox
        .post_result(&caller, idem.as_ref(), &input)
        .await?;
    let body = json!({"kind": "a2a_result_posted", "task_id": done.value.task_id});
    Ok(answer(&done, body))
}

#[derive(Deserialize)]
struct WaitQuery {
    wait_ms: Option<u64>,
}

/// Drain the oldest pending result of a task the caller sent.
///
/// The drained task becomes `resolved`. Results never echo a `lease_id`.
#[utoipa::path(
    get,
    path = "/a2a/results/next",
    operation_id = "drain_next_result",
    tag = "results",
    params(("wait_ms" = Option<u64>, Query, description = "Long-poll: how long to wait for something to arrive, in milliseconds (0..=30000, default 0: answer at once). Answers as soon as something arrives (a commit on another instance sharing the PostgreSQL database is seen within about 5 ms: each instance sends at most one NOTIFY per 5 ms; a waiting request also re-checks at least once a second). On PostgreSQL a request waiting on this instance is answered by the very transaction that queues its task or stores its result; if that transaction is running when `wait_ms` runs out, the answer waits for it, so a lease or drain it committed is never lost. Larger values → 400 `invalid_request`.", minimum = 0, maximum = 30000, example = 1000)),
    responses(
        (status = 200, description = "The drained result, or `null` when none arrived within `wait_ms`.",
            body = openapi::ResultOpt,
            examples(
                ("drained" = (value = json!(openapi::example_result_opt()))),
                ("empty" = (value = json!({"kind": "a2a_result_opt", "result": null}))),
            )),
        (status = 400, description = "`invalid_request`: `wait_ms` is not an integer in 0..=30000.", body = crate::http::error::ErrorBody),
    )
)]
async fn next_result(
    state: State,
    caller: Caller,
    q: web::Query<WaitQuery>,
) -> Result<HttpResponse, MailboxError> {
    let result = state
        .mailbox
        .drain_result(&caller, wait(q.wait_ms)?)
        .await?;
    Ok(HttpResponse::Ok().json(json!({"kind": "a2a_result_opt", "result": result})))
}

/// Peek at pending results of the caller's tasks, oldest first. Never consumes.
#[utoipa::path(
    get,
    path = "/a2a/results/recent",
    operation_id = "recent_results",
    tag = "results",
    params(("limit" = Option<i64>, Query, description = "How many entries to answer at most. Defaults to 10; any other value is clamped to 1..=1000 (out-of-range values are not refused).", minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64, example = 10)),
    responses(
        (status = 200, description = "Pending results, oldest first.", body = openapi::Results,
            example = openapi::example_results),
        (status = 400, description = "`invalid_request`: `limit` is not a 64-bit integer.", body = crate::http::error::ErrorBody),
    )
)]
async fn recent_results(
    state: State,
    caller: Caller,
    q: web::Query<LimitQuery>,
) -> Result<HttpResponse, MailboxError> {
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

/// A read-only snapshot of the queue.
///
/// Visibility-filtered: queued tasks first (FIFO), then in-flight ones oldest lease first, and
/// the pending results. `min_lease_age_ms` drops only young in-flight entries;
/// `deadline_within_ms` keeps tasks with `deadline_ms <= now + W` (tasks without a deadline are
/// dropped); `state` keeps one state. The filters never touch `results`; `limit` bounds `tasks`
/// and `results` each.
#[utoipa::path(
    get,
    path = "/a2a/queue",
    operation_id = "queue",
    tag = "operator",
    params(
        ("limit" = Option<i64>, Query, description = "How many entries to answer at most. Defaults to 10; any other value is clamped to 1..=1000 (out-of-range values are not refused).", minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64, example = 10),
        ("min_lease_age_ms" = Option<i64>, Query, description = "Keep only in-flight entries whose last heartbeat is at least this old (queued entries are kept).",
            minimum = 0, maximum = 9223372036854775807_i64, example = 300000),
        ("deadline_within_ms" = Option<i64>, Query, description = "Keep only tasks whose `deadline_ms` is at most now + this many milliseconds.",
            minimum = 0, maximum = 9223372036854775807_i64, example = 60000),
        ("state" = Option<QueueState>, Query, description = "Keep only `queued` or only `in_flight` entries."),
    ),
    responses(
        (status = 200, description = "The snapshot.", body = openapi::Queue, example = openapi::example_queue),
        (status = 400, description = "`invalid_request`: a negative or non-integer filter, or an unknown `state`.", body = crate::http::error::ErrorBody),
    )
)]
async fn queue(
    state: State,
    caller: Caller,
    q: web::Query<QueueQuery>,
) -> Result<HttpResponse, MailboxError> {
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
