//! Reading a request: JSON bodies that must be objects, the `Idempotency-Key` header, path ids
//! and the shared query parameters (`wait_ms`, `limit`, non-negative filters, a list's filters).

use std::time::Duration;

use actix_web::HttpRequest;
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use crate::domain::{no_nul, AgentId, TaskState, MAX_MS};
use crate::error::MailboxError;
use crate::mailbox::listing::{ListRequest, Role};
use crate::mailbox::IdemRequest;

/// The longest long-poll a request may ask for (`wait_ms`).
pub const MAX_WAIT_MS: u64 = 30_000;
/// `limit` when a list request names none.
pub const DEFAULT_LIMIT: i64 = 10;
/// The largest `limit` a list request gets; larger values are clamped, not refused.
pub const MAX_LIMIT: i64 = 1000;

/// Parses a JSON body that must be an object (serde would also fill a struct from an array).
pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    what: &str,
    body: &Value,
) -> Result<T, MailboxError> {
    object(what, body)?;
    T::deserialize(body).map_err(|e| invalid_body(what, e))
}

/// [`typed`] for a body that is not needed afterwards: its values move into `T` (a batch's
/// tasks) instead of being copied.
pub(crate) fn typed_owned<T: serde::de::DeserializeOwned>(
    what: &str,
    body: Value,
) -> Result<T, MailboxError> {
    object(what, &body)?;
    serde_json::from_value(body).map_err(|e| invalid_body(what, e))
}

fn invalid_body(what: &str, e: serde_json::Error) -> MailboxError {
    MailboxError::invalid(format!("invalid {what}: {e}"))
}

/// Refuses a body that is not a JSON object.
pub(crate) fn object(what: &str, body: &Value) -> Result<(), MailboxError> {
    if body.is_object() {
        Ok(())
    } else {
        Err(MailboxError::invalid(format!(
            "the {what} must be a JSON object"
        )))
    }
}

/// The request's `Idempotency-Key`, bound to its method, path and body.
pub(crate) fn idem_request(
    req: &HttpRequest,
    body: &Value,
) -> Result<Option<IdemRequest>, MailboxError> {
    match req.headers().get("Idempotency-Key") {
        None => Ok(None),
        Some(v) => {
            let key = v.to_str().map_err(|_| {
                MailboxError::invalid("the Idempotency-Key header must be visible ASCII")
            })?;
            IdemRequest::new(key, req.method().as_str(), req.path(), body).map(Some)
        }
    }
}

/// A task id in the path.
pub(crate) fn path_uuid(raw: &str) -> Result<Uuid, MailboxError> {
    Uuid::parse_str(raw).map_err(|_| MailboxError::invalid(format!("{raw:?} is not a UUID")))
}

/// A long-poll's `wait_ms`: absent means answer at once; above [`MAX_WAIT_MS`] is refused.
pub(crate) fn wait(wait_ms: Option<u64>) -> Result<Duration, MailboxError> {
    match wait_ms.unwrap_or(0) {
        w if w <= MAX_WAIT_MS => Ok(Duration::from_millis(w)),
        w => Err(MailboxError::invalid(format!(
            "wait_ms {w} is out of range 0..={MAX_WAIT_MS}"
        ))),
    }
}

/// A list's `limit`, defaulted and clamped to 1..=[`MAX_LIMIT`].
pub(crate) fn limit(limit: Option<i64>) -> i64 {
    limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT)
}

/// A filter that must not be negative.
pub(crate) fn non_negative(name: &str, v: Option<i64>) -> Result<Option<i64>, MailboxError> {
    match v {
        Some(v) if v < 0 => Err(MailboxError::invalid(format!(
            "{name} must not be negative"
        ))),
        v => Ok(v),
    }
}

/// `?limit=` alone: the one description of a list's `limit`.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct LimitQuery {
    /// How many entries to answer at most. Defaults to 10; any other value is clamped to 1..=1000
    /// (out-of-range values are not refused).
    #[param(minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64, example = 10)]
    pub limit: Option<i64>,
}

