//! The batch routes (docs/contract.md#batch, docs/contract.md#batches): many tasks sent in one
//! transaction, all or nothing; many results posted, or many leases extended, in one
//! transaction, each item answered as its single form would be.

use serde::de::DeserializeOwned;
use serde_json::Value;
use uuid::Uuid;

use crate::auth::Caller;
use crate::domain::answers::{self, HeartbeatBatch, LeaseItem, LeaseRef, ResultBatch, ResultItem};
use crate::domain::{PostResult, TaskBatch};
use crate::error::{ErrorCode, MailboxError};
use crate::http::error::status;
use crate::http::openapi;
use crate::http::params::typed_owned;
use crate::http::respond::{answer, api_routes, Answer};
use crate::http::state::State;
use crate::http::write::WriteRequest;
use crate::mailbox::batch::MAX_BATCH;
use crate::mailbox::batch_items::ItemOutcomes;
use crate::mailbox::Done;

// Registered before `/a2a/tasks/{id}`, which would take `batch` for an id.
api_routes! {
    tag = "tasks";
    send_batch => [
        "`invalid_request`: no tasks or more than 500, a task id twice (`index` names the second), \
         an invalid task (`index` names it), or a bad `Idempotency-Key` header.",
        "`sender_mismatch` / `capability_missing` / `capability_scope_mismatch`: a task's gates \
         refused it (`index` names it); nothing was stored.",
        "`task_id_conflict`: a task's id is used by a different task (`index` names it); nothing was stored.",
        "`payload_too_large`: the body is larger than `A2A_MAILBOX_BATCH_BODY_LIMIT_BYTES` (8 MiB by default).",
    ];
    post_results_batch => [
        "`invalid_request`: the body is not `{\"results\": [...]}`, holds no result or more than \
         500, an invalid result (`index` names it), one task id twice (`index` names the second), \
         or a bad `Idempotency-Key` header. Nothing was stored.",
        "`payload_too_large`: the body is larger than `A2A_MAILBOX_BATCH_BODY_LIMIT_BYTES` (8 MiB by default).",
    ];
    heartbeat_leases => [
        "`invalid_request`: the body is not `{\"leases\": [...]}`, holds no lease or more than \
         500, an invalid lease (`index` names it), one task id twice (`index` names the second), \
         or a bad `Idempotency-Key` header. Nothing was changed.",
        "`payload_too_large`: the body is larger than `A2A_MAILBOX_BATCH_BODY_LIMIT_BYTES` (8 MiB by default).",
    ];
}

/// Send many tasks at once.
///
/// One transaction: every task passes the gates of a single send (`POST /a2a/tasks`), in array
/// order, and the first that fails decides the answer (its status and code, with `index`, its
/// position) and nothing is stored. Two tasks with one id → 400 with the index of the second. A
/// task whose id exists with the same body is a replay of that item (`replayed: true`); with
/// another body, 409 `task_id_conflict` for the whole batch. A result-cache hit creates its task
/// already answered, as a single send would. Tasks of one batch for one recipient are leased in
/// array order. An `Idempotency-Key` covers the whole batch. The audit feed records each
/// distinct check once: 500 tasks for one recipient write one `capability_check` row for
/// `a2a-send:<recipient>`, a fan-out to 500 recipients 500 rows.
#[utoipa::path(post, path = "/a2a/tasks/batch",
    request_body(content = TaskBatch, description = "The tasks, in the order they are queued.",
        example = openapi::example_batch),
    params(crate::http::trace::TraceHeaders),
    responses(
        (status = 201, description = "Stored: at least one task was created. One item per task, in request order.",
            body = answers::TasksQueued, example = openapi::example_tasks_queued),
        (status = 200, description = "Every task already existed with this body: the first answers again.",
            body = answers::TasksQueued),
    )
)]
async fn send_batch(state: State, caller: Caller, body: WriteRequest) -> Answer {
    let trace = body.trace();
    let (body, key) = body.object("batch")?.split();
    let mut batch: TaskBatch = typed_owned("batch", body)?;
    crate::http::trace::carry_each(&mut batch.tasks, trace.as_ref());
    if batch.tasks.len() > MAX_BATCH {
        return Err(MailboxError::invalid(format!(
            "a batch holds at most {MAX_BATCH} tasks, not {}",
            batch.tasks.len()
        )));
    }
    let done = state
        .mailbox
        .send_batch(key.by(&caller), batch.tasks)
        .await?;
    Ok(answer(
        &done,
        answers::TasksQueued {
            kind: answers::TasksQueuedKind::Tag,
            tasks: done.value.clone(),
        },
    ))
}

