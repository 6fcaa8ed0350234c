//! The JSON Schemas of the MCP tools' inputs and outputs: the native routes' bodies and answers
//! (docs/contract.md#endpoints), written for an MCP client to show and check.

use serde_json::{json, Value};

const AGENT: &str = r"^[A-Za-z0-9_.-]+(@[A-Za-z0-9_.-]+)?$";

fn uuid(description: &str) -> Value {
    json!({"type": "string", "format": "uuid", "description": description})
}

fn agent(description: &str) -> Value {
    json!({"type": "string", "pattern": AGENT, "maxLength": 128, "description": description})
}

fn content() -> Value {
    json!({"type": "array",
        "description": "Content blocks: {\"type\": \"text\", \"text\": …} or \
            {\"type\": \"json\", \"value\": …}.",
        "items": {"type": "object", "properties": {"type": {"enum": ["text", "json"]}},
            "required": ["type"]}})
}

fn wait_ms(what: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": 30000,
        "description": format!("How long to wait for {what}, in milliseconds (0: answer at once).")})
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// An answer of kind `kind` with `required` fields (more may come).
fn answer(kind: &str, required: &[&str]) -> Value {
    let mut all = vec!["kind"];
    all.extend_from_slice(required);
    json!({"type": "object", "properties": {"kind": {"const": kind}}, "required": all})
}

/// Every tool's input schema, output schema and description, by name.
pub fn tool(name: &str) -> Option<(Value, Value, &'static str)> {
    Some(match name {
        "send_task" => (
            object(
                json!({
                    "recipient": agent("The agent that will work on the task."),
                    "intent_text": {"type": "string", "description": "What the recipient is asked to do, in words."},
                    "task_kind": {"type": "string",
                        "description": "A kind the recipient dispatches on, e.g. \"refund\"."},
                    "content": content(),
                    "parent": uuid("The task this one is a part of."),
                    "context_id": {"type": "string", "description": "The conversation the task belongs to."},
                    "deadline_ms": {"type": "integer", "minimum": 0,
                        "description": "After this instant (epoch ms) a queued task is answered \
                            with an error instead of leased."},
                    "idempotency": {"type": "object",
                        "description": "{\"duplicate_safety\": \"idempotent\" | \"unsafe\", \
                            \"key\"?: string}: whether running it twice is harmless."},
                    "id": uuid("The task id: give the same one when you retry, and the retry \
                        lands on the same task. Default: a new id."),
                }),
                &["recipient", "intent_text"],
            ),
            answer("a2a_task_queued", &["task_id"]),
            "Send a task to another agent's mailbox. Run it as a task (MCP Tasks) to wait for the \
             answer with tasks/result.",
        ),
        "next_task" => (
            object(
                json!({"recipient": agent("Whose queue to lease from (default: yours)."),
                    "wait_ms": wait_ms("a task"),
                    "max": {"type": "integer", "minimum": 1, "maximum": 100,
                        "description": "Lease up to this many at once (answered as a batch: \
                            kind a2a_task_batch, leases [{task, lease}], oldest first)."}}),
                &[],
            ),
            json!({"type": "object",
                "properties": {"kind": {"enum": ["a2a_task_opt", "a2a_task_batch"]}},
                "required": ["kind"]}),
            "Lease the oldest task waiting for you: the task and a lease (lease_id, attempt), or \
             nulls when none came; with max, up to max tasks, each with its own lease.",
        ),
        "post_result" => (
            object(
                json!({"task_id": uuid("The task answered."),
                    "lease_id": uuid("The lease next_task gave you."),
                    "status": {"enum": ["ok", "error", "partial"]},
                    "content": content(),
                    "error_message": {"type": "string", "description": "Why it failed (status error)."}}),
                &["task_id", "lease_id", "status"],
            ),
            answer("a2a_result_posted", &["task_id"]),
            "Answer a task you leased.",
        ),
        "next_result" => (
            object(json!({"wait_ms": wait_ms("a result")}), &[]),
            answer("a2a_result_opt", &["result"]),
            "Take the oldest answer to a task you sent (it is then delivered), or null when none came.",
        ),
        "get_task" => (
            object(json!({"task_id": uuid("The task.")}), &["task_id"]),
            answer("a2a_task_status", &["task", "state", "attempt"]),
            "Read a task you sent or received: its state, lease and result.",
        ),
        "list_tasks" => (
            object(
                json!({
                    "state": {"type": "string",
                        "description": "Comma-separated states: queued, in_flight, \
                            result_pending, resolved, canceled."},
                    "role": {"enum": ["sender", "recipient", "any"]},
                    "sender": agent("Tasks sent by this agent."),
                    "recipient": agent("Tasks addressed to this agent."),
                    "parent": uuid("Children of this task."),
                    "context_id": {"type": "string"},
                    "task_kind": {"type": "string"},
                    "created_after_ms": {"type": "integer", "minimum": 0},
                    "created_before_ms": {"type": "integer", "minimum": 0},
                    "cursor": {"type": "string", "description": "next_cursor of the previous page."},
                    "limit": {"type": "integer", "description": "Tasks per page (1 to 1000, default 10)."},
                }),
                &[],
            ),
            answer("a2a_task_page", &["tasks", "next_cursor"]),
            "List the tasks you can see, newest first, a page at a time.",
        ),
        "cancel_task" => (
            object(
                json!({"task_id": uuid("The task."),
                    "reason": {"type": "string", "maxLength": 1024}}),
                &["task_id"],
            ),
            answer("a2a_task_canceled", &["task_id"]),
            "Take back a task you sent that is not answered yet.",
        ),
        "heartbeat" => (
            object(
                json!({"task_id": uuid("The task."), "lease_id": uuid("Your lease.")}),
                &["task_id", "lease_id"],
            ),
            answer("a2a_lease_extended", &["lease"]),
            "Tell the mailbox you are still working on a task you leased.",
        ),
        _ => return None,
    })
}

/// The tools, in the order `tools/list` shows them.
pub const TOOLS: [&str; 8] = [
    "send_task",
    "next_task",
    "post_result",
    "next_result",
    "get_task",
    "list_tasks",
    "cancel_task",
    "heartbeat",
];
