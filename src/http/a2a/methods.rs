//! The four A2A methods over the mailbox's own operations, whichever binding carried them:
//! SendMessage is a native send, GetTask a native read, CancelTask a native cancel, ListTasks a
//! native list. Params arrive as one JSON object (the JSON-RPC `params`, or the HTTP+JSON body
//! and query merged) and answers leave as ProtoJSON.

use serde_json::{json, Map, Value};
use uuid::Uuid;

use super::errors::{A2aError, Fault, Kind};
use super::wire::{self, Incoming, View};
use crate::auth::Caller;
use crate::domain::{AgentId, TaskStatus};
use crate::error::ErrorCode;
use crate::http::state::AppState;
use crate::http::time::parse_ms;
use crate::mailbox::follow::Follow;
use crate::mailbox::listing::{ListRequest, Role};
use crate::mailbox::Author;

/// One call: who makes it, to which recipient's agent, and the `Idempotency-Key` header.
pub struct Call<'a> {
    pub state: &'a AppState,
    pub caller: &'a Caller,
    pub recipient: &'a AgentId,
    pub key_header: Option<&'a str>,
    /// The trace context of the request's headers (docs/contract.md#trace-context).
    pub trace: Option<&'a a2a_mailbox_types::Trace>,
}

/// What a method of the facade answers: its JSON result, or the A2A error.
type MethodResult = Result<Value, Fault>;

/// A message checked and ready to queue: its task id and key, and how the answer is wanted.
struct Prepared {
    id: Uuid,
    key: String,
    incoming: Incoming,
    immediately: bool,
    view: View,
}

