//! Tasks: a search over the task list (docs/contract.md#listing) by id or its start, agents,
//! state, context, parent, kind, creation time and result status, a page at a time.

use actix_web::{HttpRequest, HttpResponse};
use maud::{html, Markup};
use serde::Deserialize;
use uuid::Uuid;

use super::layout::{ago, encode, given, ok, query_of, state_badge};
use super::refusal::read_query;
use super::session::{see_other, session};
use crate::domain::{AgentId, ResultStatus, TaskState, TaskStatus};
use crate::http::state::State;
use crate::mailbox::listing::ListRequest;
use crate::mailbox::now_ms;

#[derive(Deserialize, Default)]
pub struct Search {
    id: Option<String>,
    sender: Option<String>,
    recipient: Option<String>,
    state: Option<String>,
    context_id: Option<String>,
    parent: Option<String>,
    kind: Option<String>,
    /// Only tasks created in the last this many minutes.
    created: Option<String>,
    /// Only answered tasks whose result has this status.
    result: Option<String>,
    cursor: Option<String>,
}

/// The choices of the search's time filter: minutes, and what they are called.
const CREATED: [(&str, &str); 4] = [
    ("", "any time"),
    ("60", "last hour"),
    ("1440", "last day"),
    ("10080", "last week"),
];

/// The furthest back the creation-time filter reaches, in minutes (a hundred years).
const MAX_CREATED_MINUTES: i64 = 100 * 366 * 24 * 60;

/// What the id box holds: a whole task id, or the start of one (at least 4 characters of an
/// id: hex digits and dashes, as the page shows ids).
enum IdQuery {
    Whole(Uuid),
    Prefix(String),
}

fn id_query(raw: &str) -> Result<IdQuery, String> {
    if let Ok(id) = Uuid::parse_str(raw) {
        return Ok(IdQuery::Whole(id));
    }
    let prefix = raw.to_ascii_lowercase();
    let hexish = prefix.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if hexish && (4..36).contains(&prefix.len()) {
        return Ok(IdQuery::Prefix(prefix));
    }
    Err(format!(
        "{raw:?} is neither a task id nor its start (at least 4 of its characters)"
    ))
}

impl Search {
    fn request(&self) -> Result<ListRequest, String> {
        let agent = |v: &Option<String>| {
            given(v)
                .map(AgentId::parse)
                .transpose()
                .map_err(|e| e.to_string())
        };
        let state = given(&self.state)
            .map(|s| TaskState::parse(s).ok_or_else(|| format!("unknown state {s:?}")))
            .transpose()?;
        let parent = given(&self.parent)
            .map(|p| Uuid::parse_str(p).map_err(|_| format!("parent {p:?} is not a task id")))
            .transpose()?;
        let id_prefix = match given(&self.id).map(id_query).transpose()? {
            Some(IdQuery::Prefix(p)) => Some(p),
            _ => None,
        };
        let created_after_ms = match given(&self.created) {
            None => None,
            Some(m) => {
                // At most a hundred years back: a number past it is refused, never wrapped.
                let minutes: i64 = m
                    .parse()
                    .ok()
                    .filter(|m| (1..=MAX_CREATED_MINUTES).contains(m))
                    .ok_or_else(|| {
                        format!(
                            "created {m:?} is not a number of minutes (1 to {MAX_CREATED_MINUTES})"
                        )
                    })?;
                Some(now_ms().saturating_sub(minutes.saturating_mul(60_000)))
            }
        };
        let result_statuses = match given(&self.result) {
            None => Vec::new(),
            Some(r) => vec![ResultStatus::parse(r)
                .ok_or_else(|| format!("result {r:?} is not ok, error or partial"))?],
        };
        Ok(ListRequest {
            states: state.into_iter().collect(),
            result_statuses,
            task_kind: given(&self.kind).map(str::to_owned),
            created_after_ms,
            id_prefix,
            sender: agent(&self.sender)?,
            recipient: agent(&self.recipient)?,
            context_id: given(&self.context_id).map(str::to_owned),
            parent,
            cursor: given(&self.cursor).map(str::to_owned),
            limit: 50,
            ..ListRequest::default()
        })
    }
}