/// Post many results at once.
///
/// A body that is not `{"results": [...]}` with 1 to 500 results, a result that is not a valid
/// `POST /a2a/results` body, or one task id twice refuses the whole request (400, `index` names
/// the item) and changes nothing. Otherwise each result is judged as a single
/// `POST /a2a/results` would judge it, in array order (its own gates, fence and audit rows), the
/// accepted ones are stored in one transaction, and each item answers with the single post's
/// status: 201 stored, 200 the same result again (`replayed: true`), or its refusal's status,
/// `code` and `message` (a superseded lease is refused alone). An `Idempotency-Key` covers the
/// whole request.
#[utoipa::path(post, path = "/a2a/results/batch",
    request_body(content = ResultBatch, description = "The results, each with an optional fencing `lease_id`.",
        example = openapi::example_result_batch_body),
    params(crate::http::trace::TraceHeaders),
    responses(
        (status = 200, description = "One item per result, in request order.",
            body = answers::ResultsPosted, example = openapi::example_results_posted),
    )
)]
async fn post_results_batch(state: State, caller: Caller, body: WriteRequest) -> Answer {
    let trace = body.trace();
    let (body, key) = body.object("result batch")?.split();
    let mut batch: ResultBatch = typed_owned("result batch", body)?;
    crate::http::trace::carry_each(&mut batch.results, trace.as_ref());
    let results: Vec<PostResult> = items("result", batch.results)?;
    let done = state.mailbox.post_results(key.by(&caller), results).await?;
    let results = each(&done.value, |task_id, status, code, message, done| {
        ResultItem {
            task_id,
            status,
            code: code.copied(),
            message,
            replayed: done.is_some_and(|d| d.replayed),
        }
    });
    Ok(answer(
        &done,
        answers::ResultsPosted {
            kind: answers::ResultsPostedKind::Tag,
            results,
        },
    ))
}

/// Extend many leases at once.
///
/// The same whole-request rules as `POST /a2a/results/batch` (1 to 500 leases, each
/// `{"task_id", "lease_id"}`, no task id twice); then each lease is extended as a single
/// `POST /a2a/tasks/{id}/heartbeat` would, in one transaction, and answers with that status:
/// 200 with the refreshed `lease`, or its refusal's status, `code` and `message` (409
/// `task_canceled`: stop working on that task).
#[utoipa::path(post, path = "/a2a/tasks/heartbeat",
    request_body(content = HeartbeatBatch, description = "The leases being extended.",
        example = openapi::example_heartbeat_batch),
    responses(
        (status = 200, description = "One item per lease, in request order.",
            body = answers::LeasesExtended, example = openapi::example_leases_extended),
    )
)]
async fn heartbeat_leases(state: State, caller: Caller, body: WriteRequest) -> Answer {
    let (body, key) = body.object("heartbeat batch")?.split();
    let batch: HeartbeatBatch = typed_owned("heartbeat batch", body)?;
    let leases: Vec<LeaseRef> = items("lease", batch.leases)?;
    let done = state.mailbox.heartbeats(key.by(&caller), leases).await?;
    let leases = each(&done.value, |task_id, status, code, message, done| {
        LeaseItem {
            task_id,
            status,
            code: code.copied(),
            message,
            lease: done.map(|d| d.value.clone()),
        }
    });
    Ok(answer(
        &done,
        answers::LeasesExtended {
            kind: answers::LeasesExtendedKind::Tag,
            leases,
        },
    ))
}

/// Each item of a batch body read as `T`; the first that is not one refuses the request, with
/// its `index`.
fn items<T: DeserializeOwned>(what: &str, raw: Vec<Value>) -> Result<Vec<T>, MailboxError> {
    raw.into_iter()
        .enumerate()
        .map(|(index, item)| typed_owned::<T>(what, item).map_err(|e| e.at_index(index)))
        .collect()
}

/// Each item's outcome as its single form answers it: its task id, its HTTP status (201
/// created, 200 otherwise, or the refusal's), the refusal's code and message, and what it
/// answered when it succeeded.
fn each<T, I>(
    outcomes: &ItemOutcomes<T>,
    make: impl Fn(Uuid, u16, Option<&ErrorCode>, Option<String>, Option<&Done<T>>) -> I,
) -> Vec<I> {
    outcomes
        .iter()
        .map(|(task_id, outcome)| match outcome {
            Ok(done) => make(
                *task_id,
                if done.created { 201 } else { 200 },
                None,
                None,
                Some(done),
            ),
            Err(e) => make(
                *task_id,
                status(e.code).as_u16(),
                Some(&e.code),
                Some(e.message.clone()),
                None,
            ),
        })
        .collect()
}