impl Call<'_> {
    /// The task, if the caller sees it and it is this agent's: else TaskNotFound, as for a
    /// missing one.
    async fn visible(&self, id: Uuid) -> Result<TaskStatus, Fault> {
        let status = self.state.mailbox.task_status(self.caller, id).await?;
        if status.task.recipient != *self.recipient {
            return Err(task_not_found(&id.to_string()).into());
        }
        Ok(status)
    }

    /// The tasks as the caller reads them now: answered ones it sent are delivered.
    async fn delivered(&self, mut tasks: Vec<TaskStatus>) -> Result<Vec<TaskStatus>, Fault> {
        self.state.mailbox.deliver(self.caller, &mut tasks).await?;
        Ok(tasks)
    }

    /// SendMessage's `params`, checked: the message to queue, its task id and how the answer
    /// is wanted. Nothing is written yet.
    fn prepare(&self, params: &Value) -> Result<Prepared, Fault> {
        let p = object(params)?;
        let config = match field(p, "configuration") {
            None => &Map::new(),
            Some(c) => c
                .as_object()
                .ok_or_else(|| A2aError::params("configuration must be an object"))?,
        };
        if field(config, "taskPushNotificationConfig").is_some() {
            return Err(A2aError::new(
                Kind::PushNotificationNotSupported,
                "push notifications are not supported: poll with GetTask",
            )
            .into());
        }
        let immediately = boolean(config, "returnImmediately")?.unwrap_or(false);
        let history_length = count(config, "historyLength")?;
        let message = field(p, "message").unwrap_or(&Value::Null);
        let incoming = Incoming::parse(message, self.state.mailbox.cfg.max_json_depth)?;
        let key = incoming.key(self.key_header)?;
        let (sender, recipient) = (self.caller.sub.as_str(), self.recipient.as_str());
        let id = wire::task_id(&self.state.a2a_namespace, sender, recipient, &key);
        Ok(Prepared {
            id,
            key,
            incoming,
            immediately,
            view: View {
                history_length,
                artifacts: true,
            },
        })
    }

    /// Queues a prepared message, or finds the task an earlier identical message queued.
    async fn queue(&self, prepared: &Prepared) -> Result<(), Fault> {
        let Prepared {
            id, key, incoming, ..
        } = prepared;
        let (sender, recipient) = (self.caller.sub.as_str(), self.recipient.as_str());
        let mut raw = incoming.native_task(*id, sender, recipient);
        crate::http::trace::carry(&mut raw, self.trace);
        let mailbox = &self.state.mailbox;
        let kept = Some(incoming.kept());
        match mailbox
            .send_keeping(Author::from(self.caller), &raw, kept)
            .await
        {
            Ok(_) => Ok(()),
            // The key's task exists with another body: the same message again replays it. It
            // is the same message only if the caller sent it to this agent.
            Err(e) if e.code == ErrorCode::TaskIdConflict => {
                let first = mailbox.task_status(self.caller, *id).await.ok();
                let first = first.filter(|s| {
                    s.task.sender == self.caller.sub && s.task.recipient == *self.recipient
                });
                let kept = first.as_ref().and_then(wire::kept_message);
                if kept.map(Incoming::sameness) != Some(Incoming::sameness(&incoming.message)) {
                    return Err(A2aError::params(format!(
                        "the idempotency key {key:?} was used for a different message"
                    ))
                    .naming("IDEMPOTENCY_CONFLICT")
                    .into());
                }
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    pub async fn send_message(&self, params: &Value) -> MethodResult {
        let prepared = self.prepare(params)?;
        self.queue(&prepared).await?;
        let (id, mailbox) = (prepared.id, &self.state.mailbox);
        let status = if prepared.immediately {
            mailbox.task_status(self.caller, id).await?
        } else {
            let block = self.state.a2a.block;
            mailbox.await_settled(self.caller, id, block).await?
        };
        let task = self.deliver_one(status).await?;
        Ok(json!({"task": wire::task(&task, prepared.view)}))
    }

    /// SendStreamingMessage: takes its place among the caller's waiting requests, then queues
    /// as SendMessage does (`returnImmediately` has no meaning on a stream); a refusal of the
    /// waiting limits thus queues nothing.
    pub async fn stream_message(&self, params: &Value) -> Result<(Follow<'_>, View), Fault> {
        let prepared = self.prepare(params)?;
        let follow = self.state.mailbox.follow(self.caller, prepared.id)?;
        self.queue(&prepared).await?;
        Ok((follow, prepared.view))
    }

    /// SubscribeToTask: the task to follow, unless it is invisible (TaskNotFound) or already
    /// in a terminal state (UnsupportedOperation: there is nothing left to stream).
    pub async fn subscribe(&self, params: &Value) -> Result<(Follow<'_>, View), Fault> {
        let id = task_id(object(params)?)?;
        let status = self.visible(id).await?;
        if status.state.is_settled() {
            return Err(A2aError::new(
                Kind::UnsupportedOperation,
                format!(
                    "task {id} is already {}: there is nothing to stream; read it with GetTask",
                    wire::state_of(&status)
                ),
            )
            .into());
        }
        let view = View {
            history_length: None,
            artifacts: true,
        };
        Ok((self.state.mailbox.follow(self.caller, id)?, view))
    }

    /// The task as the caller reads it now: answered, it is delivered if the caller sent it.
    pub async fn deliver_one(&self, status: TaskStatus) -> Result<TaskStatus, Fault> {
        let mut tasks = self.delivered(vec![status]).await?;
        let missing = || crate::error::MailboxError::internal("a delivered task went missing");
        Ok(tasks.pop().ok_or_else(missing)?)
    }

    pub async fn get_task(&self, params: &Value) -> MethodResult {
        let p = object(params)?;
        let id = task_id(p)?;
        let history_length = count(p, "historyLength")?;
        let task = self.deliver_one(self.visible(id).await?).await?;
        let view = View {
            history_length,
            artifacts: true,
        };
        Ok(wire::task(&task, view))
    }

    pub async fn cancel_task(&self, params: &Value) -> MethodResult {
        let id = task_id(object(params)?)?;
        self.visible(id).await?;
        self.state
            .mailbox
            .cancel(Author::from(self.caller), id, None)
            .await?;
        let view = View {
            history_length: None,
            artifacts: true,
        };
        Ok(wire::task(&self.visible(id).await?, view))
    }

    pub async fn list_tasks(&self, params: &Value) -> MethodResult {
        let p = object(params)?;
        let page_size = match count(p, "pageSize")? {
            None | Some(0) => 50,
            Some(n @ 1..=100) => n,
            Some(n) => return Err(A2aError::params(format!("pageSize {n} is above 100")).into()),
        };
        let history_length = count(p, "historyLength")?;
        let artifacts = boolean(p, "includeArtifacts")?.unwrap_or(false);
        let status = match field(p, "status") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(n) => Some(enum_name(n)?),
        };
        let filter = match &status {
            Some(name) => wire::state_filter(name)?,
            None => Some((Vec::new(), Vec::new())),
        };
        let empty =
            json!({"tasks": [], "nextPageToken": "", "pageSize": page_size, "totalSize": 0});
        let Some((states, result_statuses)) = filter else {
            return Ok(empty);
        };
        let updated_after_ms = match string(p, "statusTimestampAfter")? {
            None => None,
            Some(t) => Some(parse_ms(t).ok_or_else(|| {
                A2aError::params(format!(
                    "statusTimestampAfter {t:?} is not an RFC 3339 timestamp"
                ))
            })?),
        };
        let req = ListRequest {
            states,
            result_statuses,
            // A sender lists what it sent; an operator every task of this agent.
            role: if self.caller.is_operator() {
                Role::Any
            } else {
                Role::Sender
            },
            recipient: Some(self.recipient.clone()),
            context_id: string(p, "contextId")?.map(str::to_owned),
            cursor: string(p, "pageToken")?
                .filter(|t| !t.is_empty())
                .map(str::to_owned),
            updated_after_ms,
            limit: page_size as i64,
            ..ListRequest::default()
        };
        let mailbox = &self.state.mailbox;
        let page = mailbox.list_tasks(self.caller, &req).await?;
        let total = mailbox
            .count_tasks(self.caller, &req, TOTAL_SIZE_CAP)
            .await?;
        let view = View {
            history_length,
            artifacts,
        };
        let tasks: Vec<Value> = self
            .delivered(page.tasks)
            .await?
            .iter()
            .map(|t| wire::task(t, view))
            .collect();
        Ok(json!({
            "tasks": tasks,
            "nextPageToken": page.next_cursor.unwrap_or_default(),
            "pageSize": page_size,
            "totalSize": total,
        }))
    }
}

/// `ListTasks`' `totalSize` counts up to this many tasks (docs/a2a.md): a list of more says
/// this many, so that no page costs an unbounded count.
pub const TOTAL_SIZE_CAP: u64 = 10_000;

pub fn task_not_found(id: &str) -> A2aError {
    A2aError::new(
        Kind::TaskNotFound,
        format!("no task {id} is visible to the caller"),
    )
}

fn object(params: &Value) -> Result<&Map<String, Value>, A2aError> {
    params
        .as_object()
        .ok_or_else(|| A2aError::params("params must be an object"))
}

/// A field, `null` counting as absent (ProtoJSON).
fn field<'a>(p: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    p.get(name).filter(|v| !v.is_null())
}

