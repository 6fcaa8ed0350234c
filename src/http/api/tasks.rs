//! Task routes: send, lease the next, peek, read one, and extend a lease.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::auth::Caller;
use crate::domain::answers;
use crate::domain::{AgentId, CancelRequest, HeartbeatRequest};
use crate::error::MailboxError;
use crate::http::openapi;
use crate::http::params::{limit, path_uuid, wait, LimitQuery, TakeQuery, WaitQuery};
use crate::http::respond::{answer, api_routes, Answer};
use crate::http::state::State;
use crate::http::trace::TraceHeaders;
use crate::http::write::{OptionalWriteRequest, WriteRequest};

api_routes! {
    tag = "tasks";
    send_task => [
        "`invalid_request`: malformed JSON, wrong types, a bad AgentId, a blank `task_kind` or \
         `idempotency.key`, `deadline_ms` out of range, a `content[].value` or `metadata` nested \
         deeper than `A2A_MAILBOX_MAX_JSON_DEPTH` (64 by default), or a bad `Idempotency-Key` \
         header.",
        "`sender_mismatch`: `sender` is not the token subject. `capability_missing` / \
         `capability_scope_mismatch`: the token does not grant `a2a.send.<recipient>` for this \
         request.",
        "`task_id_conflict`: the id is used by a different task (another body or another sender).",
    ];
    lease_next_task => [
        "`invalid_request`: `recipient` is not an AgentId, `wait_ms` is not an integer in \
         0..=30000, `max` is not an integer in 1..=100, or `attempt_id` is not a UUID.",
        "`capability_missing` / `capability_scope_mismatch`: leasing for another recipient needs \
         `a2a.lease.<recipient>`.",
        "`idempotency_in_flight`: another take with this `attempt_id` is running.",
        "`idempotency_key_reused`: this `attempt_id` was used for another request.",
    ];
    recent_tasks => [
        "`invalid_request`: `limit` is not a 64-bit integer.",
    ];
    get_task => [
        "`invalid_request`: the id is not a UUID.",
        "`not_found`: no task with this id is visible to the caller.",
    ];
    heartbeat => [
        "`invalid_request`: the id is not a UUID, the body has no UUID `lease_id`, or a bad `Idempotency-Key` header.",
        "`not_lessee`: the caller sees the task but does not hold its lease.",
        "`not_found`: no task with this id is visible to the caller.",
        "`task_canceled`: the task was canceled (stop working on it). `not_in_flight`: the task is \
         not leased. `lease_mismatch`: `lease_id` is not the current lease.",
    ];
    cancel_task => [
        "`invalid_request`: the id is not a UUID, the body is not a JSON object, `reason` is \
         blank, longer than 1,024 characters or not a string, or a bad `Idempotency-Key` header.",
        "`sender_mismatch`: the caller sees the task but is neither its sender nor an operator.",
        "`not_found`: no task with this id is visible to the caller.",
        "`not_cancelable`: the task is already answered (`result_pending` or `resolved`).",
    ];
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
#[utoipa::path(post, path = "/a2a/tasks",
    request_body(content = crate::domain::A2ATask, description = "The task. Unknown fields are ignored.",
        example = openapi::example_task),
    params(TraceHeaders),
    responses(
        (status = 201, description = "Queued; or, with `replayed_from`, answered at once from the result cache.",
            body = answers::TaskQueued,
            examples(
                ("queued" = (value = json!(openapi::example_task_queued()))),
                ("result_cache_hit" = (value = json!(openapi::example_task_queued_from_cache()))),
            )),
        (status = 200, description = "Replay: this task id was already sent with this body; the first answer again.",
            body = answers::TaskQueued),
    )
)]
async fn send_task(state: State, caller: Caller, body: WriteRequest) -> Answer {
    let trace = body.trace();
    let mut task = body.object("task")?;
    crate::http::trace::carry(&mut task.input, trace.as_ref());
    let done = state.mailbox.send(task.by(&caller), &task.input).await?;
    Ok(answer(&done, &done.value))
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
///
/// With `max`, up to that many of the oldest tasks are leased in one transaction, each with its
/// own `lease_id` and attempt, and answered as a batch (`a2a_task_batch`). With `attempt_id`,
/// a retry of a take whose answer was lost answers the same leases (those still held).
#[utoipa::path(get, path = "/a2a/tasks/next",
    params(
        ("recipient" = Option<AgentId>, Query,
            description = "Whose queue to lease from; defaults to the token subject.",
            min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.-]+(@[A-Za-z0-9_.-]+)?$",
            example = "billing@acme"),
        WaitQuery,
        TakeQuery,
    ),
    responses(
        (status = 200,
            description = "Without `max`: the leased task and its lease, or both `null` when \
                nothing arrived within `wait_ms`. With `max`: 0 to `max` leased tasks, oldest first.",
            body = answers::NextTasks,
            headers(
                ("traceparent" = String, description = "Without `max`: the leased task's W3C \
                    trace context, when it carries one (its `trace.traceparent`)."),
                ("tracestate" = String, description = "Without `max`: its `trace.tracestate`, \
                    when it has one."),
            ),
            examples(
                ("leased" = (value = json!(openapi::example_task_opt()))),
                ("empty" = (value = json!(openapi::example_task_opt_empty()))),
                ("batch" = (value = json!(openapi::example_task_batch()))),
            )),
    )
)]
async fn lease_next_task(
    state: State,
    caller: Caller,
    q: web::Query<NextTaskQuery>,
    take: web::Query<TakeQuery>,
) -> Answer {
    let recipient = match &q.recipient {
        Some(r) => AgentId::parse(r).map_err(MailboxError::invalid)?,
        None => caller.sub.clone(),
    };
    let wait = wait(q.wait_ms)?;
    let (max, attempt) = take.read("GET /a2a/tasks/next", &format!(" recipient={recipient}"))?;
    let mailbox = &state.mailbox;
    let Some(max) = max else {
        let leased = mailbox
            .lease_next(&caller, recipient.as_str(), wait, attempt)
            .await?;
        let mut res = HttpResponse::Ok();
        let trace = leased.task.as_ref().and_then(|t| t.trace.as_ref());
        crate::http::trace::answer_with(&mut res, trace);
        return Ok(res.json(leased));
    };
    let leased = mailbox
        .lease_batch(&caller, recipient.as_str(), max, wait, attempt)
        .await?;
    Ok(HttpResponse::Ok().json(leased))
}

