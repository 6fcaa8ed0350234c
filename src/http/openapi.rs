//! The OpenAPI 3.1 document (`GET /openapi.json`) and the interactive docs (`GET /docs`).
//!
//! The document is generated from the code: the `#[utoipa::path]` attributes above the handlers
//! (operation-specific parameters, bodies, success answers and refusals) and the `ToSchema` wire
//! types. [`Conventions`] then applies the rules every operation shares, so that no operation
//! can forget them: the bearer scheme and its 401 on authenticated routes, the `Idempotency-Key`
//! request header with its 409/422 answers and the `Idempotent-Replayed` / `Retry-After` response
//! headers on every POST, 413/415 on JSON bodies, 500/503 on everything that reads the database,
//! and an example body for every error code a response lists.
//!
//! The committed copy lives in `openapi/openapi.json`; `tests/openapi.rs` fails when it differs
//! from [`document_json`]. Regenerate it with
//! `A2A_MAILBOX_UPDATE_OPENAPI=1 cargo test --test openapi`.

use std::sync::LazyLock;

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, HeaderBuilder, Object, ObjectBuilder, RefOr, Required, ResponseBuilder, Schema,
    Type,
};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_swagger_ui::{Config, SwaggerUi};
use uuid::Uuid;

use crate::domain::{A2ATask, A2ATaskResult, Lease, QueueEntry, TaskStatus};
use crate::error::ErrorCode;
use crate::mailbox::admin::AuditEvent;
use crate::mailbox::repair::RepairOutcome;
use crate::mailbox::retry::RetryReport;

/// Where the document is served.
pub const OPENAPI_PATH: &str = "/openapi.json";
/// Where the interactive docs are served (`/docs` redirects to `/docs/`).
pub const DOCS_PATH: &str = "/docs";

/// Routes that need no bearer token (API.md §1).
pub const PUBLIC_PATHS: [&str; 7] = [
    "/healthz",
    "/readyz",
    "/version",
    "/metrics",
    "/openapi.json",
    "/docs",
    "/docs/",
];

/// Routes that never touch the database, so they cannot answer 500/503.
const STATIC_PATHS: [&str; 5] = ["/healthz", "/version", "/openapi.json", "/docs", "/docs/"];

/// The `Idempotency-Key` header accepts 1..=255 visible ASCII characters, at least one of them
/// not a space (a blank key is refused).
pub const IDEMPOTENCY_KEY_PATTERN: &str = r"^[\t\x20-\x7E]*[\x21-\x7E][\t\x20-\x7E]*$";
/// The longest accepted `Idempotency-Key` (the mailbox's `MAX_KEY_LEN`; a unit test holds them equal).
pub const IDEMPOTENCY_KEY_MAX_LEN: usize = 255;

// ---------------------------------------------------------------------------------------------
// Answer bodies that the handlers build with `json!`: one schema per `kind`.