/// The `id` of GetTask and CancelTask; an id that is not a UUID names no task.
fn task_id(p: &Map<String, Value>) -> Result<Uuid, A2aError> {
    let id = string(p, "id")?.ok_or_else(|| A2aError::params("id is required"))?;
    Uuid::parse_str(id).map_err(|_| task_not_found(id))
}

fn string<'a>(p: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, A2aError> {
    match field(p, name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(A2aError::params(format!("{name} must be a string"))),
    }
}

/// A non-negative integer; ProtoJSON also spells integers as strings (and so does a query).
fn count(p: &Map<String, Value>, name: &str) -> Result<Option<usize>, A2aError> {
    let bad = || A2aError::params(format!("{name} must be a non-negative integer"));
    match field(p, name) {
        None => Ok(None),
        Some(Value::Number(n)) => n.as_u64().map(|n| Some(n as usize)).ok_or_else(bad),
        Some(Value::String(s)) => s.parse().map(Some).map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

fn boolean(p: &Map<String, Value>, name: &str) -> Result<Option<bool>, A2aError> {
    match field(p, name) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(_) => Err(A2aError::params(format!("{name} must be true or false"))),
    }
}

/// A TaskState given by number, as ProtoJSON allows.
fn enum_name(n: &Value) -> Result<String, A2aError> {
    let names = wire::A2A_STATES;
    n.as_u64()
        .and_then(|i| names.get(i as usize))
        .map(|s| (*s).to_owned())
        .ok_or_else(|| A2aError::params(format!("unknown status {n}")))
}
