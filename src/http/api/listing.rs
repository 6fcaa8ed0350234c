//! Listing routes (docs/contract.md#listing): every visible task newest first, and a task's children with their tally.

use actix_web::{web, HttpResponse};
use serde::Deserialize;

use crate::auth::Caller;
use crate::domain::answers;
use crate::domain::{no_nul, AgentId, TaskState, MAX_MS};
use crate::error::MailboxError;
use crate::http::openapi;
use crate::http::params::{limit, path_uuid};
use crate::http::respond::{api_routes, Answer};
use crate::http::state::State;
use crate::mailbox::listing::{ListRequest, Role};

// `GET /a2a/tasks` shares its path with `tasks`'s `POST /a2a/tasks`: the two are served as one path.
api_routes! {
    tag = "tasks";
    list_tasks => [
        "`invalid_request`: an unknown `state` or `role`, a bad AgentId, a `parent` that is not a UUID, a time out of range, a malformed `cursor`, or a non-integer `limit`.",
    ];
    children => [
        "`invalid_request`: the id is not a UUID, or a filter, the `cursor` or `limit` is malformed (as for `GET /a2a/tasks`).",
        "`not_found`: no task with this id is visible to the caller.",
    ];
}

/// The filters of a list, as the query string carries them.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// Keep tasks in these states: one or more of `queued`, `in_flight`, `result_pending`, `resolved`, `canceled`, comma-separated.
    #[param(
        pattern = r"^(queued|in_flight|result_pending|resolved|canceled)(,(queued|in_flight|result_pending|resolved|canceled))*$",
        example = "queued,in_flight"
    )]
    state: Option<String>,
    /// `sender`: tasks the caller sent; `recipient`: tasks addressed to the caller; `any` (the default): every task visible to the caller (for an operator, every task).
    role: Option<Role>,
    /// Keep tasks sent by this agent.
    #[param(value_type = Option<AgentId>, example = "research@acme")]
    sender: Option<String>,
    /// Keep tasks addressed to this agent.
    #[param(value_type = Option<AgentId>, example = "billing@acme")]
    recipient: Option<String>,
    /// Keep the children of this task (its `parent`).
    #[param(value_type = Option<uuid::Uuid>, example = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90")]
    parent: Option<String>,
    /// Keep tasks of this conversation.
    #[param(example = "conversation-42")]
    context_id: Option<String>,
    /// Keep tasks of this kind.
    #[param(example = "refund")]
    task_kind: Option<String>,
    /// Keep tasks created after this instant (`created_at_ms >` it), in epoch milliseconds.
    #[param(minimum = 0, maximum = 9223372036854775807_u64)]
    created_after_ms: Option<u64>,
    /// Keep tasks created before this instant (`created_at_ms <` it), in epoch milliseconds.
    #[param(minimum = 0, maximum = 9223372036854775807_u64)]
    created_before_ms: Option<u64>,
    /// The `next_cursor` of the previous page, unchanged (opaque; its form may change). Walking every page with the same filters returns each task that existed at the first call exactly once. Empty: the first page.
    #[param(
        pattern = r"^([0-9]{1,18}\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})?$",
        example = "1736239990000.0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90"
    )]
    cursor: Option<String>,
    /// How many tasks a page holds at most. Defaults to 10; any other value is clamped to 1..=1000 (out-of-range values are not refused).
    #[param(minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64, example = 10)]
    limit: Option<i64>,
}

impl ListQuery {
    pub(crate) fn request(&self) -> Result<ListRequest, MailboxError> {
        let agent = |v: &Option<String>| {
            v.as_deref()
                .map(AgentId::parse)
                .transpose()
                .map_err(MailboxError::invalid)
        };
        let ms = |name: &str, v: Option<u64>| match v {
            Some(v) if v > MAX_MS => Err(MailboxError::invalid(format!("{name} is out of range"))),
            v => Ok(v.map(|v| v as i64)),
        };
        no_nul("context_id", self.context_id.as_deref())?;
        no_nul("task_kind", self.task_kind.as_deref())?;
        let mut states = Vec::new();
        for s in self.state.iter().flat_map(|s| s.split(',')) {
            let state = TaskState::parse(s.trim()).ok_or_else(|| {
                MailboxError::invalid(format!(
                    "unknown state {s:?}: use queued, in_flight, result_pending, resolved or canceled"
                ))
            })?;
            states.push(state);
        }
        Ok(ListRequest {
            states,
            role: self.role.unwrap_or_default(),
            sender: agent(&self.sender)?,
            recipient: agent(&self.recipient)?,
            parent: self.parent.as_deref().map(path_uuid).transpose()?,
            context_id: self.context_id.clone(),
            task_kind: self.task_kind.clone(),
            // An empty cursor is the first page, like none.
            cursor: self.cursor.clone().filter(|c| !c.is_empty()),
            created_after_ms: ms("created_after_ms", self.created_after_ms)?,
            created_before_ms: ms("created_before_ms", self.created_before_ms)?,
            limit: limit(self.limit),
            ..ListRequest::default()
        })
    }
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
    params(("id" = uuid::Uuid, Path, description = "The parent task's id.", example = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90"), ListQuery),
    responses(
        (status = 200, description = "The children's tally and one page of them, newest first.", body = answers::TaskChildren,
            example = openapi::example_task_children),
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
