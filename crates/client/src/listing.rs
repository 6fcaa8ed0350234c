//! Listing and the task graph (docs/contract.md#listing).

use uuid::Uuid;

use crate::call::{present, Call};
use crate::{AgentId, Client, Error};
use a2a_mailbox_types::answers::{TaskChildren, TaskPage};
use a2a_mailbox_types::{Role, TaskState};

/// The filters and page of `GET /a2a/tasks` (and of a task's children). Empty: every visible
/// task, newest first, 10 per page.
///
/// ```
/// use a2a_mailbox_client::ListQuery;
/// use a2a_mailbox_types::TaskState;
///
/// let pending = ListQuery {
///     states: vec![TaskState::Queued, TaskState::InFlight],
///     limit: Some(100),
///     ..ListQuery::default()
/// };
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListQuery {
    /// Keep tasks in these states (any, when empty).
    pub states: Vec<TaskState>,
    /// Tasks this agent sent, received, or any visible one.
    pub role: Option<Role>,
    /// Keep tasks from this sender.
    pub sender: Option<AgentId>,
    /// Keep tasks for this recipient.
    pub recipient: Option<AgentId>,
    /// Keep the children of this task.
    pub parent: Option<Uuid>,
    /// Keep one conversation.
    pub context_id: Option<String>,
    /// Keep one kind of task.
    pub task_kind: Option<String>,
    /// Keep tasks created after this instant (epoch ms, exclusive).
    pub created_after_ms: Option<u64>,
    /// Keep tasks created before this instant (epoch ms, exclusive).
    pub created_before_ms: Option<u64>,
    /// Tasks per page (1..=1000; the mailbox's default is 10).
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl ListQuery {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if !self.states.is_empty() {
            let states: Vec<&str> = self.states.iter().map(|s| s.as_str()).collect();
            q.push(("state", states.join(",")));
        }
        if let Some(r) = self.role {
            q.push(("role", role_str(r).to_owned()));
        }
        let texts = [
            ("sender", self.sender.as_ref().map(AgentId::to_string)),
            ("recipient", self.recipient.as_ref().map(AgentId::to_string)),
            ("parent", self.parent.map(|p| p.to_string())),
            ("context_id", self.context_id.clone()),
            ("task_kind", self.task_kind.clone()),
            (
                "created_after_ms",
                self.created_after_ms.map(|v| v.to_string()),
            ),
            (
                "created_before_ms",
                self.created_before_ms.map(|v| v.to_string()),
            ),
            ("limit", self.limit.map(|v| v.to_string())),
            ("cursor", self.cursor.clone()),
        ];
        q.extend(present(texts));
        q
    }
}

fn role_str(role: Role) -> &'static str {
    match role {
        Role::Sender => "sender",
        Role::Recipient => "recipient",
        Role::Any => "any",
    }
}

impl Client {
    /// One page of the tasks visible to this agent, in any state, newest first; pass its
    /// `next_cursor` as [`ListQuery::cursor`] for the next page.
    ///
    /// ```no_run
    /// # async fn demo(client: a2a_mailbox_client::Client) -> Result<(), a2a_mailbox_client::Error> {
    /// use a2a_mailbox_client::ListQuery;
    /// let mut query = ListQuery::default();
    /// loop {
    ///     let page = client.list_tasks(&query).await?;
    ///     for status in &page.tasks {
    ///         println!("{} {}", status.task.id, status.state.as_str());
    ///     }
    ///     match page.next_cursor {
    ///         Some(cursor) => query.cursor = Some(cursor),
    ///         None => break,
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_tasks(&self, query: &ListQuery) -> Result<TaskPage, Error> {
        let call = Call::get("/a2a/tasks").query(query.pairs());
        let page = self.call::<TaskPage>(call).await?.value;
        let mut ledger = self.ledger();
        page.tasks.iter().for_each(|s| ledger.observe(s));
        Ok(page)
    }

    /// One page of a task's children, and their tally by state over every visible child: a
    /// sender that fanned out N tasks is done when `result_pending + resolved + canceled == N`.
    pub async fn children(&self, parent: Uuid, query: &ListQuery) -> Result<TaskChildren, Error> {
        let call = Call::get(format!("/a2a/tasks/{parent}/children")).query(query.pairs());
        let page = self.call::<TaskChildren>(call).await?.value;
        let mut ledger = self.ledger();
        page.tasks.iter().for_each(|s| ledger.observe(s));
        Ok(page)
    }
}
