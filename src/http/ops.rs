//! Operator routes: repair, heartbeat, retry gate, scheduler tick, compaction, audit feed.

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{idem_request, limit, path_uuid, reply, State};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::mailbox::admin::AuditFilter;
use crate::mailbox::repair::RepairRequest;
use crate::mailbox::retry::{RetryPolicy, ScanKind};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/a2a/tasks/{id}/heartbeat", web::post().to(heartbeat))
        .route("/a2a/repair", web::post().to(repair))
        .route("/a2a/retry-stale", web::post().to(retry_stale))
        .route("/a2a/scheduler/tick", web::post().to(scheduler_tick))
        .route("/a2a/compact", web::post().to(compact))
        .route("/audit/recent", web::get().to(audit_recent));
}

fn typed<T: serde::de::DeserializeOwned>(what: &str, body: &Value) -> Result<T, ApiError> {
    serde_json::from_value(body.clone())
        .map_err(|e| ApiError::invalid(format!("invalid {what}: {e}")))
}

#[derive(Deserialize)]
struct HeartbeatBody {
    lease_id: uuid::Uuid,
}

async fn heartbeat(
    state: State,
    caller: Caller,
    req: HttpRequest,
    id: web::Path<String>,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let id = path_uuid(&id)?;
    let hb: HeartbeatBody = typed("heartbeat", &body)?;
    let idem = idem_request(&req, &body)?;
    let r = state
        .mailbox
        .heartbeat(&caller, idem.as_ref(), id, hb.lease_id)
        .await?;
    Ok(reply(r))
}

async fn repair(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let input: RepairRequest = typed("repair request", &body)?;
    let idem = idem_request(&req, &body)?;
    Ok(reply(
        state.mailbox.repair(&caller, idem.as_ref(), &input).await?,
    ))
}

async fn retry_stale(
    state: State,
    caller: Caller,
    req: HttpRequest,
    body: web::Json<Value>,
) -> Result<HttpResponse, ApiError> {
    let policy: RetryPolicy = typed("retry policy", &body)?;
    let idem = idem_request(&req, &body)?;
    let r = state
        .mailbox
        .retry_stale(&caller, idem.as_ref(), &policy, ScanKind::Manual)
        .await?;
    Ok(reply(r))
}

async fn scheduler_tick(
    state: State,
    caller: Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let idem = idem_request(&req, &Value::Null)?;
    let r = state
        .mailbox
        .retry_stale(
            &caller,
            idem.as_ref(),
            &state.scheduler_policy,
            ScanKind::Scheduler,
        )
        .await?;
    Ok(reply(r))
}

async fn compact(state: State, caller: Caller, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let idem = idem_request(&req, &Value::Null)?;
    Ok(reply(state.mailbox.compact(&caller, idem.as_ref()).await?))
}

#[derive(Deserialize)]
struct AuditQuery {
    limit: Option<i64>,
    since_ms: Option<u64>,
    kind: Option<String>,
}

async fn audit_recent(
    state: State,
    caller: Caller,
    q: web::Query<AuditQuery>,
) -> Result<HttpResponse, ApiError> {
    let since_ms = match q.since_ms {
        Some(s) if s > crate::domain::MAX_MS => {
            return Err(ApiError::invalid("since_ms is out of range"))
        }
        s => s.map(|s| s as i64),
    };
    let events = state
        .mailbox
        .audit_feed(
            &caller,
            &AuditFilter {
                limit: limit(q.limit),
                since_ms,
                kind: q.kind.clone(),
            },
        )
        .await?;
    Ok(HttpResponse::Ok().json(json!({"kind": "audit_events", "events": events})))
}
