//! Result routes: post a result, drain the next, peek.

use actix_web::{web, HttpResponse};

use crate::auth::Caller;
use crate::domain::answers;
use crate::domain::PostResult;
use crate::http::openapi;
use crate::http::params::{limit, wait, LimitQuery, TakeQuery, WaitQuery};
use crate::http::respond::{answer, api_routes, Answer};
use crate::http::state::State;
use crate::http::write::WriteRequest;

api_routes! {
    tag = "results";
    post_result => [
        "`invalid_request`: malformed JSON, wrong types, a `content[].value` nested deeper than \
         `A2A_MAILBOX_MAX_JSON_DEPTH` (64 by default), or a bad `Idempotency-Key` header.",
        "`capability_missing` / `capability_scope_mismatch`: the token does not grant \
         `a2a.respond.<sender>` for this task. `not_lessee`: the caller does not hold the task's \
         lease (or did not answer it).",
        "`unknown_task`: no task with this id is visible to the caller.",
        "`task_canceled`: the task was canceled (the lessee should stop working on it). \
         `not_in_flight`: the task is queued (never leased, or requeued). `lease_mismatch`: \
         `lease_id` is not the current lease. `result_conflict`: the task was already answered \
         with a different result.",
    ];
    drain_next_result => [
        "`invalid_request`: `wait_ms` is not an integer in 0..=30000, `max` is not an integer in \
         1..=100, or `attempt_id` is not a UUID.",
        "`idempotency_in_flight`: another take with this `attempt_id` is running.",
        "`idempotency_key_reused`: this `attempt_id` was used for another request.",
    ];
    recent_results => [
        "`invalid_request`: `limit` is not a 64-bit integer.",
    ];
}

/// Post the result of a leased task.
///
/// Checks, in order: the task must exist and be visible (404 `unknown_task`, before any
/// capability check); the token must grant `a2a.respond.<sender>` (403); the caller must hold
/// the lease or be an operator (403 `not_lessee`); the task must be in flight (409
/// `not_in_flight`); a given `lease_id` must be the current lease (409 `lease_mismatch`). Once a
/// task is answered, the same result posted again by the one who answered it (or an operator) is
/// a 200 replay, and a different one is 409 `result_conflict`.
#[utoipa::path(post, path = "/a2a/results",
    request_body(content = PostResult, description = "The result, with an optional fencing `lease_id`.",
        example = openapi::example_post_result),
    params(crate::http::trace::TraceHeaders),
    responses(
        (status = 201, description = "Stored for the sender.", body = answers::ResultPosted),
        (status = 200, description = "Replay: this task was already answered with this result; the first answer again.",
            body = answers::ResultPosted),
    )
)]
async fn post_result(state: State, caller: Caller, body: WriteRequest) -> Answer {
    let mut result = body.read::<PostResult>()?;
    if result.input.trace.is_none() {
        result.input.trace = body.trace();
    }
    let done = state
        .mailbox
        .post_result(result.by(&caller), &result.input)
        .await?;
    Ok(answer(&done, &done.value))
}

/// Drain the oldest pending result of a task the caller sent.
///
/// The drained task becomes `resolved`. Results never echo a `lease_id`. With `max`, up to that
/// many are drained in one transaction and answered as a batch (`a2a_result_batch`), oldest
/// first. With `attempt_id`, a retry of a drain whose answer was lost answers the same results.
#[utoipa::path(get, path = "/a2a/results/next",
    params(WaitQuery, TakeQuery),
    responses(
        (status = 200, description = "Without `max`: the drained result, or `null` when none \
            arrived within `wait_ms`. With `max`: 0 to `max` drained results, oldest first.",
            body = answers::NextResults,
            examples(
                ("drained" = (value = json!(openapi::example_result_opt()))),
                ("empty" = (value = json!(openapi::example_result_opt_empty()))),
                ("batch" = (value = json!(openapi::example_result_batch()))),
            )),
    )
)]
async fn drain_next_result(
    state: State,
    caller: Caller,
    q: web::Query<WaitQuery>,
    take: web::Query<TakeQuery>,
) -> Answer {
    let wait = wait(q.wait_ms)?;
    let (max, attempt) = take.read("GET /a2a/results/next", "")?;
    let Some(max) = max else {
        let result = state.mailbox.drain_result(&caller, wait, attempt).await?;
        return Ok(HttpResponse::Ok().json(result));
    };
    let drained = state
        .mailbox
        .drain_batch(&caller, max, wait, attempt)
        .await?;
    Ok(HttpResponse::Ok().json(drained))
}

/// Peek at pending results of the caller's tasks, oldest first. Never consumes.
#[utoipa::path(get, path = "/a2a/results/recent",
    params(LimitQuery),
    responses(
        (status = 200, description = "Pending results, oldest first.", body = answers::Results,
            example = openapi::example_results),
    )
)]
async fn recent_results(state: State, caller: Caller, q: web::Query<LimitQuery>) -> Answer {
    let results = state
        .mailbox
        .recent_results(&caller, limit(q.limit))
        .await?;
    Ok(HttpResponse::Ok().json(results))
}
