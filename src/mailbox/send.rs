//! Sending a task (docs/contract.md#endpoints, docs/contract.md#idempotency): the gates of a send,
//! in order, and the result cache.

use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use super::audit::{audit, capability_audit, kind, CAPABILITY_CHECK};
use super::{rule, Cx, Done, Mailbox, Rule, Wake};
use crate::auth::{cap_error, Caller, CapCheck, ScopeCtx};
use crate::domain::answers::TaskQueued;
use crate::domain::free_form::{body_within, without_reserved};
use crate::domain::{cache_key, A2ATask, AgentId, Validate};
use crate::error::{ErrorCode, MailboxError};
use crate::mailbox::Author;
use crate::store::{parse_uuid, NewTask, Tx};

/// A task that passed the gates of a send that need no database: the sender, the capability
/// and the body.
pub(super) struct Accepted {
    pub task: A2ATask,
    pub id: String,
    /// The canonical JSON of the task as accepted.
    pub body: String,
    pub cache_key: Option<String>,
}

impl Accepted {
    fn new(task: A2ATask) -> Result<Accepted, MailboxError> {
        let body = serde_json::to_string(&task).map_err(MailboxError::internal)?;
        Ok(Accepted {
            id: task.id.to_string(),
            cache_key: cache_key(&task),
            body,
            task,
        })
    }

    /// The stored form: its canonical JSON, and the columns the rules query.
    pub fn stored(&self) -> NewTask {
        let task = &self.task;
        let idem = task.idempotency.as_ref();
        NewTask {
            id: self.id.clone(),
            sender: task.sender.to_string(),
            recipient: task.recipient.to_string(),
            body: self.body.clone(),
            deadline_ms: task.deadline_ms.map(|d| d as i64),
            duplicate_safety: idem.map(|i| i.duplicate_safety.as_str().to_owned()),
            idem_key: idem.map(|i| i.key.clone()),
            parent: task.parent.map(|p| p.to_string()),
            context_id: task.context_id.clone(),
            task_kind: task.task_kind.clone(),
            cache_key: self.cache_key.clone(),
        }
    }
}

/// What the first gates of a send decided, and the audit rows they wrote.
pub(super) struct Checked {
    /// `(kind, body)` of each audit row, in order, issued by the caller.
    pub audits: Vec<(&'static str, Value)>,
    pub outcome: Result<Accepted, MailboxError>,
}

/// Writes the audit rows of send gates (one item's, or a whole batch's) in one statement, each
/// distinct row once: a batch is one request of one caller, and the same check with the same
/// outcome (500 tasks for one recipient pass one `capability_check` for `a2a-send:<recipient>`)
/// is recorded once, not once per item. A fan-out to 500 recipients writes 500 rows.
pub(super) async fn write_audits<'a>(
    tx: &mut Tx,
    caller: &Caller,
    now: i64,
    audits: impl IntoIterator<Item = &'a (&'static str, Value)>,
) -> Result<(), MailboxError> {
    let (mut seen, mut last) = (std::collections::HashSet::new(), None);
    let rows: Vec<(&str, String, bool)> = audits
        .into_iter()
        // A run of equal rows (a batch's items for one recipient) is serialised once.
        .filter(|row| last.replace(*row) != Some(*row))
        .map(|(kind, fields)| (*kind, super::audit::bounded(fields)))
        .filter(|row| seen.insert(row.clone()))
        .map(|(kind, body)| (kind, body, super::audit::filed(kind)))
        .collect();
    tx.audit_many(now, caller.sub.as_str(), &rows).await
}

/// What a facade keeps under its own key of a task's `metadata` (the A2A message a task was sent
/// as): set after the caller's own metadata was checked, and by no one else.
pub type Kept = (&'static str, Value);

/// How a send's body is read: the nesting limit of its free-form values, and the facade's entry
/// to keep in its `metadata`, if any.
#[derive(Clone, Copy)]
pub(super) struct BodyRules<'a> {
    pub max_depth: usize,
    pub kept: Option<&'a Kept>,
}