/// A one-value enum: the `kind` tag of an answer.
macro_rules! kind_tag {
    ($(#[$doc:meta])* $name:ident = $value:tt) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
        pub enum $name {
            #[serde(rename = $value)]
            Tag,
        }
    };
}

kind_tag!(
    /// Always `"error"`.
    ErrorKind = "error"
);
kind_tag!(
    /// Always `"a2a_task_queued"`.
    TaskQueuedKind = "a2a_task_queued"
);
kind_tag!(
    /// Always `"a2a_task_opt"`.
    TaskOptKind = "a2a_task_opt"
);
kind_tag!(
    /// Always `"a2a_tasks"`.
    TasksKind = "a2a_tasks"
);
kind_tag!(
    /// Always `"a2a_task_status"`.
    TaskStatusKind = "a2a_task_status"
);
kind_tag!(
    /// Always `"a2a_result_posted"`.
    ResultPostedKind = "a2a_result_posted"
);
kind_tag!(
    /// Always `"a2a_result_opt"`.
    ResultOptKind = "a2a_result_opt"
);
kind_tag!(
    /// Always `"a2a_results"`.
    ResultsKind = "a2a_results"
);
kind_tag!(
    /// Always `"a2a_queue"`.
    QueueKind = "a2a_queue"
);
kind_tag!(
    /// Always `"a2a_lease_extended"`.
    LeaseExtendedKind = "a2a_lease_extended"
);
kind_tag!(
    /// Always `"a2a_repaired"`.
    RepairedKind = "a2a_repaired"
);
kind_tag!(
    /// Always `"a2a_auto_retried"`.
    AutoRetriedKind = "a2a_auto_retried"
);
kind_tag!(
    /// Always `"a2a_compacted"`.
    CompactedKind = "a2a_compacted"
);
kind_tag!(
    /// Always `"audit_events"`.
    AuditEventsKind = "audit_events"
);
kind_tag!(
    /// Always `"health"`.
    HealthKind = "health"
);
kind_tag!(
    /// Always `"ready"`.
    ReadyKind = "ready"
);
kind_tag!(
    /// Always `"version"`.
    VersionKind = "version"
);

/// Always `"ok"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OkStatus {
    Ok,
}

/// The storage engine behind this instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EngineName {
    Sqlite,
    Postgres,
}

/// `POST /a2a/tasks`: the task is queued (or was answered from the result cache).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"kind": "a2a_task_queued", "task_id": EXAMPLE_TASK_ID}))]
pub struct TaskQueued {
    pub kind: TaskQueuedKind,
    pub task_id: Uuid,
    /// Present only when the result cache answered the task (§6.2): the id of the task whose
    /// cached result was copied. No lease ever happens for such a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub replayed_from: Option<Uuid>,
}

/// `GET /a2a/tasks/next`: the leased task and its lease, or both `null` when nothing arrived
/// within `wait_ms`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskOpt {
    pub kind: TaskOptKind,
    #[schema(required = true)]
    pub task: Option<A2ATask>,
    #[schema(required = true)]
    pub lease: Option<Lease>,
}

/// `GET /a2a/tasks/recent`: queued tasks visible to the caller, oldest first.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Tasks {
    pub kind: TasksKind,
    pub tasks: Vec<A2ATask>,
}

/// `GET /a2a/tasks/{id}`: the task's status, tagged.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TaskStatusBody {
    pub kind: TaskStatusKind,
    #[serde(flatten)]
    pub status: TaskStatus,
}

/// `POST /a2a/results`: the result is stored for the sender.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"kind": "a2a_result_posted", "task_id": EXAMPLE_TASK_ID}))]
pub struct ResultPosted {
    pub kind: ResultPostedKind,
    pub task_id: Uuid,
}

/// `GET /a2a/results/next`: the drained result, or `null` when none arrived within `wait_ms`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct ResultOpt {
    pub kind: ResultOptKind,
    #[schema(required = true)]
    pub result: Option<A2ATaskResult>,
}

/// `GET /a2a/results/recent`: pending results of the caller's tasks, oldest first.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Results {
    pub kind: ResultsKind,
    pub results: Vec<A2ATaskResult>,
}

/// `GET /a2a/queue`: a read-only, visibility-filtered snapshot.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Queue {
    pub kind: QueueKind,
    /// Queued tasks first (FIFO), then in-flight ones, oldest lease first.
    pub tasks: Vec<QueueEntry>,
    /// Pending results (the filters never apply to them; `limit` does).
    pub results: Vec<A2ATaskResult>,
}

/// `POST /a2a/tasks/{id}/heartbeat`: the refreshed lease.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct LeaseExtended {
    pub kind: LeaseExtendedKind,
    pub lease: Lease,
}

/// `POST /a2a/repair`: what the repair did.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Repaired {
    pub kind: RepairedKind,
    pub outcome: RepairOutcome,
}

