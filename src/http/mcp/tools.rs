//! The MCP tools (docs/mcp.md#tools): each is a native operation with the same gates and audit
//! rows, whose answer's body is the tool's `structuredContent`. A refusal is a tool result with
//! `isError: true` carrying the native error body.

use a2a_mailbox_types::Trace;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::rpc::RpcError;
use super::schemas::{self, TOOLS};
use crate::auth::Caller;
use crate::domain::answers::{LeaseExtended, LeaseExtendedKind, TaskStatusBody, TaskStatusKind};
use crate::domain::{free_form, AgentId, CancelRequest, HeartbeatRequest, PostResult};
use crate::error::MailboxError;
use crate::http::error::error_body;
use crate::http::params::{typed, wait, ListQuery, TakeQuery};
use crate::http::state::AppState;
use crate::http::write::read_input;
use crate::mailbox::Author;

/// Who calls a tool, on which service.
pub struct ToolCall<'a> {
    pub state: &'a AppState,
    pub caller: &'a Caller,
}

/// The `tools/list` answer; with `task_support`, each tool says whether it runs as a task.
pub fn list(task_support: bool) -> Value {
    let tools: Vec<Value> = TOOLS
        .iter()
        .filter_map(|name| {
            let (input, output, description) = schemas::tool(name)?;
            let mut tool = json!({"name": name, "description": description,
                "inputSchema": input, "outputSchema": output});
            if task_support {
                let support = if *name == "send_task" {
                    "optional"
                } else {
                    "forbidden"
                };
                crate::http::json::set(&mut tool, "execution", json!({"taskSupport": support}));
            }
            Some(tool)
        })
        .collect();
    json!({"tools": tools})
}

/// Whether `name` is a tool.
pub fn exists(name: &str) -> bool {
    TOOLS.contains(&name)
}

