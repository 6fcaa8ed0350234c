//! `tasks` and `children`: the task list (docs/contract.md#listing) with its filters, one page or every page.

use std::future::Future;

use a2a_mailbox_client::types::answers::{TaskChildren, TaskPage};
use a2a_mailbox_client::types::{Role, TaskState, TaskStatus};
use a2a_mailbox_client::{AgentId, ListQuery};
use anyhow::anyhow;
use clap::Args;

use super::args::{pretty, ClientArgs};

/// The filters of `GET /a2a/tasks`, as flags.
#[derive(Args, Debug, Clone)]
pub struct ListFlags {
    /// Keep tasks in these states (comma-separated: queued,in_flight,result_pending,resolved,canceled).
    #[arg(long)]
    pub state: Option<String>,
    /// sender | recipient | any.
    #[arg(long)]
    pub role: Option<String>,
    #[arg(long)]
    pub sender: Option<String>,
    #[arg(long)]
    pub recipient: Option<String>,
    #[arg(long)]
    pub parent: Option<uuid::Uuid>,
    #[arg(long)]
    pub context_id: Option<String>,
    #[arg(long)]
    pub task_kind: Option<String>,
    /// Tasks per page (1..=1000).
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// Follow the cursors to the last page.
    #[arg(long)]
    pub all: bool,
    /// Print the server's JSON (one object; with --all, the pages' tasks together).
    #[arg(long)]
    pub json: bool,
}

/// A flag's value that the request cannot carry: refused as the mailbox would refuse it.
fn invalid(flag: &str, why: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("invalid_request: --{flag}: {why}")
}

impl ListFlags {
    fn query(&self) -> anyhow::Result<ListQuery> {
        let agent = |flag, v: &Option<String>| {
            v.as_deref()
                .map(|s| AgentId::parse(s).map_err(|e| invalid(flag, e)))
                .transpose()
        };
        let states = match &self.state {
            None => Vec::new(),
            Some(s) => s
                .split(',')
                .map(|one| {
                    TaskState::parse(one.trim())
                        .ok_or_else(|| invalid("state", format!("{one:?} is not a task state")))
                })
                .collect::<anyhow::Result<_>>()?,
        };
        let role = match self.role.as_deref() {
            None => None,
            Some("sender") => Some(Role::Sender),
            Some("recipient") => Some(Role::Recipient),
            Some("any") => Some(Role::Any),
            Some(other) => {
                return Err(invalid(
                    "role",
                    format!("{other:?} is not sender, recipient or any"),
                ))
            }
        };
        Ok(ListQuery {
            states,
            role,
            sender: agent("sender", &self.sender)?,
            recipient: agent("recipient", &self.recipient)?,
            parent: self.parent,
            context_id: self.context_id.clone(),
            task_kind: self.task_kind.clone(),
            limit: Some(self.limit),
            ..ListQuery::default()
        })
    }
}

#[derive(Args, Debug)]
pub struct TasksArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    #[command(flatten)]
    pub list: ListFlags,
}

#[derive(Args, Debug)]
pub struct ChildrenArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The parent task.
    pub task_id: uuid::Uuid,
    #[command(flatten)]
    pub list: ListFlags,
}

/// A page of a list: its tasks and the cursor of the next one.
trait Page {
    fn tasks(&mut self) -> &mut Vec<TaskStatus>;
    fn next_cursor(&mut self) -> &mut Option<String>;
}

impl Page for TaskPage {
    fn tasks(&mut self) -> &mut Vec<TaskStatus> {
        &mut self.tasks
    }
    fn next_cursor(&mut self) -> &mut Option<String> {
        &mut self.next_cursor
    }
}

impl Page for TaskChildren {
    fn tasks(&mut self) -> &mut Vec<TaskStatus> {
        &mut self.tasks
    }
    fn next_cursor(&mut self) -> &mut Option<String> {
        &mut self.next_cursor
    }
}

/// The first page; with `--all`, holding the tasks of every page and no cursor.
async fn pages<P, F, Fut>(flags: &ListFlags, fetch: F) -> anyhow::Result<P>
where
    P: Page,
    F: Fn(ListQuery) -> Fut,
    Fut: Future<Output = Result<P, a2a_mailbox_client::Error>>,
{
    let query = flags.query()?;
    let mut first = fetch(query.clone()).await?;
    while let (true, Some(cursor)) = (flags.all, first.next_cursor().take()) {
        let mut page = fetch(ListQuery {
            cursor: Some(cursor),
            ..query.clone()
        })
        .await?;
        first.tasks().append(page.tasks());
        *first.next_cursor() = page.next_cursor().take();
    }
    Ok(first)
}

fn lines(tasks: &[TaskStatus]) -> String {
    let mut out = String::new();
    for s in tasks {
        out.push_str(&format!(
            "{}  {:<14} {} -> {}  attempt {}  {}\n",
            s.task.id,
            s.state.as_str(),
            s.task.sender,
            s.task.recipient,
            s.attempt,
            s.task.intent_text.lines().next().unwrap_or_default()
        ));
    }
    out
}

pub async fn tasks(a: TasksArgs) -> anyhow::Result<String> {
    let client = a.client.client()?;
    let page = pages(&a.list, |q| {
        let client = client.clone();
        async move { client.list_tasks(&q).await }
    })
    .await?;
    if a.list.json {
        return pretty(&page);
    }
    let mut out = lines(&page.tasks);
    if let Some(c) = &page.next_cursor {
        out.push_str(&format!("more: --all, or the cursor {c}\n"));
    }
    Ok(out.trim_end().to_owned())
}

pub async fn children(a: ChildrenArgs) -> anyhow::Result<String> {
    let client = a.client.client()?;
    let page = pages(&a.list, |q| {
        let client = client.clone();
        async move { client.children(a.task_id, &q).await }
    })
    .await?;
    if a.list.json {
        return pretty(&page);
    }
    let c = &page.counts;
    let mut out = format!(
        "children of {}: queued {}, in_flight {}, result_pending {}, resolved {}, canceled {}\n",
        a.task_id, c.queued, c.in_flight, c.result_pending, c.resolved, c.canceled
    );
    out.push_str(&lines(&page.tasks));
    Ok(out.trim_end().to_owned())
}