/// `?wait_ms=`: the one description of a long-poll.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct WaitQuery {
    /// Long-poll: how long to wait for something to arrive, in milliseconds (0..=30000, default 0:
    /// answer at once). A waiting request is parked: it holds no database connection and is woken
    /// only by a commit that concerns it (one queued task wakes one waiting lease of its recipient,
    /// one result one waiting drain of its sender), on this instance or, through PostgreSQL's
    /// LISTEN/NOTIFY, on another one sharing the database; it looks once more when `wait_ms` ends.
    /// On PostgreSQL a request waiting on this instance is answered by the very transaction that
    /// queues its task or stores its result; if that transaction is running when `wait_ms` runs
    /// out, the answer waits for it, so a lease or drain it committed is never lost. Larger values
    /// → 400 `invalid_request`. Past the instance's limits on parked requests (per caller,
    /// `A2A_MAILBOX_MAX_WAITING_PER_CALLER`, default 1000; in all, `A2A_MAILBOX_MAX_WAITING`,
    /// default 50000) a request with `wait_ms` above 0 is answered at once with 429
    /// `too_many_waiting` or 503 `overloaded`, `Retry-After: 1`, and changes nothing.
    #[param(minimum = 0, maximum = 30000, example = 1000)]
    pub wait_ms: Option<u64>,
}

/// The filters of a list, as the query string carries them (`GET /a2a/tasks`, and MCP's
/// `list_tasks` tool's arguments).
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// Keep tasks in these states: one or more of `queued`, `in_flight`, `result_pending`,
    /// `resolved`, `canceled`, comma-separated.
    #[param(
        pattern = "^(queued|in_flight|result_pending|resolved|canceled)\
            (,(queued|in_flight|result_pending|resolved|canceled))*$",
        example = "queued,in_flight"
    )]
    state: Option<String>,
    /// `sender`: tasks the caller sent; `recipient`: tasks addressed to the caller; `any` (the
    /// default): every task visible to the caller (for an operator, every task).
    role: Option<Role>,
    /// Keep tasks sent by this agent.
    #[param(value_type = Option<AgentId>, example = "research@acme")]
    sender: Option<String>,
    /// Keep tasks addressed to this agent.
    #[param(value_type = Option<AgentId>, example = "billing@acme")]
    recipient: Option<String>,
    /// Keep the children of this task (its `parent`).
    #[param(value_type = Option<uuid::Uuid>, example = "0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90")]
    parent: Option<String>,
    /// Keep tasks of this conversation.
    #[param(example = "conversation-42")]
    context_id: Option<String>,
    /// Keep tasks of this kind.
    #[param(example = "refund")]
    task_kind: Option<String>,
    /// Keep tasks created after this instant (`created_at_ms >` it), in epoch milliseconds.
    #[param(minimum = 0, maximum = 9223372036854775807_u64)]
    created_after_ms: Option<u64>,
    /// Keep tasks created before this instant (`created_at_ms <` it), in epoch milliseconds.
    #[param(minimum = 0, maximum = 9223372036854775807_u64)]
    created_before_ms: Option<u64>,
    /// The `next_cursor` of the previous page, unchanged (opaque; its form may change). Walking
    /// every page with the same filters returns each task that existed at the first call exactly
    /// once. Empty: the first page.
    #[param(
        pattern = r"^([0-9]{1,18}\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})?$",
        example = "1736239990000.0b8f1f5e-6d1c-4c7e-9a43-2f1d3c5b7a90"
    )]
    cursor: Option<String>,
    /// How many tasks a page holds at most. Defaults to 10; any other value is clamped to 1..=1000
    /// (out-of-range values are not refused).
    #[param(minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64, example = 10)]
    limit: Option<i64>,
}