/// `POST /a2a/retry-stale` and `POST /a2a/scheduler/tick`: the scan's report.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct AutoRetried {
    pub kind: AutoRetriedKind,
    pub report: RetryReport,
}

/// `POST /a2a/compact`: how many rows were dropped.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Compacted {
    pub kind: CompactedKind,
    /// Resolved tasks, expired result-cache entries and expired `Idempotency-Key` records.
    pub dropped: u64,
}

/// `GET /audit/recent`: audit rows, newest first.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct AuditEvents {
    pub kind: AuditEventsKind,
    pub events: Vec<AuditEvent>,
}

/// `GET /healthz`: the process serves requests.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    pub kind: HealthKind,
    pub status: OkStatus,
}

/// `GET /readyz`: the database answers.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Ready {
    pub kind: ReadyKind,
    pub status: OkStatus,
}

/// `GET /version`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Version {
    pub kind: VersionKind,
    #[schema(example = "a2a-mailbox")]
    pub name: String,
    #[schema(example = "0.1.0")]
    pub version: String,
    pub engine: EngineName,
}

// ---------------------------------------------------------------------------------------------
// Examples.

pub const EXAMPLE_TASK_ID: &str = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90";
pub const EXAMPLE_LEASE_ID: &str = "5a3c2e1d-0f9b-4d8e-b7a6-1c2d3e4f5a6b";

pub fn example_task() -> Value {
    json!({
        "id": EXAMPLE_TASK_ID,
        "sender": "research@acme",
        "recipient": "billing@acme",
        "intent_text": "Refund order 1234: it was charged twice",
        "task_kind": "refund",
        "content": [
            {"type": "text", "text": "Order 1234 was charged twice on 2025-01-07."},
            {"type": "json", "value": {"order": 1234, "amount_cents": 4200}}
        ],
        "context_id": "conversation-42",
        "deadline_ms": 4102444800000_u64,
        "idempotency": {"duplicate_safety": "idempotent", "key": "refund-order-1234"}
    })
}

pub fn example_lease() -> Value {
    json!({
        "lease_id": EXAMPLE_LEASE_ID,
        "leased_to": "billing@acme",
        "leased_at_ms": 1736240000000_u64,
        "heartbeat_at_ms": 1736240000000_u64,
        "attempt": 1
    })
}

pub fn example_result() -> Value {
    json!({
        "task_id": EXAMPLE_TASK_ID,
        "status": "ok",
        "content": [{"type": "text", "text": "Refunded 42.00 EUR."}]
    })
}

pub fn example_post_result() -> Value {
    let mut r = example_result();
    r["lease_id"] = json!(EXAMPLE_LEASE_ID);
    r
}

pub fn example_task_opt() -> Value {
    json!({"kind": "a2a_task_opt", "task": example_task(), "lease": example_lease()})
}

pub fn example_tasks() -> Value {
    json!({"kind": "a2a_tasks", "tasks": [example_task()]})
}

pub fn example_task_status() -> Value {
    json!({
        "kind": "a2a_task_status",
        "task": example_task(),
        "state": "in_flight",
        "attempt": 1,
        "lease": example_lease(),
        "result": null,
        "created_at_ms": 1736239990000_u64,
        "updated_at_ms": 1736240000000_u64
    })
}

pub fn example_result_opt() -> Value {
    json!({"kind": "a2a_result_opt", "result": example_result()})
}

pub fn example_results() -> Value {
    json!({"kind": "a2a_results", "results": [example_result()]})
}

pub fn example_queue() -> Value {
    let mut in_flight = json!({"state": "in_flight", "task": example_task()});
    for (k, v) in example_lease().as_object().expect("an object") {
        in_flight[k.as_str()] = v.clone();
    }
    json!({"kind": "a2a_queue", "tasks": [in_flight], "results": []})
}

pub fn example_lease_extended() -> Value {
    let mut lease = example_lease();
    lease["heartbeat_at_ms"] = json!(1736240030000_u64);
    json!({"kind": "a2a_lease_extended", "lease": lease})
}

