//! The batch route (docs/contract.md#batch): many tasks in one transaction, all or nothing.

use crate::auth::Caller;
use crate::domain::answers;
use crate::domain::TaskBatch;
use crate::error::MailboxError;
use crate::http::openapi;
use crate::http::params::typed_owned;
use crate::http::respond::{answer, api_routes, Answer};
use crate::http::state::State;
use crate::http::write::WriteRequest;
use crate::mailbox::batch::MAX_BATCH;

// Registered before `/a2a/tasks/{id}`, which would take `batch` for an id.
api_routes! {
    tag = "tasks";
    send_batch => [
        "`invalid_request`: no tasks or more than 500, a task id twice (`index` names the second), \
         an invalid task (`index` names it), or a bad `Idempotency-Key` header.",
        "`sender_mismatch` / `capability_missing` / `capability_scope_mismatch`: a task's gates \
         refused it (`index` names it); nothing was stored.",
        "`task_id_conflict`: a task's id is used by a different task (`index` names it); nothing was stored.",
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
    responses(
        (status = 201, description = "Stored: at least one task was created. One item per task, in request order.",
            body = answers::TasksQueued, example = openapi::example_tasks_queued),
        (status = 200, description = "Every task already existed with this body: the first answers again.",
            body = answers::TasksQueued),
    )
)]
async fn send_batch(state: State, caller: Caller, body: WriteRequest) -> Answer {
    let (body, key) = body.object("batch")?.split();
    let batch: TaskBatch = typed_owned("batch", body)?;
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