/// The gates of a send that need no database, in order: 1. the sender is the caller; 2. the
/// capability to send to the recipient; 3. the body. `raw` is the body as JSON: the sender and
/// capability gates run on it before it is validated as an `A2ATask` (docs/contract.md#endpoints,
/// docs/contract.md#details).
pub(super) fn check_send(caller: &Caller, raw: &Value, rules: BodyRules<'_>) -> Checked {
    let refused = |audits, e| Checked {
        audits,
        outcome: Err(e),
    };
    let sender = raw.get("sender").and_then(Value::as_str);
    let recipient = raw.get("recipient").and_then(Value::as_str);
    let (Some(sender), Some(recipient)) = (sender, recipient) else {
        let e = MailboxError::invalid("the task needs string fields sender and recipient");
        return refused(vec![], e);
    };
    // 1. The sender is the caller.
    if sender != caller.sub.as_str() {
        // Claimed values, copied as strings only (the row bounds their size).
        let id = raw.get("id").and_then(Value::as_str);
        let row = json!({"sender": sender, "recipient": recipient, "task_id": id});
        let e = MailboxError::new(
            ErrorCode::SenderMismatch,
            // The claimed sender is not echoed: it may be any size.
            format!(
                "the task's sender is not the token subject {:?}",
                caller.sub.as_str()
            ),
        );
        return refused(vec![(kind::SENDER_MISMATCH, row)], e);
    }
    // 2. The capability to send to the recipient, which must be an agent id for an action to
    // be named for it (docs/contract.md#details): an invalid one is the body's fault, before any check.
    if let Err(e) = AgentId::parse(recipient) {
        return refused(vec![], MailboxError::invalid(format!("recipient: {e}")));
    }
    let ctx = ScopeCtx {
        peer: Some(recipient),
        task_id: raw.get("id").and_then(Value::as_str).map(str::to_owned),
        ..Default::default()
    };
    let action = format!("a2a.send.{recipient}");
    let check = caller.check(&action, &ctx);
    let row = capability_audit(
        &format!("a2a-send:{recipient}"),
        &action,
        check == CapCheck::Passed,
    );
    let audits = vec![(CAPABILITY_CHECK, row)];
    if let Err(e) = cap_error(check, &action) {
        return refused(audits, e);
    }
    // 3. The body: its free-form values within the nesting limit, its type and rules; the
    // facade's key of `metadata` is the facade's alone (docs/contract.md#free-form-json).
    let outcome = body_within(raw, rules.max_depth)
        .and_then(|()| {
            A2ATask::deserialize(raw)
                .map_err(|e| MailboxError::invalid(format!("invalid task: {e}")))
        })
        .and_then(|task| task.validate().map(|()| task))
        .map(|mut task| {
            without_reserved(&mut task.metadata);
            if let Some((key, value)) = rules.kept {
                let metadata = task.metadata.get_or_insert_with(Default::default);
                metadata.insert((*key).to_owned(), value.clone());
            }
            task
        })
        .and_then(Accepted::new);
    Checked { audits, outcome }
}

impl Mailbox {
    /// `POST /a2a/tasks`. `raw` is the body as JSON: the sender and capability gates run on it
    /// before the body is validated as an `A2ATask` (docs/contract.md#endpoints, docs/contract.md#details).
    pub async fn send(
        &self,
        by: Author<'_>,
        raw: &Value,
    ) -> Result<Done<TaskQueued>, MailboxError> {
        self.send_keeping(by, raw, None).await
    }

    /// [`Mailbox::send`] for a facade, which keeps `kept` in the task's `metadata` under its
    /// own key.
    pub(super) async fn send_keeping_untraced(
        &self,
        by: Author<'_>,
        raw: &Value,
        kept: Option<Kept>,
    ) -> Result<Done<TaskQueued>, MailboxError> {
        let fast = self.try_send_one(by.caller, raw, kept.as_ref());
        // Built only when the fast path did not answer.
        let rule = || -> Rule<TaskQueued> {
            let (raw, kept) = (raw.clone(), kept.clone());
            rule!(|this, cx| this.send_in(cx, &raw, kept.as_ref()))
        };
        self.write_fast_first(by, fast, rule).await
    }

