//! Listing routes (docs/contract.md#listing): every visible task newest first, and a task's children with their tally.

use actix_web::{web, HttpResponse};

use crate::auth::Caller;
use crate::domain::answers;
use crate::http::openapi;
use crate::http::params::{path_uuid, ListQuery};
use crate::http::respond::{api_routes, Answer};
use crate::http::state::State;

// `GET /a2a/tasks` shares its path with `tasks`'s `POST /a2a/tasks`: the two are served as one path.
api_routes! {
    tag = "tasks";
    list_tasks => [
        "`invalid_request`: an unknown `state` or `role`, a bad AgentId, a `parent` that is not a \
         UUID, a time out of range, a malformed `cursor`, or a non-integer `limit`.",
    ];
    children => [
        "`invalid_request`: the id is not a UUID, or a filter, the `cursor` or `limit` is \
         malformed (as for `GET /a2a/tasks`).",
        "`not_found`: no task with this id is visible to the caller.",
    ];
}

/// List tasks, newest first.
///
/// Every task visible to the caller (sent by it, addressed to it or leased by it; operators see
/// every task), in every state, newest first (creation time, then id, both descending), after
/// the filters. A page is a keyset range of an index: its cost does not grow with the tasks that
/// are not on it. `next_cursor` is `null` on the last page.
#[utoipa::path(get, path = "/a2a/tasks",
    params(ListQuery),
    responses(
        (status = 200, description = "One page of tasks, newest first.", body = answers::TaskPage,
            example = openapi::example_task_page),
    )
)]
async fn list_tasks(state: State, caller: Caller, q: web::Query<ListQuery>) -> Answer {
    let page = state.mailbox.list_tasks(&caller, &q.request()?).await?;
    Ok(HttpResponse::Ok().json(page))
}

/// List a task's children, with their tally by state.
///
/// The list of `GET /a2a/tasks` with `parent = id`, after a visibility check of the parent, and
/// `counts`: every visible child by state, whatever the `state` filter and the page. A sender
/// that fanned out N tasks is done when `result_pending + resolved + canceled == N`.
#[utoipa::path(get, path = "/a2a/tasks/{id}/children",
    params(
        ("id" = uuid::Uuid, Path, description = "The parent task's id.",
            example = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90"),
        ListQuery,
    ),
    responses(
        (status = 200, description = "The children's tally and one page of them, newest first.",
            body = answers::TaskChildren, example = openapi::example_task_children),
    )
)]
async fn children(
    state: State,
    caller: Caller,
    id: web::Path<String>,
    q: web::Query<ListQuery>,
) -> Answer {
    let parent = path_uuid(&id)?;
    let children = state
        .mailbox
        .children(&caller, parent, &q.request()?)
        .await?;
    Ok(HttpResponse::Ok().json(children))
}
