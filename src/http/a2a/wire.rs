//! A2A 1.0 on the wire (ProtoJSON: camelCase, enums by name, empty optionals left out) and its
//! translation to and from the mailbox's tasks: the message a SendMessage carries, the Task a
//! caller reads, and the one table of states.

use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::errors::{A2aError, Kind};
use crate::domain::free_form;
use crate::domain::{Content, ResultStatus, TaskState, TaskStatus};
use crate::http::time::format_ms;
use crate::mailbox::send::Kept;

/// The facade's namespace in A2A metadata (`message.metadata[EXT].idempotencyKey`, the Task's
/// `metadata[EXT]`).
pub const EXT: &str = "urn:a2a-mailbox:v1";
/// The key of the native task's `metadata` under which the A2A message it came from is kept.
pub const KEPT: &str = crate::domain::free_form::A2A_METADATA_KEY;
/// The agent card's one skill; also the intent of a message without text.
pub const SKILL_NAME: &str = "Mailbox task";

/// The namespace of a generated context id, a UUIDv5 of the task id. (Task ids are UUIDv5s
/// under the database's secret namespace: see [`task_id`].)
const CONTEXT_NS: Uuid = Uuid::from_u128(0x0c7e_5b1a_2f4d_4e6b_8a9c_3d5e_7f1a_2b4c);

/// A2A's name of a task's state (docs/contract.md#a2a). Every other mapping of states is derived from this one.
pub fn a2a_state(state: TaskState, result: Option<ResultStatus>) -> &'static str {
    match (state, result) {
        (TaskState::Queued, _) => "TASK_STATE_SUBMITTED",
        (TaskState::InFlight, _) => "TASK_STATE_WORKING",
        (TaskState::Canceled, _) => "TASK_STATE_CANCELED",
        (_, Some(ResultStatus::Error)) => "TASK_STATE_FAILED",
        (TaskState::ResultPending | TaskState::Resolved, _) => "TASK_STATE_COMPLETED",
    }
}

/// Every A2A state name a request may give, in the order of their proto numbers, including
/// those no mailbox task is ever in.
pub const A2A_STATES: [&str; 9] = [
    "TASK_STATE_UNSPECIFIED",
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
];

/// The native states, and result statuses, of one A2A state.
pub type NativeStates = (Vec<TaskState>, Vec<ResultStatus>);

/// The native filter of an A2A state: the states and result statuses that [`a2a_state`] maps
/// to it (both empty for UNSPECIFIED: every task), or `None` when no task can be in it.
pub fn state_filter(name: &str) -> Result<Option<NativeStates>, A2aError> {
    if !A2A_STATES.contains(&name) {
        return Err(A2aError::params(format!(
            "unknown status {name:?}: use one of {}",
            A2A_STATES.join(", ")
        )));
    }
    if name == A2A_STATES[0] {
        return Ok(Some((Vec::new(), Vec::new())));
    }
    let (mut states, mut results) = (Vec::new(), Vec::new());
    let outcomes = [
        None,
        Some(ResultStatus::Ok),
        Some(ResultStatus::Error),
        Some(ResultStatus::Partial),
    ];
    for state in TaskState::ALL {
        for result in outcomes {
            if a2a_state(state, result) != name {
                continue;
            }
            if !states.contains(&state) {
                states.push(state);
            }
            if let Some(r) = result.filter(|r| !results.contains(r)) {
                results.push(r);
            }
        }
    }
    if states.is_empty() {
        return Ok(None);
    }
    // A state without a result (queued, in flight, canceled) needs no condition on results.
    if states
        .iter()
        .any(|s| !matches!(s, TaskState::ResultPending | TaskState::Resolved))
    {
        results.clear();
    }
    Ok(Some((states, results)))
}

/// A SendMessage's message, checked: what the native task is built from.
pub struct Incoming {
    pub message: Map<String, Value>,
    pub content: Vec<Content>,
    pub context_id: Option<String>,
}