impl ListQuery {
    pub(crate) fn request(&self) -> Result<ListRequest, MailboxError> {
        let agent = |v: &Option<String>| {
            v.as_deref()
                .map(AgentId::parse)
                .transpose()
                .map_err(MailboxError::invalid)
        };
        let ms = |name: &str, v: Option<u64>| match v {
            Some(v) if v > MAX_MS => Err(MailboxError::invalid(format!("{name} is out of range"))),
            v => Ok(v.map(|v| v as i64)),
        };
        no_nul("context_id", self.context_id.as_deref())?;
        no_nul("task_kind", self.task_kind.as_deref())?;
        let mut states = Vec::new();
        for s in self.state.iter().flat_map(|s| s.split(',')) {
            let state = TaskState::parse(s.trim()).ok_or_else(|| {
                MailboxError::invalid(format!(
                    "unknown state {s:?}: use queued, in_flight, result_pending, resolved or canceled"
                ))
            })?;
            states.push(state);
        }
        Ok(ListRequest {
            states,
            role: self.role.unwrap_or_default(),
            sender: agent(&self.sender)?,
            recipient: agent(&self.recipient)?,
            parent: self.parent.as_deref().map(path_uuid).transpose()?,
            context_id: self.context_id.clone(),
            task_kind: self.task_kind.clone(),
            // An empty cursor is the first page, like none.
            cursor: self.cursor.clone().filter(|c| !c.is_empty()),
            created_after_ms: ms("created_after_ms", self.created_after_ms)?,
            created_before_ms: ms("created_before_ms", self.created_before_ms)?,
            limit: limit(self.limit),
            ..ListRequest::default()
        })
    }
}

/// `?max=&attempt_id=`: the one description of a take in batches (`GET /a2a/tasks/next`,
/// `GET /a2a/results/next`).
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct TakeQuery {
    /// Take up to this many (1..=100) in one transaction and answer them as a batch, oldest
    /// first (0 to `max` of them); a long-poll answers as soon as one is there, without waiting
    /// to fill the batch. Without it, one is taken and answered in the single shape. Outside
    /// 1..=100 → 400 `invalid_request`.
    #[param(minimum = 1, maximum = 100, example = 16)]
    pub max: Option<i64>,
    /// A UUID the client makes once per take and sends again on each retry of it: within 5
    /// minutes, the same caller retrying with the same `attempt_id` is answered what the first
    /// take got (the leases its tasks still hold; the results it drained) instead of taking
    /// more, so an answer lost on the way is not a lease stranded. Used for another request
    /// (another route, recipient or `max`) → 422 `idempotency_key_reused`.
    #[param(value_type = Option<Uuid>, example = "4f0c2a9e-3b1d-4e8a-9c57-0d6e2b7f1a34")]
    pub attempt_id: Option<String>,
}

impl TakeQuery {
    /// `max`, when given, within 1..=100.
    pub fn max(&self) -> Result<Option<u32>, MailboxError> {
        let most = crate::domain::answers::MAX_TAKE;
        self.max
            .map(|m| {
                u32::try_from(m)
                    .ok()
                    .filter(|m| (1..=most).contains(m))
                    .ok_or_else(|| {
                        MailboxError::invalid(format!("max {m} is out of range 1..={most}"))
                    })
            })
            .transpose()
    }

    /// `max`, and the take's attempt, described by `route` and what it asks (`max`, and the
    /// rest of `asked`).
    pub fn read(
        &self,
        route: &str,
        asked: &str,
    ) -> Result<(Option<u32>, Option<crate::mailbox::takes::Attempt>), MailboxError> {
        let max = self.max()?;
        let attempt = self
            .attempt_id
            .as_deref()
            .map(|raw| {
                let id = Uuid::parse_str(raw).map_err(|_| {
                    MailboxError::invalid(format!("attempt_id {raw:?} is not a UUID"))
                })?;
                let most = max.map_or_else(|| "one".to_owned(), |m| m.to_string());
                let asked = format!("{route}{asked} max={most}");
                Ok::<_, MailboxError>(crate::mailbox::takes::Attempt::new(id, asked))
            })
            .transpose()?;
        Ok((max, attempt))
    }
}