pub fn example_repair_requeue() -> Value {
    json!({
        "task_id": EXAMPLE_TASK_ID,
        "reason": "worker billing-7 crashed mid-task; a second refund attempt is acceptable",
        "command": {"action": "requeue", "lease_id": EXAMPLE_LEASE_ID, "duplicate_risk": "operator_accepted"}
    })
}

pub fn example_repair_force_error() -> Value {
    json!({
        "task_id": EXAMPLE_TASK_ID,
        "reason": "the billing agent is decommissioned",
        "command": {"action": "force_error", "lease_id": EXAMPLE_LEASE_ID, "message": "billing is no longer served"}
    })
}

pub fn example_repaired_requeued() -> Value {
    json!({"kind": "a2a_repaired", "outcome": {
        "task_id": EXAMPLE_TASK_ID, "action": "requeued", "state": "queued", "attempt": 1
    }})
}

pub fn example_repaired_forced_error() -> Value {
    json!({"kind": "a2a_repaired", "outcome": {
        "task_id": EXAMPLE_TASK_ID, "action": "forced_error", "state": "result_pending", "attempt": 1,
        "result": {"task_id": EXAMPLE_TASK_ID, "status": "error", "content": [],
                   "error_message": "billing is no longer served"}
    }})
}

pub fn example_auto_retried() -> Value {
    json!({"kind": "a2a_auto_retried", "report": {
        "policy": {"enabled": true, "min_lease_age_ms": 300000, "max_attempts": 3, "max_requeues": 1, "scan_limit": 100},
        "considered": 2,
        "requeued": [{"task_id": EXAMPLE_TASK_ID, "lease_id": EXAMPLE_LEASE_ID, "attempt": 1,
                      "idempotency_key": "refund-order-1234"}],
        "skipped": [{"task_id": "9d2b6c1a-3e4f-4a5b-8c7d-0e1f2a3b4c5d", "reason": "lease_too_young",
                     "attempt": 1, "lease_age_ms": 12000}]
    }})
}

pub fn example_audit_events() -> Value {
    json!({"kind": "audit_events", "events": [
        {"id": 7, "timestamp_ms": 1736240040000_u64, "issuer": "operator", "kind": {
            "type": "a2a_repair_applied", "task_id": EXAMPLE_TASK_ID, "action": "requeue",
            "reason": "worker billing-7 crashed mid-task; a second refund attempt is acceptable",
            "lease_id": EXAMPLE_LEASE_ID, "duplicate_risk": "operator_accepted", "attempt": 1}},
        {"id": 6, "timestamp_ms": 1736239990000_u64, "issuer": "research@acme", "kind": {
            "type": "capability_check", "scope_id": "a2a-send:billing@acme",
            "required_actions": ["a2a.send.billing@acme"], "missing_actions": [], "passed": true}}
    ]})
}

// ---------------------------------------------------------------------------------------------
// The document.