impl Incoming {
    /// The message `v`, checked; its free-form values (`data` parts, `metadata`) nest at most
    /// `max_depth` deep.
    pub fn parse(v: &Value, max_depth: usize) -> Result<Incoming, A2aError> {
        let message = v
            .as_object()
            .ok_or_else(|| A2aError::params("params.message must be a Message object"))?;
        let role_ok = matches!(message.get("role"), Some(r) if r == "ROLE_USER" || r == 1);
        if !role_ok {
            return Err(A2aError::params("message.role must be ROLE_USER"));
        }
        match message.get("messageId").and_then(Value::as_str) {
            Some(id) if !id.trim().is_empty() => {}
            _ => return Err(A2aError::params("message.messageId is required")),
        }
        if message.get("taskId").is_some_and(|t| t != "") {
            return Err(A2aError::new(
                Kind::UnsupportedOperation,
                "follow-up messages (message.taskId) are not supported: send a new message",
            ));
        }
        let context_id = match message.get("contextId") {
            None => None,
            Some(Value::String(c)) if !c.is_empty() => Some(c.clone()),
            Some(Value::String(_)) => None,
            Some(_) => return Err(A2aError::params("message.contextId must be a string")),
        };
        if let Some(metadata) = message.get("metadata") {
            if !metadata.is_object() {
                return Err(A2aError::params("message.metadata must be an object"));
            }
            within("message.metadata", metadata, max_depth)?;
        }
        let parts = match message.get("parts").and_then(Value::as_array) {
            Some(parts) if !parts.is_empty() => parts,
            _ => return Err(A2aError::params("message.parts needs at least one part")),
        };
        let content = parts
            .iter()
            .enumerate()
            .map(|(i, p)| part_content(i, p, max_depth))
            .collect::<Result<_, _>>()?;
        Ok(Incoming {
            message: message.clone(),
            content,
            context_id,
        })
    }