/// Peek at queued tasks.
///
/// Queued tasks visible to the caller (sent by it or addressed to it; operators see all), oldest
/// first. Never consumes.
#[utoipa::path(get, path = "/a2a/tasks/recent",
    params(LimitQuery),
    responses(
        (status = 200, description = "Queued tasks, oldest first.", body = answers::Tasks,
            example = openapi::example_tasks),
    )
)]
async fn recent_tasks(state: State, caller: Caller, q: web::Query<LimitQuery>) -> Answer {
    let tasks = state.mailbox.recent_tasks(&caller, limit(q.limit)).await?;
    Ok(HttpResponse::Ok().json(tasks))
}

/// Read one task's status.
///
/// For clients resuming from a checkpoint: the task, its state, attempt counter, current lease
/// and result. A task that is not visible to the caller answers exactly like a missing one.
#[utoipa::path(get, path = "/a2a/tasks/{id}",
    params(("id" = Uuid, Path, description = "The task id.", example = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90")),
    responses(
        (status = 200, description = "The task's status.", body = answers::TaskStatusBody,
            example = openapi::example_task_status),
    )
)]
async fn get_task(state: State, caller: Caller, id: web::Path<String>) -> Answer {
    let id = path_uuid(&id)?;
    let status = state.mailbox.task_status(&caller, id).await?;
    let kind = answers::TaskStatusKind::Tag;
    Ok(HttpResponse::Ok().json(answers::TaskStatusBody { kind, status }))
}

/// Extend a lease.
///
/// Lessee only: refreshes the lease's `heartbeat_at_ms`, which is what lease age (and so the
/// retry gate's `min_lease_age_ms`) is measured from.
#[utoipa::path(post, path = "/a2a/tasks/{id}/heartbeat",
    params(("id" = uuid::Uuid, Path, description = "The task id.", example = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90")),
    request_body(content = HeartbeatRequest, description = "The lease being extended.",
        example = json!({"lease_id": openapi::EXAMPLE_LEASE_ID})),
    responses(
        (status = 200, description = "The refreshed lease.", body = answers::LeaseExtended,
            example = openapi::example_lease_extended),
    )
)]
async fn heartbeat(
    state: State,
    caller: Caller,
    id: web::Path<String>,
    body: WriteRequest,
) -> Answer {
    let id = path_uuid(&id)?;
    let hb = body.read::<HeartbeatRequest>()?;
    let done = state
        .mailbox
        .heartbeat(hb.by(&caller), id, hb.input.lease_id)
        .await?;
    let kind = answers::LeaseExtendedKind::Tag;
    let lease = done.value.clone();
    Ok(answer(&done, answers::LeaseExtended { kind, lease }))
}

/// Cancel a task.
///
/// The task's sender, or an operator (`a2a.operator`), takes back a `queued` or `in_flight`
/// task: it becomes `canceled`, which is terminal and has no result; an in-flight task's lease
/// ends at once, and its lessee's next heartbeat or result answers 409 `task_canceled`. Canceling
/// a canceled task answers the first answer again (`Idempotent-Replayed: true`); an answered
/// task (`result_pending`, `resolved`) is 409 `not_cancelable`. Gates, in order: the task is
/// visible (404 `not_found`), the caller is its sender or an operator (403 `sender_mismatch`),
/// then its state. The body (`{"reason"}`) may be left out. Writes a `capability_check` row
/// (scope `a2a-cancel:<task_id>`) and, when it cancels, an `a2a_task_canceled` row.
#[utoipa::path(post, path = "/a2a/tasks/{id}/cancel",
    params(("id" = uuid::Uuid, Path, description = "The task id.", example = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90")),
    request_body(content = Option<CancelRequest>, description = "Why; the body may be left out (or be `null`).",
        example = json!({"reason": "the customer withdrew the request"})),
    responses(
        (status = 200, description = "Canceled, now or by an earlier call (then `Idempotent-Replayed: true`).",
            body = answers::TaskCanceled, example = openapi::example_task_canceled),
    )
)]
async fn cancel_task(
    state: State,
    caller: Caller,
    id: web::Path<String>,
    body: OptionalWriteRequest,
) -> Answer {
    let id = path_uuid(&id)?;
    // No body, or JSON `null`, is a cancel without a reason.
    let (cancel, key) = body.0.read::<CancelRequest>()?.split();
    let done = state
        .mailbox
        .cancel(key.by(&caller), id, cancel.reason)
        .await?;
    Ok(answer(&done, &done.value))
}