#[derive(OpenApi)]
#[openapi(
    info(
        title = "a2a-mailbox",
        description = "A durable, explicitly leased task mailbox between AI agents.\n\n\
One agent (the sender) posts a task for another (the recipient); the recipient leases it \
(`GET /a2a/tasks/next`), works, and posts a result (`POST /a2a/results`); the sender drains the \
result (`GET /a2a/results/next`). Nothing is ever redelivered behind anyone's back: a lease stays \
in flight until its holder answers, an operator repairs it, or the opt-in retry gate requeues it.\n\n\
**Conventions.** JSON in, JSON out. Times are unsigned integers in milliseconds since the Unix \
epoch (`*_ms`). Ids are UUIDs, lower-case on output. Every success body is an object tagged by \
`kind`; every error body is an `ErrorBody` (`kind: \"error\"`, a stable `code`, a free-text \
`message`, `retriable`). Request bodies are JSON objects; unknown fields are ignored; enum values \
are exact snake_case; integers are written without a fraction or exponent (`5`, not `5.0`). \
Request bodies are limited (1 MiB by default) → 413. `limit` query parameters default to 10 and \
are clamped to 1..=1000; filters apply before the limit.\n\n\
**Authentication.** `Authorization: Bearer <JWT>` on every route except `/healthz`, `/readyz`, \
`/version`, `/metrics`, `/openapi.json` and `/docs`. The token's `sub` is the caller's AgentId and \
its `caps` claim lists the granted actions (`a2a.send.<recipient>`, `a2a.respond.<sender>`, \
`a2a.lease.<recipient>`, `a2a.repair.requeue`, `a2a.repair.force_error`, `a2a.compact`, \
`a2a.operator`; `<agent>` may be `*`), each optionally narrowed by a scope. A task that is not \
visible to the caller answers exactly like one that does not exist.\n\n\
**Retries.** Every POST accepts an `Idempotency-Key` header: the same key with the same request \
answers the stored response with `Idempotent-Replayed: true`; with a different request → 422 \
`idempotency_key_reused`; while the first request still runs → 409 `idempotency_in_flight` with \
`Retry-After`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        super::send_task,
        super::next_task,
        super::recent_tasks,
        super::get_task,
        super::post_result,
        super::next_result,
        super::recent_results,
        super::queue,
        super::ops::heartbeat,
        super::ops::repair,
        super::ops::retry_stale,
        super::ops::scheduler_tick,
        super::ops::compact,
        super::ops::audit_recent,
        super::healthz,
        super::readyz,
        super::version,
        super::metrics,
        openapi_json,
        docs_redirect,
        docs_index,
    ),
    components(schemas(ErrorCode)),
    modifiers(&Conventions),
    tags(
        (name = "tasks", description = "Sending, leasing and reading tasks."),
        (name = "results", description = "Posting and draining results."),
        (name = "operator", description = "Queue snapshot, lease repair, retry gate, scheduler, compaction and the audit feed."),
        (name = "system", description = "Health, readiness, version, metrics and this document."),
    )
)]
pub struct ApiDoc;

/// The document as the code generates it.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// The document as served at `/openapi.json` and committed at `openapi/openapi.json`.
pub fn document_json() -> String {
    let mut s = document()
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    s.push('\n');
    s
}

static DOCUMENT_JSON: LazyLock<String> = LazyLock::new(document_json);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(super::endpoint(
        OPENAPI_PATH,
        "GET",
        web::get().to(openapi_json),
    ))
    .service(super::endpoint(
        DOCS_PATH,
        "GET",
        web::get().to(docs_redirect),
    ))
    // The Swagger UI answers GET; any other method on its pages is a 405 like everywhere.
    .service(
        web::resource("/docs/{_:.*}")
            .guard(actix_web::guard::Not(actix_web::guard::Get()))
            .to(|| async {
                Ok::<HttpResponse, crate::error::MailboxError>(super::error::method_not_allowed(
                    "GET",
                ))
            }),
    )
    .service(
        SwaggerUi::new("/docs/{_:.*}").config(
            Config::new([OPENAPI_PATH])
                // No badge: it would ask a public validator about the document.
                .validator_url("none")
                .persist_authorization(true)
                .display_request_duration(true)
                .filter(true)
                .try_it_out_enabled(true),
        ),
    );
}

/// The OpenAPI 3.1 document of this service.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "openapi_json",
    tag = "system",
    responses(
        (status = 200, description = "This document.", content_type = "application/json", body = Object),
    )
)]
async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOCUMENT_JSON.as_str())
}

/// The interactive docs live at `/docs/`.
#[utoipa::path(
    get,
    path = "/docs",
    operation_id = "docs",
    tag = "system",
    responses(
        (status = 301, description = "Redirect to `/docs/`.",
            headers(("Location" = String, description = "`/docs/`"))),
    )
)]
async fn docs_redirect() -> HttpResponse {
    HttpResponse::MovedPermanently()
        .insert_header((actix_web::http::header::LOCATION, "/docs/"))
        .finish()
}