    /// How this mailbox reads a send's body.
    pub(super) fn body_rules<'a>(&self, kept: Option<&'a Kept>) -> BodyRules<'a> {
        BodyRules {
            max_depth: self.cfg.max_json_depth,
            kept,
        }
    }

    /// The common case as one write of the store's fast path: a valid task without a cache key,
    /// from its own sender, who holds the capability, under a new id. The task and its
    /// `capability_check` audit row are inserted together, the audit row only when the task was.
    /// Anything else (`None`) goes through [`Mailbox::send_in`], which answers it exactly
    /// (replay, conflict, refusal); nothing was written then.
    async fn try_send_one(
        &self,
        caller: &Caller,
        raw: &Value,
        kept: Option<&Kept>,
    ) -> Result<Option<Done<TaskQueued>>, MailboxError> {
        let Checked {
            audits,
            outcome: Ok(accepted),
        } = check_send(caller, raw, self.body_rules(kept))
        else {
            return Ok(None);
        };
        let [(CAPABILITY_CHECK, checked)] = &audits[..] else {
            return Ok(None);
        };
        if accepted.cache_key.is_some() {
            return Ok(None);
        }
        let Some(sent) = self
            .store
            .send_one(accepted.stored(), super::audit::bounded(checked))
            .await?
        else {
            return Ok(None);
        };
        self.metrics.inc(&self.metrics.tasks_sent);
        let done = queued(accepted.task.id, None, &accepted.task);
        // A waiting worker leased it in the same commit: nobody else is woken.
        Ok(Some(if sent.handed {
            done.waking(Wake::Nobody)
        } else {
            done
        }))
    }

    pub(super) async fn send_in(
        &self,
        cx: Cx<'_>,
        raw: &Value,
        kept: Option<&Kept>,
    ) -> Result<Done<TaskQueued>, MailboxError> {
        let Cx { tx, caller, now } = cx;
        let checked = check_send(caller, raw, self.body_rules(kept));
        write_audits(tx, caller, now, &checked.audits).await?;
        self.store_send(tx, caller, &checked.outcome?, now).await
    }

    /// The gates of a send that read the mailbox, on a task that passed [`check_send`].
    pub(super) async fn store_send(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        accepted: &Accepted,
        now: i64,
    ) -> Result<Done<TaskQueued>, MailboxError> {
        let Accepted { task, body, .. } = accepted;
        let new = accepted.stored();
        // 4. A task with a cache key is checked for a replay of its id before the cache is
        // consulted; any other task is inserted at once and only a conflict reads the existing
        // row (one statement fewer on the common path).
        if let Some(key) = &accepted.cache_key {
            if let Some(done) = self.replay_send(tx, task, body).await? {
                return Ok(done);
            }
            // 5. The result cache: the work was done already, so a copy of its result is
            // queued for the sender at once.
            if let Some(hit) = tx.cache_lookup(key, now).await? {
                if !tx.insert_answered(&new, &hit, now).await? {
                    return self.replay_after_race(tx, task, body).await;
                }
                audit(
                    tx,
                    now,
                    caller.sub.as_str(),
                    kind::RESULT_CACHE_REPLAYED,
                    json!({"task_id": accepted.id, "replayed_from": hit.source_task_id}),
                )
                .await?;
                self.metrics.inc(&self.metrics.cache_hits);
                let source = parse_uuid(&hit.source_task_id)?;
                return Ok(Done::created(TaskQueued::new(task.id, Some(source)))
                    .waking(Wake::result(task.sender.as_str(), &task.id.to_string())));
            }
        }
        // 6. Queued, unless the id exists.
        if !tx.insert_task(&new, now).await? {
            return self.replay_after_race(tx, task, body).await;
        }
        self.metrics.inc(&self.metrics.tasks_sent);
        Ok(queued(task.id, None, task))
    }

    /// A send whose id exists: the same sender and body replays the first answer, anything else
    /// is a conflict.
    async fn replay_send(
        &self,
        tx: &mut Tx,
        task: &A2ATask,
        body: &str,
    ) -> Result<Option<Done<TaskQueued>>, MailboxError> {
        let Some(existing) = tx.task_origin(&task.id.to_string()).await? else {
            return Ok(None);
        };
        if existing.sender == task.sender.as_str() && same_but_trace(&existing.body, body, task) {
            let replayed_from = existing
                .replayed_from
                .as_deref()
                .map(parse_uuid)
                .transpose()?;
            Ok(Some(Done::replay(TaskQueued::new(task.id, replayed_from))))
        } else {
            Err(MailboxError::new(
                ErrorCode::TaskIdConflict,
                format!("task id {} is already used by a different task", task.id),
            ))
        }
    }

    /// Another transaction inserted the same id between our check and our insert.
    pub(super) async fn replay_after_race(
        &self,
        tx: &mut Tx,
        task: &A2ATask,
        body: &str,
    ) -> Result<Done<TaskQueued>, MailboxError> {
        self.replay_send(tx, task, body)
            .await?
            .ok_or_else(|| MailboxError::internal("a conflicting insert left no row"))
    }
}

/// Whether a stored task's body is the one sent, its trace context aside: a replay with another
/// trace is the same task, and keeps the first trace (docs/contract.md#trace-context).
fn same_but_trace(stored: &str, body: &str, task: &A2ATask) -> bool {
    if stored == body {
        return true;
    }
    #[derive(serde::Deserialize)]
    struct Traced {
        #[serde(default, deserialize_with = "a2a_mailbox_types::trace::lenient")]
        trace: Option<a2a_mailbox_types::Trace>,
    }
    let Ok(Traced { trace }) = serde_json::from_str::<Traced>(stored) else {
        return false;
    };
    let mut task = task.clone();
    task.trace = trace;
    serde_json::to_string(&task).is_ok_and(|as_stored| as_stored == stored)
}

fn queued(task_id: Uuid, replayed_from: Option<Uuid>, task: &A2ATask) -> Done<TaskQueued> {
    Done::created(TaskQueued::new(task_id, replayed_from))
        .waking(Wake::Recipient(task.recipient.to_string()))
}
