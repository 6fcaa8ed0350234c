//! MCP Tasks (revision 2025-11-25; docs/mcp.md#tasks): a `send_task` run as a task answers at
//! once with the task, and `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` read,
//! wait for, list and cancel it. An MCP task IS the mailbox task: its `taskId` is the native id,
//! so it outlives any session and reads the same through every instance.

use std::time::Duration;

use serde_json::{json, Value};
use uuid::Uuid;

use super::rpc::RpcError;
use super::tools::ToolCall;
use crate::domain::{Content, ResultStatus, TaskState, TaskStatus};
use crate::error::{ErrorCode, MailboxError};
use crate::http::time::format_ms;
use crate::mailbox::listing::{ListRequest, Role};

/// Where an MCP task's requested `ttl` is kept, in the native task's `metadata`.
pub const KEPT: &str = "urn:a2a-mailbox:v1:mcp";
/// How often a client should poll `tasks/get`, in milliseconds.
const POLL_INTERVAL_MS: u64 = 1000;
/// Tasks per `tasks/list` page.
const PAGE: i64 = 50;
/// The meta key that ties a result to its task.
pub const RELATED: &str = "io.modelcontextprotocol/related-task";

/// An MCP task's status, and its message, from the native state.
fn status(s: &TaskStatus) -> (&'static str, Option<String>) {
    let result = s.result.as_ref();
    match (s.state, result.map(|r| r.status)) {
        (TaskState::Queued | TaskState::InFlight, _) => ("working", None),
        (TaskState::Canceled, _) => (
            "cancelled",
            s.cancellation.as_ref().and_then(|c| c.reason.clone()),
        ),
        (_, Some(ResultStatus::Error)) => ("failed", result.and_then(|r| r.error_message.clone())),
        _ => ("completed", None),
    }
}

/// Whether an MCP status is terminal.
pub fn is_terminal(s: &TaskStatus) -> bool {
    s.state.is_settled()
}