/// The interactive docs (Swagger UI, served from the binary: no network access needed).
#[utoipa::path(
    get,
    path = "/docs/",
    operation_id = "docs_index",
    tag = "system",
    responses(
        (status = 200, description = "The Swagger UI page.", content_type = "text/html", body = String),
    )
)]
#[allow(dead_code)] // documents the page that `SwaggerUi` serves
async fn docs_index() {}

// ---------------------------------------------------------------------------------------------
// Conventions every operation shares.

struct Conventions;

fn string_schema() -> Object {
    ObjectBuilder::new().schema_type(Type::String).build()
}

fn error_body_ref() -> RefOr<Schema> {
    RefOr::Ref(utoipa::openapi::Ref::from_schema_name("ErrorBody"))
}

/// All the contract's error codes, in declaration order.
pub const ERROR_CODES: [ErrorCode; 19] = [
    ErrorCode::InvalidRequest,
    ErrorCode::Unauthenticated,
    ErrorCode::SenderMismatch,
    ErrorCode::CapabilityMissing,
    ErrorCode::CapabilityScopeMismatch,
    ErrorCode::NotLessee,
    ErrorCode::NotFound,
    ErrorCode::UnknownTask,
    ErrorCode::TaskIdConflict,
    ErrorCode::NotInFlight,
    ErrorCode::LeaseMismatch,
    ErrorCode::ResultConflict,
    ErrorCode::IdempotencyInFlight,
    ErrorCode::PayloadTooLarge,
    ErrorCode::UnsupportedMediaType,
    ErrorCode::IdempotencyKeyReused,
    ErrorCode::MethodNotAllowed,
    ErrorCode::StorageUnavailable,
    ErrorCode::Internal,
];

/// The error codes a response description names (as `` `code` ``), in order of appearance.
pub fn codes_named_in(description: &str) -> Vec<ErrorCode> {
    let mut out = Vec::new();
    for (i, part) in description.split('`').enumerate() {
        if i % 2 == 1 {
            if let Some(code) = ERROR_CODES.iter().find(|c| c.as_str() == part) {
                if !out.contains(code) {
                    out.push(*code);
                }
            }
        }
    }
    out
}

fn example_message(code: ErrorCode) -> &'static str {
    use ErrorCode::*;
    match code {
        InvalidRequest => "invalid task: missing field `intent_text`",
        Unauthenticated => "missing Authorization: Bearer <token>",
        SenderMismatch => {
            "the task's sender \"research@acme\" is not the token subject \"intruder\""
        }
        CapabilityMissing => "the token lacks the capability a2a.send.billing@acme",
        CapabilityScopeMismatch => {
            "the token grants a2a.send.billing@acme, but its scope does not admit this request"
        }
        NotLessee => "the caller does not hold the lease of this task",
        NotFound => "no task is visible to the caller with this id",
        UnknownTask => "no task is visible to the caller with this id",
        TaskIdConflict => "task id is already used by a different task",
        NotInFlight => "the task is queued, not leased",
        LeaseMismatch => "the lease is not the current lease of the task",
        ResultConflict => "the task was already answered with a different result",
        IdempotencyInFlight => {
            "the first request with this Idempotency-Key is still running; retry later"
        }
        PayloadTooLarge => "the request body is larger than 1048576 bytes",
        UnsupportedMediaType => "the request body must be application/json",
        IdempotencyKeyReused => "this Idempotency-Key was already used for a different request",
        MethodNotAllowed => "this path answers POST only",
        StorageUnavailable => "the database is unreachable or busy; retry later",
        Internal => "internal error",
    }
}

fn error_example(code: ErrorCode) -> Value {
    json!({
        "kind": "error",
        "code": code.as_str(),
        "message": example_message(code),
        "retriable": code.retriable(),
    })
}