pub async fn search(state: State, req: HttpRequest) -> HttpResponse {
    let s = match session(&req, &state) {
        Ok(s) => s,
        Err(page) => return *page,
    };
    let q: Search = match read_query(&s, &req, "/dashboard/tasks") {
        Ok(q) => q,
        Err(page) => return *page,
    };
    if let Some(Ok(IdQuery::Whole(id))) = given(&q.id).map(id_query) {
        return see_other(&format!("/dashboard/tasks/{id}"));
    }
    let (page, refusal) = match q.request() {
        Ok(r) => match state.mailbox.list_tasks(&s.caller, &r).await {
            Ok(page) => (Some(page), None),
            Err(e) => (None, Some(e.message)),
        },
        Err(why) => (None, Some(why)),
    };
    let field = |label: &str, name: &str, value: &Option<String>| {
        html! {
            label { (label) input type="text" name=(name) value=[value.as_deref()]; }
        }
    };
    ok(
        "Tasks",
        &s,
        html! {
            h1 { "Tasks" }
            form.filters method="get" {
                (field("task id", "id", &q.id))
                (field("sender", "sender", &q.sender))
                (field("recipient", "recipient", &q.recipient))
                label { "state" select name="state" {
                    option value="" { "any" }
                    @for st in TaskState::ALL {
                        option value=(st.as_str()) selected[given(&q.state) == Some(st.as_str())] { (st.as_str()) }
                    }
                } }
                (field("context id", "context_id", &q.context_id))
                (field("parent", "parent", &q.parent))
                (field("kind", "kind", &q.kind))
                label { "created" select name="created" {
                    @for (m, label) in CREATED {
                        option value=(m) selected[given(&q.created).unwrap_or("") == m] { (label) }
                    }
                } }
                label { "result" select name="result" {
                    @for r in ["", "ok", "error", "partial"] {
                        option value=(r) selected[given(&q.result).unwrap_or("") == r] {
                            @if r.is_empty() { "any" } @else { (r) }
                        }
                    }
                } }
                button.quiet { "Search" }
            }
            @if let Some(why) = refusal { p.bad { (why) } }
            @if let Some(page) = page {
                (task_table(&page.tasks))
                @if let Some(next) = &page.next_cursor {
                    p { a href=(format!("?{}", next_query(&q, next))) { "Next page" } }
                }
            }
        },
    )
}

fn next_query(q: &Search, cursor: &str) -> String {
    let filters = query_of(&[
        ("id", &q.id),
        ("sender", &q.sender),
        ("recipient", &q.recipient),
        ("state", &q.state),
        ("context_id", &q.context_id),
        ("parent", &q.parent),
        ("kind", &q.kind),
        ("created", &q.created),
        ("result", &q.result),
    ]);
    let cursor = format!("cursor={}", encode(cursor));
    [filters, cursor]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("&")
}

fn task_table(tasks: &[TaskStatus]) -> Markup {
    let now = now_ms().max(0) as u64;
    html! {
        table #tasks {
            tr { th { "task" } th { "state" } th { "sender → recipient" } th { "intent" } th { "created" } }
            @for t in tasks {
                tr data-task=(t.task.id) {
                    td { a.mono href=(format!("/dashboard/tasks/{}", t.task.id)) { (t.task.id) } }
                    td.state { (state_badge(t)) }
                    td { (t.task.sender.as_str()) " → " (t.task.recipient.as_str()) }
                    td { (t.task.intent_text) }
                    td { (ago(t.created_at_ms, now)) }
                }
            }
        }
        @if tasks.is_empty() { p.hint { "No task matches." } }
    }
}