impl ToolCall<'_> {
    /// How long a finished task stays readable: what the task asked for, at most (and by
    /// default) the result-cache window.
    fn ttl(&self, s: &TaskStatus) -> i64 {
        let window = self.state.mailbox.cfg.result_cache_window_ms;
        let asked = s
            .task
            .metadata
            .as_ref()
            .and_then(|m| m.get(KEPT)?.get("ttl")?.as_i64());
        asked.map_or(window, |t| t.clamp(0, window))
    }

    /// The MCP Task of a mailbox task (revision 2025-11-25).
    pub fn task(&self, s: &TaskStatus) -> Value {
        self.task_named(s, ["ttl", "pollInterval"])
    }

    /// The MCP Task of a mailbox task as the tasks extension of revision 2026-07-28 names its
    /// fields.
    pub fn task_2026(&self, s: &TaskStatus) -> Value {
        self.task_named(s, ["ttlMs", "pollIntervalMs"])
    }

    fn task_named(&self, s: &TaskStatus, [ttl, poll]: [&str; 2]) -> Value {
        let (status, message) = status(s);
        let mut task = json!({
            "taskId": s.task.id,
            "status": status,
            "createdAt": format_ms(s.created_at_ms),
            "lastUpdatedAt": format_ms(s.updated_at_ms),
            ttl: self.ttl(s),
            poll: POLL_INTERVAL_MS,
        });
        if let Some(m) = message {
            crate::http::json::set(&mut task, "statusMessage", json!(m));
        }
        task
    }

    /// The task `params.taskId` names, if the caller sees it: else -32602, as MCP prescribes
    /// for a task not found.
    pub async fn visible(&self, params: &Value) -> Result<TaskStatus, RpcError> {
        let raw = params.get("taskId").and_then(Value::as_str).unwrap_or("");
        let not_found = || RpcError::params(format!("task not found: {raw:?}"));
        let id = Uuid::parse_str(raw).map_err(|_| not_found())?;
        match self.state.mailbox.task_status(self.caller, id).await {
            Ok(s) => Ok(s),
            Err(e) if e.code == ErrorCode::NotFound => Err(not_found()),
            Err(e) => Err(e.into()),
        }
    }

    /// The task `params.taskId` names, as [`ToolCall::visible`], while its `ttl` (counted from its
    /// creation) has not passed: after, -32602.
    pub async fn readable(&self, params: &Value) -> Result<TaskStatus, RpcError> {
        let s = self.visible(params).await?;
        let ttl = self.ttl(&s);
        let created = i64::try_from(s.created_at_ms).unwrap_or(i64::MAX);
        if crate::clock::now_ms().saturating_sub(created) > ttl {
            return Err(RpcError::params(format!(
                "task {} is past its ttl of {ttl} ms, counted from its creation: it is no \
                 longer readable through MCP",
                s.task.id
            )));
        }
        Ok(s)
    }

    /// `tools/call` of `send_task` as a task: queues it and answers `{task}` at once.
    pub async fn send_as_task(&self, args: &Value, task: &Value) -> Result<Value, RpcError> {
        Ok(match self.queue(args, task.get("ttl")).await? {
            Ok(s) => json!({"task": self.task(&s)}),
            // A refusal is the tool's refusal, as without a task.
            Err(e) => super::tools::call_result(Err(e)),
        })
    }

    /// Queues `send_task`'s task, keeping the `ttl` asked for: the task as it is now, or the
    /// tool's refusal.
    pub async fn queue(
        &self,
        args: &Value,
        ttl: Option<&Value>,
    ) -> Result<Result<TaskStatus, MailboxError>, RpcError> {
        let window = self.state.mailbox.cfg.result_cache_window_ms;
        let ttl = ttl
            .and_then(Value::as_i64)
            .map_or(window, |t| t.clamp(0, window));
        let id = match self
            .send_with(args, Some((KEPT, json!({"ttl": ttl}))))
            .await
        {
            Ok((_, id)) => id,
            Err(e) => return Ok(Err(e)),
        };
        Ok(Ok(self.state.mailbox.task_status(self.caller, id).await?))
    }

    /// `tasks/get`.
    pub async fn get(&self, params: &Value) -> Result<Value, RpcError> {
        Ok(self.task(&self.readable(params).await?))
    }

    /// `tasks/list`: the caller's sent tasks, newest first, a page at a time.
    pub async fn list(&self, params: &Value) -> Result<Value, RpcError> {
        let cursor = params
            .get("cursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty());
        let req = ListRequest {
            role: Role::Sender,
            cursor: cursor.map(str::to_owned),
            limit: PAGE,
            ..ListRequest::default()
        };
        let page = self
            .state
            .mailbox
            .list_tasks(self.caller, &req)
            .await
            .map_err(|e| match e.code {
                ErrorCode::InvalidRequest => RpcError::params(e.message),
                _ => e.into(),
            })?;
        let tasks: Vec<Value> = page.tasks.iter().map(|s| self.task(s)).collect();
        let mut out = json!({"tasks": tasks});
        if let Some(next) = page.next_cursor {
            crate::http::json::set(&mut out, "nextCursor", json!(next));
        }
        Ok(out)
    }

    /// `tasks/cancel`: the native cancel; an answered task is -32602.
    pub async fn cancel(&self, params: &Value) -> Result<Value, RpcError> {
        let s = self.visible(params).await?;
        let by = crate::mailbox::Author::from(self.caller);
        match self.state.mailbox.cancel(by, s.task.id, None).await {
            Ok(_) => {}
            Err(e) if e.code == ErrorCode::NotCancelable => {
                return Err(RpcError::params(format!(
                    "task {} is already {}: it cannot be cancelled",
                    s.task.id,
                    status(&s).0
                )))
            }
            Err(e) => return Err(e.into()),
        }
        let s = self
            .state
            .mailbox
            .task_status(self.caller, s.task.id)
            .await?;
        Ok(self.task(&s))
    }

    /// The task once terminal, or as it is after `wait`.
    pub async fn settled(&self, s: TaskStatus, wait: Duration) -> Result<TaskStatus, RpcError> {
        if is_terminal(&s) {
            return Ok(s);
        }
        Ok(self
            .state
            .mailbox
            .await_settled(self.caller, s.task.id, wait)
            .await?)
    }

    /// `tasks/result` of a terminal task: the `CallToolResult` its answer makes, delivered to
    /// the caller if it sent the task (as a drain would).
    pub async fn result(&self, s: TaskStatus) -> Result<Value, RpcError> {
        let mut tasks = vec![s];
        self.state.mailbox.deliver(self.caller, &mut tasks).await?;
        let missing = || MailboxError::internal("a delivered task went missing");
        Ok(call_tool_result(&tasks.pop().ok_or_else(missing)?))
    }
}

/// What a terminal task's answer makes as a `CallToolResult`.
pub fn call_tool_result(s: &TaskStatus) -> Value {
    let related = json!({RELATED: {"taskId": s.task.id}});
    let Some(r) = &s.result else {
        let (status, reason) = status(s);
        let text = match reason {
            Some(why) => format!("the task was {status}: {why}"),
            None => format!("the task was {status}"),
        };
        return json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"status": "canceled", "content": []},
            "isError": true,
            "_meta": related,
        });
    };
    let mut blocks: Vec<Value> = r
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => json!({"type": "text", "text": text}),
            Content::Json { value } => json!({"type": "text", "text": value.to_string()}),
        })
        .collect();
    if let Some(m) = &r.error_message {
        blocks.push(json!({"type": "text", "text": m}));
    }
    let mut structured = json!({"status": r.status, "content": r.content});
    if let Some(m) = &r.error_message {
        crate::http::json::set(&mut structured, "error_message", json!(m));
    }
    json!({
        "content": blocks,
        "structuredContent": structured,
        "isError": r.status == ResultStatus::Error,
        "_meta": related,
    })
}

/// The error of a `tasks/result` whose task is still working when its wait ends.
pub fn still_working(s: &TaskStatus, waited: Duration) -> RpcError {
    RpcError::new(
        -32000,
        format!(
            "task {} is still working after {} s: ask tasks/result again",
            s.task.id,
            waited.as_secs()
        ),
    )
}