    /// The A2A key of docs/contract.md#a2a: the `Idempotency-Key` header, else the message's metadata key, else
    /// its `messageId`.
    pub fn key(&self, header: Option<&str>) -> Result<String, A2aError> {
        let from_metadata = self
            .message
            .get("metadata")
            .and_then(|m| m.get(EXT))
            .and_then(|m| m.get("idempotencyKey"));
        let key = match (header, from_metadata) {
            (Some(h), _) => h.to_owned(),
            (None, Some(Value::String(k))) => k.clone(),
            (None, Some(_)) => {
                return Err(A2aError::params(format!(
                    "message.metadata[\"{EXT}\"].idempotencyKey must be a string"
                )))
            }
            (None, None) => self
                .message
                .get("messageId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        };
        if key.trim().is_empty() {
            return Err(A2aError::params("the idempotency key must not be blank"));
        }
        Ok(key)
    }

    /// What makes two messages "the same" for a replay: the parts, the `contextId` as sent and
    /// the metadata without the key; never the `messageId`.
    pub fn sameness(message: &Map<String, Value>) -> Value {
        let mut metadata = message.get("metadata").cloned().unwrap_or(Value::Null);
        if let Some(ours) = metadata.get_mut(EXT).and_then(Value::as_object_mut) {
            ours.remove("idempotencyKey");
            if ours.is_empty() {
                metadata.as_object_mut().map(|m| m.remove(EXT));
            }
        }
        if metadata.as_object().is_some_and(Map::is_empty) {
            metadata = Value::Null;
        }
        json!([message.get("parts"), message.get("contextId"), metadata])
    }

    /// The native task this message queues for `recipient`; the message itself is kept in its
    /// `metadata` ([`Incoming::kept`]).
    pub fn native_task(&self, id: Uuid, sender: &str, recipient: &str) -> Value {
        let intent = self.content.iter().find_map(|c| match c {
            Content::Text { text } => Some(text.as_str()),
            Content::Json { .. } => None,
        });
        let context = self.context_id.clone().unwrap_or_else(|| context_of(id));
        json!({
            "id": id,
            "sender": sender,
            "recipient": recipient,
            "intent_text": intent.unwrap_or(SKILL_NAME),
            "content": self.content,
            "context_id": context,
        })
    }

    /// What the native task keeps under [`KEPT`]: the message as sent.
    pub fn kept(&self) -> Kept {
        (KEPT, json!({"message": self.message}))
    }
}

/// The native task id of a SendMessage: a UUIDv5 of (sender, recipient, key) under `ns`, the
/// database's secret namespace, so no client can compute the id another caller's message will
/// get (and pre-create a task under it).
pub fn task_id(ns: &Uuid, sender: &str, recipient: &str, key: &str) -> Uuid {
    Uuid::new_v5(ns, json!([sender, recipient, key]).to_string().as_bytes())
}

/// The context id given to a task whose message named none.
fn context_of(task: Uuid) -> String {
    Uuid::new_v5(&CONTEXT_NS, task.as_bytes()).to_string()
}

fn part_content(i: usize, part: &Value, max_depth: usize) -> Result<Content, A2aError> {
    let bad = |what: &str| A2aError::params(format!("message.parts[{i}]: {what}"));
    let part = part.as_object().ok_or_else(|| bad("a part is an object"))?;
    if let Some(text) = part.get("text") {
        let text = text.as_str().ok_or_else(|| bad("text must be a string"))?;
        return Ok(Content::Text {
            text: text.to_owned(),
        });
    }
    if let Some(data) = part.get("data") {
        within(&format!("message.parts[{i}].data"), data, max_depth)?;
        return Ok(Content::Json {
            value: data.clone(),
        });
    }
    Err(bad(
        "only text and data parts are supported (no raw or url parts)",
    ))
}

/// A free-form value of the message within the nesting limit, else -32602 / 400.
fn within(field: &str, v: &Value, max_depth: usize) -> Result<(), A2aError> {
    free_form::within(field, v, max_depth).map_err(|e| A2aError::params(e.message))
}

fn parts_of(content: &[Content]) -> Vec<Value> {
    content
        .iter()
        .map(|c| match c {
            Content::Text { text } => json!({"text": text}),
            Content::Json { value } => json!({"data": value}),
        })
        .collect()
}

/// How much of a Task a read shows.
#[derive(Clone, Copy, Debug)]
pub struct View {
    /// At most this many messages of history (`None`: all).
    pub history_length: Option<usize>,
    pub artifacts: bool,
}

/// A task's context id: the one it was sent with, else the one derived from its id.
fn context(s: &TaskStatus) -> String {
    s.task
        .context_id
        .clone()
        .unwrap_or_else(|| context_of(s.task.id))
}

/// A task's A2A state name.
pub fn state_of(s: &TaskStatus) -> &'static str {
    a2a_state(s.state, s.result.as_ref().map(|r| r.status))
}

/// A task's A2A `TaskStatus`: its state, when it last changed, and the error text of a failed
/// task or the reason of a canceled one.
pub fn status(s: &TaskStatus) -> Value {
    let id = s.task.id;
    let agent_says = |text: String| {
        json!({"messageId": format!("{id}-status"), "role": "ROLE_AGENT",
            "parts": [{"text": text}], "contextId": context(s), "taskId": id})
    };
    let mut status = json!({"state": state_of(s), "timestamp": format_ms(s.updated_at_ms)});
    if let Some(r) = s
        .result
        .as_ref()
        .filter(|r| r.status == ResultStatus::Error)
    {
        let text = r
            .error_message
            .clone()
            .unwrap_or_else(|| "the task failed".into());
        crate::http::json::set(&mut status, "message", agent_says(text));
    }
    if let Some(reason) = s.cancellation.as_ref().and_then(|c| c.reason.clone()) {
        crate::http::json::set(&mut status, "message", agent_says(reason));
    }
    status
}

/// The artifact of an answered task that did not fail: the result's content.
pub fn artifact(s: &TaskStatus) -> Option<Value> {
    let id = s.task.id;
    let r = s
        .result
        .as_ref()
        .filter(|r| r.status != ResultStatus::Error)?;
    let mut artifact = json!({"artifactId": format!("{id}-result"), "name": "result",
        "parts": parts_of(&r.content)});
    if r.status == ResultStatus::Partial {
        crate::http::json::set(&mut artifact, "metadata", json!({EXT: {"partial": true}}));
    }
    Some(artifact)
}

/// A stream's `statusUpdate` event: the task's status now.
pub fn status_update(s: &TaskStatus) -> Value {
    json!({"statusUpdate": {"taskId": s.task.id, "contextId": context(s), "status": status(s)}})
}

/// A stream's `artifactUpdate` event: the result of a completed task, whole.
pub fn artifact_update(s: &TaskStatus) -> Option<Value> {
    let artifact = artifact(s)?;
    Some(
        json!({"artifactUpdate": {"taskId": s.task.id, "contextId": context(s),
        "artifact": artifact, "lastChunk": true}}),
    )
}

/// The A2A message a task was sent as, when the facade kept one: whatever else is found under
/// [`KEPT`] (a row of another writer) is treated as absent.
pub fn kept_message(s: &TaskStatus) -> Option<&Map<String, Value>> {
    s.task
        .metadata
        .as_ref()?
        .get(KEPT)?
        .get("message")?
        .as_object()
}

/// A mailbox task as an A2A Task.
pub fn task(s: &TaskStatus, view: View) -> Value {
    let id = s.task.id;
    let context = context(s);
    let mut task = json!({"id": id, "contextId": context, "status": status(s)});
    if let Some(artifact) = artifact(s).filter(|_| view.artifacts) {
        crate::http::json::set(&mut task, "artifacts", json!([artifact]));
    }
    if view.history_length != Some(0) {
        let mut message = kept_message(s).cloned().unwrap_or_else(|| {
            let parts = parts_of(&s.task.content);
            let m = json!({"messageId": id, "role": "ROLE_USER", "parts": parts});
            m.as_object().cloned().unwrap_or_default()
        });
        message.insert("contextId".into(), json!(context));
        message.insert("taskId".into(), json!(id));
        crate::http::json::set(&mut task, "history", json!([message]));
    }
    crate::http::json::set(
        &mut task,
        "metadata",
        json!({EXT: {
            "state": s.state, "attempt": s.attempt,
            "sender": s.task.sender, "recipient": s.task.recipient,
        }}),
    );
    task
}
