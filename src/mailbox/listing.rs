//! Listing and the task graph (docs/contract.md#listing): which tasks a caller may list, what `role` means, the
//! opaque keyset cursor, and the children's tally.

use uuid::Uuid;

use super::{not_found, visible_to, Mailbox};
use crate::auth::Caller;
use crate::domain::answers::{TaskChildren, TaskChildrenKind, TaskPage, TaskPageKind};
use crate::domain::{AgentId, ResultStatus, TaskState};
use crate::error::MailboxError;
use crate::store::{ListColumn, PageAfter, TaskFilter, TaskRow};

pub use a2a_mailbox_types::{ChildCounts, Role};

/// What a list asks for: every filter of docs/contract.md#listing, the cursor and the page size.
#[derive(Clone, Debug, Default)]
pub struct ListRequest {
    pub states: Vec<TaskState>,
    /// Only answered tasks whose result has one of these statuses (empty: any task).
    pub result_statuses: Vec<ResultStatus>,
    pub role: Role,
    pub sender: Option<AgentId>,
    pub recipient: Option<AgentId>,
    pub parent: Option<Uuid>,
    pub context_id: Option<String>,
    pub task_kind: Option<String>,
    pub created_after_ms: Option<i64>,
    pub created_before_ms: Option<i64>,
    /// Only tasks whose state changed after this instant.
    pub updated_after_ms: Option<i64>,
    /// Only tasks whose id starts with this (lower-case hex digits and dashes).
    pub id_prefix: Option<String>,
    pub cursor: Option<String>,
    pub limit: i64,
}

impl Mailbox {
    /// `GET /a2a/tasks`.
    pub async fn list_tasks(
        &self,
        caller: &Caller,
        req: &ListRequest,
    ) -> Result<TaskPage, MailboxError> {
        let after = req.cursor.as_deref().map(decode_cursor).transpose()?;
        let filter = list_filter(caller, req);
        // One row more than the page tells whether another page follows.
        let mut rows = self
            .store
            .task_page(&filter, after.as_ref(), req.limit.saturating_add(1))
            .await?;
        let more = rows.len() as i64 > req.limit;
        rows.truncate(req.limit as usize);
        let next_cursor = match rows.last() {
            Some(last) if more => Some(encode_cursor(last)),
            _ => None,
        };
        let tasks = rows.iter().map(TaskRow::status).collect::<Result<_, _>>()?;
        Ok(TaskPage {
            kind: TaskPageKind::Tag,
            tasks,
            next_cursor,
        })
    }

    /// How many tasks the list `req` walks over all its pages, counted up to `cap` (a list of
    /// more answers `cap`, and costs no more than counting `cap`).
    pub async fn count_tasks(
        &self,
        caller: &Caller,
        req: &ListRequest,
        cap: u64,
    ) -> Result<u64, MailboxError> {
        let cap = i64::try_from(cap).unwrap_or(i64::MAX);
        self.store.count_up_to(&list_filter(caller, req), cap).await
    }

    /// `GET /a2a/tasks/{id}/children`: the list with `parent = id` after a visibility check of
    /// the parent, and the tally of every visible child by state (whatever the `state` filter).
    pub async fn children(
        &self,
        caller: &Caller,
        parent: Uuid,
        req: &ListRequest,
    ) -> Result<TaskChildren, MailboxError> {
        match self.store.task(&parent.to_string()).await? {
            Some(row) if visible_to(&row, caller) => {}
            _ => return Err(not_found(parent)),
        }
        let req = ListRequest {
            parent: Some(parent),
            ..req.clone()
        };
        let mut counts = ChildCounts::default();
        let everyone = TaskFilter {
            states: Vec::new(),
            ..list_filter(caller, &req)
        };
        for (state, n) in self.store.count_by_state(&everyone).await? {
            let n = n.max(0) as u64;
            match TaskState::parse(&state) {
                Some(TaskState::Queued) => counts.queued = n,
                Some(TaskState::InFlight) => counts.in_flight = n,
                Some(TaskState::ResultPending) => counts.result_pending = n,
                Some(TaskState::Resolved) => counts.resolved = n,
                Some(TaskState::Canceled) => counts.canceled = n,
                None => {}
            }
        }
        let page = self.list_tasks(caller, &req).await?;
        Ok(TaskChildren {
            kind: TaskChildrenKind::Tag,
            parent,
            counts,
            tasks: page.tasks,
            next_cursor: page.next_cursor,
        })
    }
}

/// The filter of a list: what the caller may see, its role, and the state, equality and time
/// filters.
fn list_filter(caller: &Caller, req: &ListRequest) -> TaskFilter {
    let me = caller.sub.as_str().to_owned();
    let mut equal = Vec::new();
    match req.role {
        Role::Sender => equal.push((ListColumn::Sender, me.clone())),
        Role::Recipient => equal.push((ListColumn::Recipient, me.clone())),
        Role::Any => {}
    }
    let columns = [
        (
            ListColumn::Sender,
            req.sender.as_ref().map(AgentId::to_string),
        ),
        (
            ListColumn::Recipient,
            req.recipient.as_ref().map(AgentId::to_string),
        ),
        (ListColumn::Parent, req.parent.map(|p| p.to_string())),
        (ListColumn::ContextId, req.context_id.clone()),
        (ListColumn::TaskKind, req.task_kind.clone()),
    ];
    equal.extend(columns.into_iter().filter_map(|(c, v)| v.map(|v| (c, v))));
    TaskFilter {
        visible_to: (!caller.is_operator()).then_some(me),
        states: req.states.iter().map(|s| s.as_str()).collect(),
        result_statuses: req.result_statuses.iter().map(|s| s.as_str()).collect(),
        equal,
        created_after_ms: req.created_after_ms,
        created_before_ms: req.created_before_ms,
        updated_after_ms: req.updated_after_ms,
        id_prefix: req.id_prefix.clone(),
    }
}

/// The cursor after `row`: opaque to clients (its form may change), stable for a walk.
fn encode_cursor(row: &TaskRow) -> String {
    format!("{}.{}", row.created_at_ms, row.id)
}

fn decode_cursor(cursor: &str) -> Result<PageAfter, MailboxError> {
    let bad = || {
        MailboxError::invalid(format!(
            "malformed cursor {cursor:?}: pass a next_cursor unchanged"
        ))
    };
    let (ms, id) = cursor.split_once('.').ok_or_else(bad)?;
    let created_at_ms: i64 = ms.parse().map_err(|_| bad())?;
    let id = Uuid::parse_str(id).map_err(|_| bad())?;
    if created_at_ms < 0 {
        return Err(bad());
    }
    Ok(PageAfter {
        created_at_ms,
        id: id.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::decode_cursor;

    #[test]
    fn cursors_are_checked() {
        let id = uuid::Uuid::new_v4();
        let c = decode_cursor(&format!("17.{id}")).unwrap();
        assert_eq!((c.created_at_ms, c.id), (17, id.to_string()));
        for bad in ["", "17", "x.y", &format!("-1.{id}"), &format!("17.{id}x")] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
    }
}