/// A tool's outcome as MCP's `CallToolResult`: the body as structured content and as text.
pub fn call_result(outcome: Result<Value, MailboxError>) -> Value {
    let (body, is_error) = match outcome {
        Ok(body) => (body, false),
        Err(e) => (json!(error_body(&e)), true),
    };
    json!({
        "content": [{"type": "text", "text": body.to_string()}],
        "structuredContent": body,
        "isError": is_error,
    })
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, MailboxError> {
    serde_json::to_value(v).map_err(MailboxError::internal)
}

#[derive(Deserialize)]
struct Next {
    recipient: Option<String>,
    wait_ms: Option<u64>,
    max: Option<i64>,
}

#[derive(Deserialize)]
struct WaitArg {
    wait_ms: Option<u64>,
}

#[derive(Deserialize)]
struct TaskId {
    task_id: Uuid,
}

impl ToolCall<'_> {
    /// A `tools/call`'s `arguments` (`{}` when absent), whose free-form values (a task's or a
    /// result's content values, a task's metadata) nest within the limit, else -32602. A tool
    /// whose arguments are a task or a result takes the trace context of `params._meta`
    /// (`traceparent`, `tracestate`) when its arguments carry none (docs/mcp.md#trace-context).
    pub fn arguments(&self, params: &Value) -> Result<Value, RpcError> {
        let mut args = params.get("arguments").cloned().unwrap_or(json!({}));
        let limit = self.state.mailbox.cfg.max_json_depth;
        free_form::body_within(&args, limit).map_err(|e| RpcError::params(e.message))?;
        let name = params.get("name").and_then(Value::as_str);
        if matches!(name, Some("send_task" | "post_result")) {
            let trace = params.get("_meta").and_then(Trace::in_object);
            crate::http::trace::carry(&mut args, trace.as_ref());
        }
        Ok(args)
    }

    /// Runs tool `name` (one of [`TOOLS`]) with `args`: the native answer's body.
    pub async fn run(&self, name: &str, args: &Value) -> Result<Value, MailboxError> {
        let (mailbox, caller) = (&self.state.mailbox, self.caller);
        match name {
            "send_task" => self.send(args).await.map(|(body, _)| body),
            "next_task" => {
                let q: Next = typed("arguments", args)?;
                let recipient = match &q.recipient {
                    Some(r) => AgentId::parse(r).map_err(MailboxError::invalid)?,
                    None => caller.sub.clone(),
                };
                let wait = wait(q.wait_ms)?;
                let take = TakeQuery {
                    max: q.max,
                    attempt_id: None,
                };
                let Some(max) = take.max()? else {
                    let leased = mailbox
                        .lease_next(caller, recipient.as_str(), wait, None)
                        .await?;
                    return to_value(&leased);
                };
                to_value(
                    &mailbox
                        .lease_batch(caller, recipient.as_str(), max, wait, None)
                        .await?,
                )
            }
            "post_result" => {
                let result: PostResult = read_input(args)?;
                if result.lease_id.is_none() {
                    return Err(MailboxError::invalid(
                        "invalid result: lease_id is required (the lease next_task gave you)",
                    ));
                }
                let done = mailbox.post_result(Author::from(caller), &result).await?;
                to_value(&done.value)
            }
            "next_result" => {
                let q: WaitArg = typed("arguments", args)?;
                to_value(&mailbox.drain_result(caller, wait(q.wait_ms)?, None).await?)
            }
            "get_task" => {
                let q: TaskId = typed("arguments", args)?;
                let status = mailbox.task_status(caller, q.task_id).await?;
                let kind = TaskStatusKind::Tag;
                to_value(&TaskStatusBody { kind, status })
            }
            "list_tasks" => {
                let q: ListQuery = typed("arguments", args)?;
                to_value(&mailbox.list_tasks(caller, &q.request()?).await?)
            }
            "cancel_task" => {
                let q: TaskId = typed("arguments", args)?;
                let cancel: CancelRequest = read_input(&without(args, "task_id"))?;
                let done = mailbox
                    .cancel(Author::from(caller), q.task_id, cancel.reason)
                    .await?;
                to_value(&done.value)
            }
            "heartbeat" => {
                let q: TaskId = typed("arguments", args)?;
                let hb: HeartbeatRequest = read_input(&without(args, "task_id"))?;
                let done = mailbox
                    .heartbeat(Author::from(caller), q.task_id, hb.lease_id)
                    .await?;
                let (kind, lease) = (LeaseExtendedKind::Tag, done.value.clone());
                to_value(&LeaseExtended { kind, lease })
            }
            other => Err(MailboxError::invalid(format!("no tool {other:?}"))),
        }
    }

    /// `send_task`: the native send of `args` with the caller as the sender and, unless the
    /// arguments name one, a new task id. The answer's body, and the task id.
    pub async fn send(&self, args: &Value) -> Result<(Value, Uuid), MailboxError> {
        self.send_with(args, None).await
    }

    /// [`ToolCall::send`], with `metadata` kept in the native task's `metadata` (MCP's own).
    pub async fn send_with(
        &self,
        args: &Value,
        metadata: Option<(&str, Value)>,
    ) -> Result<(Value, Uuid), MailboxError> {
        let mut task: Map<String, Value> = typed("arguments", args)?;
        task.entry("sender")
            .or_insert_with(|| json!(self.caller.sub));
        let id = task
            .entry("id")
            .or_insert_with(|| json!(Uuid::new_v4()))
            .clone();
        if let Some((key, value)) = metadata {
            let kept = task.entry("metadata").or_insert_with(|| json!({}));
            if let Some(m) = kept.as_object_mut() {
                m.insert(key.to_owned(), value);
            }
        }
        let task = Value::Object(task);
        let done = self
            .state
            .mailbox
            .send(Author::from(self.caller), &task)
            .await?;
        let id = serde_json::from_value(id)
            .map_err(|e| MailboxError::invalid(format!("invalid task: id: {e}")))?;
        Ok((to_value(&done.value)?, id))
    }
}

/// `args` without `key` (the task id of a cancel or heartbeat, which the native route takes
/// from its path).
fn without(args: &Value, key: &str) -> Value {
    let mut rest = args.as_object().cloned().unwrap_or_default();
    rest.remove(key);
    Value::Object(rest)
}