fn error_response(description: &str) -> utoipa::openapi::Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new().schema(Some(error_body_ref())).build(),
        )
        .build()
}

fn header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(string_schema())
        .description(Some(description))
        .build()
}

const REPLAYED_HEADER: &str = "Idempotent-Replayed";
const REPLAYED_DESCRIPTION: &str = "`true` when this answer is a replay: the stored answer of an \
earlier request with the same `Idempotency-Key` (any status it had), or of the same task id / \
result posted again. Absent otherwise.";
const RETRY_AFTER_DESCRIPTION: &str = "Seconds to wait before retrying; sent with \
`idempotency_in_flight`.";

impl Conventions {
    fn apply(&self, path: &str, method: &str, op: &mut Operation) {
        let public = PUBLIC_PATHS.contains(&path);
        let touches_db = !STATIC_PATHS.contains(&path);
        let post = method == "post";
        let json_body = op
            .request_body
            .as_ref()
            .is_some_and(|b| b.content.contains_key("application/json"));
        let responses = &mut op.responses.responses;

        if !public {
            op.security = Some(vec![SecurityRequirement::new(
                "bearer",
                Vec::<String>::new(),
            )]);
            responses.entry("401".into()).or_insert_with(|| {
                RefOr::T(error_response(
                    "`unauthenticated`: the bearer token is missing, malformed, expired, not yet \
                     valid, signed with another key or algorithm, or has the wrong audience or issuer.",
                ))
            });
        }
        if post {
            let params = op.parameters.get_or_insert_with(Vec::new);
            params.push(
                ParameterBuilder::new()
                    .name("Idempotency-Key")
                    .parameter_in(ParameterIn::Header)
                    .required(Required::False)
                    .description(Some(
                        "Makes the POST safe to retry (IETF httpapi draft semantics). Per caller: \
                         the same key with the same request answers the stored response (with \
                         `Idempotent-Replayed: true`); with another request → 422 \
                         `idempotency_key_reused`; while the first request still runs → 409 \
                         `idempotency_in_flight` with `Retry-After`. Kept 24 h by default. \
                         1..=255 visible ASCII characters, not blank (else 400 `invalid_request`).",
                    ))
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .min_length(Some(1))
                            .max_length(Some(IDEMPOTENCY_KEY_MAX_LEN))
                            .pattern(Some(IDEMPOTENCY_KEY_PATTERN))
                            .examples([json!("7c1e9f0a-order-1234-refund")]),
                    ))
                    .build(),
            );
            let conflict = responses.entry("409".into()).or_insert_with(|| {
                RefOr::T(error_response(
                    "`idempotency_in_flight`: the first request with this `Idempotency-Key` is \
                     still running; retry after `Retry-After` seconds.",
                ))
            });
            if let RefOr::T(r) = conflict {
                if !r.description.contains("`idempotency_in_flight`") {
                    r.description.push_str(
                        "\n\n`idempotency_in_flight`: the first request with this \
                         `Idempotency-Key` is still running; retry after `Retry-After` seconds.",
                    );
                }
                r.headers
                    .insert("Retry-After".into(), header(RETRY_AFTER_DESCRIPTION));
            }
            responses.entry("422".into()).or_insert_with(|| {
                RefOr::T(error_response(
                    "`idempotency_key_reused`: this `Idempotency-Key` was already used by the \
                     caller for a different request.",
                ))
            });
        }
        responses.entry("405".into()).or_insert_with(|| {
            RefOr::T(error_response(
                "`method_not_allowed`: this path was called with another HTTP method than the \
                 documented one; the `Allow` header names the method it answers.",
            ))
        });
        if json_body {
            responses.entry("413".into()).or_insert_with(|| {
                RefOr::T(error_response(
                    "`payload_too_large`: the body is larger than the configured limit (1 MiB by default).",
                ))
            });
            responses.entry("415".into()).or_insert_with(|| {
                RefOr::T(error_response(
                    "`unsupported_media_type`: the body is not `application/json`.",
                ))
            });
        }
        if touches_db {
            responses.entry("500".into()).or_insert_with(|| {
                RefOr::T(error_response(
                    "`internal`: a bug. The body never carries internal detail.",
                ))
            });
            responses.entry("503".into()).or_insert_with(|| {
                RefOr::T(error_response(
                    "`storage_unavailable`: the database is unreachable or busy past its timeout; \
                     `retriable: true`, with `Retry-After` (seconds).",
                ))
            });
        }
        for (status, response) in responses.iter_mut() {
            let RefOr::T(response) = response else {
                continue;
            };
            // Every stored answer (success or refusal) may come back as a replay.
            let replayable = post
                && (status.starts_with('2')
                    || matches!(status.as_str(), "400" | "403" | "404" | "409" | "422"));
            if replayable {
                response
                    .headers
                    .insert(REPLAYED_HEADER.into(), header(REPLAYED_DESCRIPTION));
            }
            // Error responses: one example body per code the description names.
            let codes = codes_named_in(&response.description);
            if let Some(content) = response.content.get_mut("application/json") {
                let is_error = matches!(&content.schema, Some(RefOr::Ref(r)) if r.ref_location.ends_with("/ErrorBody"));
                if is_error && content.examples.is_empty() {
                    for code in codes {
                        content.examples.insert(
                            code.as_str().to_owned(),
                            RefOr::T(
                                utoipa::openapi::example::ExampleBuilder::new()
                                    .value(Some(error_example(code)))
                                    .build(),
                            ),
                        );
                    }
                }
            }
        }
    }
}

