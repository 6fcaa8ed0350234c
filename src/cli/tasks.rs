//! `tasks` and `children`: the task list (§13) with its filters, one page or every page.

use anyhow::Context;
use clap::Args;
use serde_json::{json, Value};

use super::{pretty, Api, ClientArgs};
use crate::domain::TaskStatus;

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

impl ListFlags {
    fn query(&self) -> Vec<(&'static str, String)> {
        let mut q = vec![("limit", self.limit.to_string())];
        let named = [
            ("state", &self.state),
            ("role", &self.role),
            ("sender", &self.sender),
            ("recipient", &self.recipient),
            ("context_id", &self.context_id),
            ("task_kind", &self.task_kind),
        ];
        q.extend(
            named
                .into_iter()
                .filter_map(|(k, v)| v.clone().map(|v| (k, v))),
        );
        if let Some(p) = self.parent {
            q.push(("parent", p.to_string()));
        }
        q
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

/// Every page of `path` (or the first), and the first page's answer.
async fn pages(api: &Api, path: &str, flags: &ListFlags) -> anyhow::Result<(Value, Vec<Value>)> {
    let query = flags.query();
    let first = api.get(path, &query).await?;
    let mut tasks = first["tasks"].as_array().cloned().unwrap_or_default();
    let mut next = first["next_cursor"].as_str().map(str::to_owned);
    while let (true, Some(cursor)) = (flags.all, next.take()) {
        let mut q = query.clone();
        q.push(("cursor", cursor));
        let page = api.get(path, &q).await?;
        tasks.extend(page["tasks"].as_array().cloned().unwrap_or_default());
        next = page["next_cursor"].as_str().map(str::to_owned);
    }
    Ok((first, tasks))
}

fn lines(tasks: &[Value]) -> anyhow::Result<String> {
    let mut out = String::new();
    for t in tasks {
        let s: TaskStatus =
            serde_json::from_value(t.clone()).context("the server sent an unexpected task")?;
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
    Ok(out)
}

pub async fn tasks(a: TasksArgs) -> anyhow::Result<String> {
    let api = Api::new(&a.client)?;
    let (first, tasks) = pages(&api, "/a2a/tasks", &a.list).await?;
    if a.list.json {
        let next = if a.list.all {
            Value::Null
        } else {
            first["next_cursor"].clone()
        };
        return pretty(&json!({"kind": "a2a_task_page", "tasks": tasks, "next_cursor": next}));
    }
    let mut out = lines(&tasks)?;
    if let (false, Some(c)) = (a.list.all, first["next_cursor"].as_str()) {
        out.push_str(&format!("more: --all, or the cursor {c}\n"));
    }
    Ok(out.trim_end().to_owned())
}

pub async fn children(a: ChildrenArgs) -> anyhow::Result<String> {
    let api = Api::new(&a.client)?;
    let path = format!("/a2a/tasks/{}/children", a.task_id);
    let (first, tasks) = pages(&api, &path, &a.list).await?;
    let c = &first["counts"];
    if a.list.json {
        let next = if a.list.all {
            Value::Null
        } else {
            first["next_cursor"].clone()
        };
        return pretty(
            &json!({"kind": "a2a_task_children", "parent": first["parent"],
            "counts": c, "tasks": tasks, "next_cursor": next}),
        );
    }
    let mut out = format!(
        "children of {}: queued {}, in_flight {}, result_pending {}, resolved {}, canceled {}\n",
        a.task_id, c["queued"], c["in_flight"], c["result_pending"], c["resolved"], c["canceled"]
    );
    out.push_str(&lines(&tasks)?);
    Ok(out.trim_end().to_owned())
}