impl Modify for Conventions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A JWT (HS256 with a shared secret, or RS256/ES256/EdDSA with a configured \
                         public key). Claims: `sub` (the caller's AgentId, required), `exp` \
                         (required), optional `nbf`/`iat`, `aud`/`iss` (checked when configured) \
                         and `caps`: a list of action strings or `{\"action\", \"scope\"}` \
                         objects. Mint one with `a2a-mailbox token --sub NAME --cap ACTION`.",
                    ))
                    .build(),
            ),
        );
        for (path, item) in openapi.paths.paths.iter_mut() {
            for (method, op) in [
                ("get", &mut item.get),
                ("post", &mut item.post),
                ("put", &mut item.put),
                ("delete", &mut item.delete),
                ("patch", &mut item.patch),
            ] {
                if let Some(op) = op.as_mut() {
                    self.apply(path, method, op);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_found_in_descriptions() {
        assert_eq!(
            codes_named_in(
                "`task_id_conflict`: x; `idempotency_in_flight` and `nope` `Retry-After`"
            ),
            vec![ErrorCode::TaskIdConflict, ErrorCode::IdempotencyInFlight]
        );
    }

    #[test]
    fn error_codes_list_is_complete() {
        // Every code serialises to its `as_str` and appears once.
        for (i, c) in ERROR_CODES.iter().enumerate() {
            assert_eq!(serde_json::to_value(c).unwrap(), json!(c.as_str()));
            assert!(!ERROR_CODES[..i].contains(c));
        }
    }

    #[test]
    fn error_examples_match_error_body() {
        for code in ERROR_CODES {
            let body = crate::http::error::ErrorBody::of(&crate::error::MailboxError::new(
                code,
                example_message(code),
            ));
            assert_eq!(serde_json::to_value(body).unwrap(), error_example(code));
        }
    }

    #[test]
    fn idempotency_key_bounds_match_the_server() {
        let ok =
            |k: &str| crate::mailbox::IdemRequest::new(k, "POST", "/a2a/tasks", &json!({})).is_ok();
        assert!(ok("k"));
        assert!(ok(&"k".repeat(IDEMPOTENCY_KEY_MAX_LEN)));
        assert!(!ok(&"k".repeat(IDEMPOTENCY_KEY_MAX_LEN + 1)));
        assert!(!ok(""));
        assert!(!ok(" \t "));
    }
}
