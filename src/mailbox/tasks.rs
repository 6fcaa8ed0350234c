//! Sending, leasing and reading tasks.

use std::time::Duration;

use serde_json::{json, Value};
use uuid::Uuid;

use super::batch::{ClaimArgs, SendArgs};
use super::rows::{TaskRow, TASK_COLS};
use super::{audit, capability_audit, now_ms, Mailbox, Parked, Polled, Reply, WaitFor, Wake};
use crate::args;
use crate::auth::{Caller, CapCheck, ScopeCtx};
use crate::domain::{A2ATask, Lease, QueueEntry, QueueState};
use crate::error::{ErrorCode, MailboxError};
use crate::store::Tx;

use super::IdemRequest;

/// Filters of the queue snapshot.
#[derive(Clone, Debug, Default)]
pub struct QueueFilter {
    pub limit: i64,
    pub min_lease_age_ms: Option<i64>,
    pub deadline_within_ms: Option<i64>,
    pub state: Option<QueueState>,
}

pub struct QueueSnapshot {
    pub tasks: Vec<QueueEntry>,
    pub results: Vec<crate::domain::A2ATaskResult>,
}

#[derive(sqlx::FromRow)]
struct Existing {
    sender: String,
    body: String,
    replayed_from: Option<String>,
}

#[derive(sqlx::FromRow)]
struct CacheHit {
    source_task_id: String,
    status: String,
    content: String,
    error_message: Option<String>,
}

#[derive(sqlx::FromRow)]
struct Candidate {
    id: String,
    deadline_ms: Option<i64>,
}

/// [`Mailbox::send_fast`]'s text on SQLite (a send element of `a2a_step_many` on PostgreSQL): `$1..$7`
/// the task, `$8` now, `$9` the audit body; `changes()` carries the insert's outcome to the audit
/// insert.
const SEND_SQLITE: &str =
    "INSERT INTO tasks (id, sender, recipient, body, state, attempt, queue_seq, deadline_ms, \
           duplicate_safety, idem_key, created_at_ms, updated_at_ms) \
       VALUES ($1, $2, $3, $4, 'queued', 0, /*NEXT_QUEUE_SEQ*/, $5, $6, $7, $8, $8) \
       ON CONFLICT (id) DO NOTHING; \
     INSERT INTO audit (timestamp_ms, issuer, kind, body) \
       SELECT $8, $2, 'capability_check', $9 WHERE changes() = 1; \
     SELECT changes()";

/// Leases the head of `$1`'s queue to `$3` under lease id `$2` at `$4`, when the head is live.
fn claim_head_sql() -> String {
    format!(
        "UPDATE tasks SET state = 'in_flight', attempt = attempt + 1, lease_id = $2, leased_to = $3, \
            leased_at_ms = $4, heartbeat_at_ms = $4, updated_at_ms = $4 \
         WHERE id = (SELECT id FROM tasks WHERE state = 'queued' AND recipient = $1 \
                     ORDER BY queue_seq LIMIT 1 /*SKIP_LOCKED*/) \
           AND (deadline_ms IS NULL OR deadline_ms >= $4) \
         RETURNING {TASK_COLS}"
    )
}

fn queued_answer(task_id: Uuid, replayed_from: Option<&str>) -> Value {
    let mut body = json!({"kind": "a2a_task_queued", "task_id": task_id});
    if let Some(src) = replayed_from {
        body["replayed_from"] = Value::String(src.to_owned());
    }
    body
}

impl Mailbox {
    /// `POST /a2a/tasks`. `raw` is the body as JSON: the sender and capability gates run on it
    /// before the body is validated as an `A2ATask` (§4, §11).
    pub async fn send(
        &self,
        caller: &Caller,
        idem: Option<&IdemRequest>,
        raw: &Value,
    ) -> Result<Reply, MailboxError> {
        if idem.is_none() {
            if let Some(reply) = self.send_fast(caller, raw).await? {
                self.woke(&reply.wake);
                return Ok(reply);
            }
        }
        let this = self.clone();
        let c = caller.clone();
        let raw = raw.clone();
        self.write(
            caller,
            idem,
            Box::new(move |tx| Box::pin(async move { this.send_in(tx, &c, &raw).await })),
        )
        .await
    }

    /// The common case as one element of a send batch (PostgreSQL, see `batch`) or one call of
    /// the writer (SQLite): a valid task without a cache key, from its own sender, who holds the
    /// capability, under a new id. The task and its `capability_check` audit row are inserted
    /// together, the audit row only when the task was. Anything else (`None`) goes through [`Mailbox::send_in`], which
    /// answers it exactly (replay, conflict, refusal); nothing was written then.
    async fn send_fast(&self, caller: &Caller, raw: &Value) -> Result<Option<Reply>, MailboxError> {
        let sender = raw.get("sender").and_then(Value::as_str);
        let recipient = raw.get("recipient").and_then(Value::as_str);
        let (Some(sender), Some(recipient)) = (sender, recipient) else {
            return Ok(None);
        };
        if sender != caller.sub.as_str() {
            return Ok(None);
        }
        let action = format!("a2a.send.{recipient}");
        let ctx = ScopeCtx {
            peer: Some(recipient),
            task_id: raw.get("id").and_then(Value::as_str).map(str::to_owned),
            ..Default::default()
        };
        if caller.check(&action, &ctx) != CapCheck::Passed {
            return Ok(None);
        }
        let Ok(task) = serde_json::from_value::<A2ATask>(raw.clone()) else {
            return Ok(None);
        };
        if task.validate().is_err() || task.cache_key().is_some() {
            return Ok(None);
        }
        let body = serde_json::to_string(&task).map_err(MailboxError::internal)?;
        let idem = task.idempotency.as_ref();
        let checked = capability_audit(&format!("a2a-send:{recipient}"), &action, true);
        let inserted = match &self.batches {
            Some(batches) => {
                batches
                    .send(SendArgs {
                        id: task.id.to_string(),
                        sender: task.sender.to_string(),
                        recipient: task.recipient.to_string(),
                        body,
                        deadline_ms: task.deadline_ms.map(|d| d as i64),
                        duplicate_safety: idem.map(|i| i.duplicate_safety.as_str().to_owned()),
                        idem_key: idem.map(|i| i.key.clone()),
                        audit_body: checked.to_string(),
                    })
                    .await?
            }
            None => {
                let changed: Vec<(i64,)> = self
                    .write_sqlite(
                        SEND_SQLITE,
                        args![
                            task.id.to_string(),
                            task.sender.as_str(),
                            task.recipient.as_str(),
                            body.as_str(),
                            task.deadline_ms.map(|d| d as i64),
                            idem.map(|i| i.duplicate_safety.as_str()),
                            idem.map(|i| i.key.as_str()),
                            now_ms(),
                            checked.to_string()
                        ],
                    )
                    .await?;
                changed.first().is_some_and(|r| r.0 > 0)
            }
        };
        if !inserted {
            return Ok(None);
        }
        self.metrics.inc(&self.metrics.tasks_sent);
        Ok(Some(
            Reply::new(201, queued_answer(task.id, None))
                .waking(Wake::Recipient(task.recipient.to_string())),
        ))
    }

    async fn send_in(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        raw: &Value,
    ) -> Result<Reply, MailboxError> {
        let now = now_ms();
        let sender = raw.get("sender").and_then(Value::as_str);
        let recipient = raw.get("recipient").and_then(Value::as_str);
        let (Some(sender), Some(recipient)) = (sender, recipient) else {
            return Err(MailboxError::invalid(
                "the task needs string fields sender and recipient",
            ));
        };
        if sender != caller.sub.as_str() {
            audit(
                tx,
                now,
                caller.sub.as_str(),
                "a2a_sender_mismatch",
                json!({"sender": sender, "recipient": recipient, "task_id": raw.get("id")}),
            )
            .await?;
            return Err(MailboxError::new(
                ErrorCode::SenderMismatch,
                format!(
                    "the task's sender {sender:?} is not the token subject {:?}",
                    caller.sub.as_str()
                ),
            ));
        }
        let task_id = raw.get("id").and_then(Value::as_str).map(str::to_owned);
        let ctx = ScopeCtx {
            peer: Some(recipient),
            task_id: task_id.clone(),
            ..Default::default()
        };
        self.audited_check(
            tx,
            caller,
            &format!("a2a-send:{recipient}"),
            &format!("a2a.send.{recipient}"),
            &ctx,
            now,
        )
        .await?;
        let task: A2ATask = serde_json::from_value(raw.clone())
            .map_err(|e| MailboxError::invalid(format!("invalid task: {e}")))?;
        task.validate()?;
        let id = task.id.to_string();
        let body = serde_json::to_string(&task).map_err(MailboxError::internal)?;

        let cache_key = task.cache_key();
        // A task with a cache key must be checked for a replay of its id before the cache is
        // consulted; any other task is inserted at once and only a conflict reads the existing
        // row (one statement fewer on the common path).
        if cache_key.is_some() {
            if let Some(reply) = self.replay_send(tx, &task, &body).await? {
                return Ok(reply);
            }
        }
        let idem = task.idempotency.as_ref();
        let deadline = task.deadline_ms.map(|d| d as i64);
        if let Some(key) = &cache_key {
            let hit: Option<CacheHit> = tx
                .fetch_optional(
                    "SELECT source_task_id, status, content, error_message FROM result_cache \
                     WHERE cache_key = $1 AND expires_at_ms > $2",
                    args![key.as_str(), now],
                )
                .await?;
            if let Some(hit) = hit {
                // The work was done already: queue a copy of its result for the sender at once.
                let inserted = tx
                    .execute(
                        "INSERT INTO tasks (id, sender, recipient, body, state, attempt, queue_seq, deadline_ms, \
                            duplicate_safety, idem_key, cache_key, replayed_from, result_status, result_content, \
                            result_error, result_at_ms, result_seq, created_at_ms, updated_at_ms) \
                         VALUES ($1, $2, $3, $4, 'result_pending', 0, 0, $5, $6, $7, $8, $9, $10, $11, $12, $13, /*NEXT_RESULT_SEQ*/, $13, $13) \
                         ON CONFLICT (id) DO NOTHING",
                        args![
                            id.as_str(),
                            task.sender.as_str(),
                            task.recipient.as_str(),
                            body.as_str(),
                            deadline,
                            idem.map(|i| i.duplicate_safety.as_str()),
                            idem.map(|i| i.key.as_str()),
                            key.as_str(),
                            hit.source_task_id.as_str(),
                            hit.status.as_str(),
                            hit.content.as_str(),
                            hit.error_message,
                            now
                        ],
                    )
                    .await?;
                if inserted == 0 {
                    return self.replay_after_race(tx, &task, &body).await;
                }
                audit(
                    tx,
                    now,
                    caller.sub.as_str(),
                    "a2a_result_cache_replayed",
                    json!({"task_id": id, "replayed_from": hit.source_task_id}),
                )
                .await?;
                self.metrics.inc(&self.metrics.cache_hits);
                return Ok(
                    Reply::new(201, queued_answer(task.id, Some(&hit.source_task_id)))
                        .waking(Wake::Sender(task.sender.to_string())),
                );
            }
        }
        let inserted = tx
            .execute(
                "INSERT INTO tasks (id, sender, recipient, body, state, attempt, queue_seq, deadline_ms, \
                    duplicate_safety, idem_key, cache_key, created_at_ms, updated_at_ms) \
                 VALUES ($1, $2, $3, $4, 'queued', 0, /*NEXT_QUEUE_SEQ*/, $5, $6, $7, $8, $9, $9) \
                 ON CONFLICT (id) DO NOTHING",
                args![
                    id.as_str(),
                    task.sender.as_str(),
                    task.recipient.as_str(),
                    body.as_str(),
                    deadline,
                    idem.map(|i| i.duplicate_safety.as_str()),
                    idem.map(|i| i.key.as_str()),
                    cache_key,
                    now
                ],
            )
            .await?;
        if inserted == 0 {
            return self.replay_after_race(tx, &task, &body).await;
        }
        self.metrics.inc(&self.metrics.tasks_sent);
        Ok(Reply::new(201, queued_answer(task.id, None))
            .waking(Wake::Recipient(task.recipient.to_string())))
    }

    /// A send whose id exists: the same sender and body replays the first answer, anything else
    /// is a conflict.
    async fn replay_send(
        &self,
        tx: &mut Tx,
        task: &A2ATask,
        body: &str,
    ) -> Result<Option<Reply>, MailboxError> {
        let existing: Option<Existing> = tx
            .fetch_optional(
                "SELECT sender, body, replayed_from FROM tasks WHERE id = $1",
                args![task.id],
            )
            .await?;
        let Some(existing) = existing else {
            return Ok(None);
        };
        if existing.sender == task.sender.as_str() && existing.body == body {
            Ok(Some(
                Reply::new(
                    200,
                    queued_answer(task.id, existing.replayed_from.as_deref()),
                )
                .replay(),
            ))
        } else {
            Err(MailboxError::new(
                ErrorCode::TaskIdConflict,
                format!("task id {} is already used by a different task", task.id),
            ))
        }
    }

    /// Another transaction inserted the same id between our check and our insert.
    async fn replay_after_race(
        &self,
        tx: &mut Tx,
        task: &A2ATask,
        body: &str,
    ) -> Result<Reply, MailboxError> {
        self.replay_send(tx, task, body)
            .await?
            .ok_or_else(|| MailboxError::internal("a conflicting insert left no row"))
    }

    /// `GET /a2a/tasks/next`: leases the oldest queued task of `recipient`, waiting up to `wait`.
    pub async fn lease_next(
        &self,
        caller: &Caller,
        recipient: &str,
        wait: Duration,
    ) -> Result<Option<(crate::domain::A2ATask, Lease)>, MailboxError> {
        if recipient != caller.sub.as_str() {
            caller.require(
                &format!("a2a.lease.{recipient}"),
                &ScopeCtx {
                    peer: Some(recipient),
                    ..Default::default()
                },
            )?;
        }
        self.long_poll(wait, (WaitFor::Task, recipient), || {
            self.lease_once(caller, recipient)
        })
        .await
    }

    async fn lease_once(
        &self,
        caller: &Caller,
        recipient: &str,
    ) -> Result<Polled<(A2ATask, Lease)>, MailboxError> {
        let mut parked = None;
        if let Some(batches) = &self.batches {
            // The common case, one element of a claim batch (see `batch`): the head of the
            // queue is live and becomes the lease (no audit row: a lease is recorded in the
            // task row). If it finds nothing, it stays parked for a later send.
            let (claimed, ticket) = batches
                .claim(ClaimArgs {
                    recipient: recipient.to_owned(),
                    lease_id: Uuid::new_v4().to_string(),
                    caller: caller.sub.to_string(),
                    if_sent: false,
                })
                .await;
            if let Some(row) = claimed? {
                return Ok(Polled::Found(self.leased(row)?));
            }
            parked = Some(Parked {
                ticket,
                settle: |mailbox, outcome| {
                    outcome
                        .claimed()?
                        .map(|row| mailbox.leased(row))
                        .transpose()
                },
            });
        }
        // A cheap read, so an empty poll never takes a write transaction (SQLite: never waits
        // for the single writer). Something queued but not claimed above is an expired head
        // (or, on PostgreSQL, a head another claim holds): the transaction below walks it.
        let any: Option<(String,)> = self
            .db
            .fetch_optional(
                "SELECT id FROM tasks WHERE state = 'queued' AND recipient = $1 LIMIT 1",
                args![recipient],
            )
            .await?;
        if any.is_none() {
            return Ok(parked.map_or(Polled::Empty, Polled::Parked));
        }
        // Unparked first: if it was riding in a batch meanwhile, what it took is this poll's.
        if let Some(found) = Parked::leave(parked, self).await? {
            return Ok(Polled::Found(found));
        }
        let this = self.clone();
        let c = caller.clone();
        let r = recipient.to_owned();
        let (leased, expired) = self
            .transact(Box::new(move |tx| {
                Box::pin(async move {
                    let (leased, expired) = this.lease_in(tx, &c, &r).await?;
                    Ok(((leased, expired), true))
                })
            }))
            .await?;
        if expired > 0 {
            self.woke(&Wake::Everyone);
        }
        if leased.is_some() {
            self.metrics.inc(&self.metrics.leases);
        }
        Ok(leased.map_or(Polled::Empty, Polled::Found))
    }

    /// A lease a batch claimed: the task and its lease, counted.
    fn leased(&self, row: TaskRow) -> Result<(A2ATask, Lease), MailboxError> {
        let lease = row
            .lease()?
            .ok_or_else(|| MailboxError::internal("claimed row has no lease"))?;
        self.metrics.inc(&self.metrics.leases);
        Ok((row.task()?, lease))
    }

    /// One claim transaction: walks the head of the recipient's queue, resolving tasks whose
    /// deadline has passed (§4.1), and leases the first live one. Answers the lease and the
    /// number of tasks it expired.
    async fn lease_in(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        recipient: &str,
    ) -> Result<(Option<(A2ATask, Lease)>, u32), MailboxError> {
        let now = now_ms();
        // Fast path, one statement: the head of the queue is live and becomes the lease.
        let lease_id = Uuid::new_v4();
        let claimed: Option<TaskRow> = tx
            .fetch_optional(
                &claim_head_sql(),
                args![recipient, lease_id, caller.sub.as_str(), now],
            )
            .await?;
        if let Some(row) = claimed {
            let lease = row
                .lease()?
                .ok_or_else(|| MailboxError::internal("claimed row has no lease"))?;
            return Ok((Some((row.task()?, lease)), 0));
        }
        // Otherwise the queue is empty or its head has expired: walk it.
        let mut expired = 0;
        loop {
            // Only the (recipient, queue_seq) index can give this order on PostgreSQL: the global
            // FIFO index there is on `queue_seq + 0` (see `/*FIFO_QUEUE*/`), so the planner can
            // never walk it filtering on the recipient, a claim that grew with depth.
            let head: Option<Candidate> = tx
                .fetch_optional(
                    "SELECT id, deadline_ms FROM tasks WHERE state = 'queued' AND recipient = $1 \
                     ORDER BY queue_seq LIMIT 1 /*SKIP_LOCKED*/",
                    args![recipient],
                )
                .await?;
            let Some(head) = head else {
                return Ok((None, expired));
            };
            if head.deadline_ms.is_some_and(|d| d < now) {
                tx.execute(
                    "UPDATE tasks SET state = 'result_pending', result_status = 'error', result_content = '[]', \
                        result_error = 'deadline exceeded', result_at_ms = $2, result_seq = /*NEXT_RESULT_SEQ*/, \
                        updated_at_ms = $2 \
                     WHERE id = $1",
                    args![head.id.as_str(), now],
                )
                .await?;
                expired += 1;
                continue;
            }
            let lease_id = Uuid::new_v4();
            let row: TaskRow = tx
                .fetch_optional(
                    &format!(
                        "UPDATE tasks SET state = 'in_flight', attempt = attempt + 1, lease_id = $2, leased_to = $3, \
                            leased_at_ms = $4, heartbeat_at_ms = $4, updated_at_ms = $4 \
                         WHERE id = $1 RETURNING {TASK_COLS}"
                    ),
                    args![head.id.as_str(), lease_id, caller.sub.as_str(), now],
                )
                .await?
                .ok_or_else(|| MailboxError::internal("claimed row vanished"))?;
            let lease = row
                .lease()?
                .ok_or_else(|| MailboxError::internal("claimed row has no lease"))?;
            return Ok((Some((row.task()?, lease)), expired));
        }
    }

    /// `GET /a2a/tasks/{id}`: 404 when missing or invisible (identical answers).
    pub async fn task_status(
        &self,
        caller: &Caller,
        id: Uuid,
    ) -> Result<crate::domain::TaskStatus, MailboxError> {
        let row: Option<TaskRow> = self
            .db
            .fetch_optional(
                &format!("SELECT {TASK_COLS} FROM tasks WHERE id = $1"),
                args![id],
            )
            .await?;
        match row {
            Some(row) if row.visible_to(caller) => row.status(),
            _ => Err(not_found(id)),
        }
    }

    /// `GET /a2a/tasks/recent`: queued tasks visible to the caller, oldest first.
    pub async fn recent_tasks(
        &self,
        caller: &Caller,
        limit: i64,
    ) -> Result<Vec<A2ATask>, MailboxError> {
        let rows: Vec<TaskRow> = if caller.is_operator() {
            self.db
                .fetch_all(
                    &format!(
                        "SELECT {TASK_COLS} FROM tasks WHERE state = 'queued' ORDER BY /*FIFO_QUEUE*/ LIMIT $1"
                    ),
                    args![limit],
                )
                .await?
        } else {
            self.db
                .fetch_all(
                    &format!(
                        "SELECT {TASK_COLS} FROM tasks WHERE state = 'queued' AND (sender = $1 OR recipient = $1) \
                         ORDER BY /*FIFO_QUEUE*/ LIMIT $2"
                    ),
                    args![caller.sub.as_str(), limit],
                )
                .await?
        };
        rows.iter().map(TaskRow::task).collect()
    }

    /// `GET /a2a/queue`: queued tasks first (FIFO), then in-flight ones oldest lease first, and
    /// the pending results; all visibility-filtered. Filters apply before the limit.
    pub async fn queue(
        &self,
        caller: &Caller,
        f: &QueueFilter,
    ) -> Result<QueueSnapshot, MailboxError> {
        let now = now_ms();
        let operator = caller.is_operator();
        let me = caller.sub.as_str();
        let visible = if operator {
            "$1 = $1"
        } else {
            "(sender = $1 OR recipient = $1 OR leased_to = $1)"
        };
        // Optional filters are bound as nullable parameters so each statement's text stays fixed.
        let deadline_max = f.deadline_within_ms.map(|w| now.saturating_add(w));
        let heartbeat_max = f.min_lease_age_ms.map(|a| now.saturating_sub(a));
        let mut tasks: Vec<TaskRow> = Vec::new();
        if f.state != Some(QueueState::InFlight) {
            tasks = self
                .db
                .fetch_all(
                    &format!(
                        "SELECT {TASK_COLS} FROM tasks WHERE state = 'queued' AND {visible} \
                         AND ($3 IS NULL OR deadline_ms <= $3) ORDER BY /*FIFO_QUEUE*/ LIMIT $2"
                    ),
                    args![me, f.limit, deadline_max],
                )
                .await?;
        }
        let room = f.limit - tasks.len() as i64;
        if f.state != Some(QueueState::Queued) && room > 0 {
            let in_flight: Vec<TaskRow> = self
                .db
                .fetch_all(
                    &format!(
                        "SELECT {TASK_COLS} FROM tasks WHERE state = 'in_flight' AND {visible} \
                         AND ($3 IS NULL OR deadline_ms <= $3) AND ($4 IS NULL OR heartbeat_at_ms <= $4) \
                         ORDER BY heartbeat_at_ms, id LIMIT $2"
                    ),
                    args![me, room, deadline_max, heartbeat_max],
                )
                .await?;
            tasks.extend(in_flight);
        }
        let results: Vec<TaskRow> = self
            .db
            .fetch_all(
                &format!(
                    "SELECT {TASK_COLS} FROM tasks WHERE state = 'result_pending' AND {} \
                     ORDER BY /*FIFO_RESULT*/ LIMIT $2",
                    if operator {
                        "$1 = $1"
                    } else {
                        "(sender = $1 OR recipient = $1)"
                    }
                ),
                args![me, f.limit],
            )
            .await?;
        Ok(QueueSnapshot {
            tasks: tasks
                .iter()
                .map(TaskRow::queue_entry)
                .collect::<Result<_, _>>()?,
            results: results
                .iter()
                .filter_map(|r| r.result().transpose())
                .collect::<Result<_, _>>()?,
        })
    }
}

pub fn not_found(id: Uuid) -> MailboxError {
    MailboxError::new(
        ErrorCode::NotFound,
        format!("no task {id} is visible to the caller"),
    )
}

#[derive(sqlx::FromRow)]
struct Count {
    n: i64,
}

#[derive(sqlx::FromRow)]
struct Oldest {
    at: Option<i64>,
}

impl Mailbox {
    /// Queue gauges for `/metrics`. Each reads one partial index: depths are index-only counts
    /// of one state's rows and the ages come from the first entry of an ordered index, so no
    /// query walks the whole table.
    pub async fn gauges(
        &self,
    ) -> Result<Vec<(&'static str, &'static str, String, f64)>, MailboxError> {
        let now = now_ms();
        let mut out = Vec::new();
        if let Some(batches) = &self.batches {
            let counts = batches.waiting();
            for (kind, waiting, _) in counts {
                out.push((
                    "a2a_pg_batch_waiting",
                    "PostgreSQL group commit: requests waiting for the next batch, by operation.",
                    format!("{{kind=\"{kind}\"}}"),
                    waiting as f64,
                ));
            }
            for (kind, _, parked) in counts {
                out.push((
                    "a2a_pg_parked_polls",
                    "PostgreSQL group commit: long-polls whose claim or drain waits parked for the batch that queues their task or stores their result (not counting those riding in the running batch).",
                    format!("{{kind=\"{kind}\"}}"),
                    parked as f64,
                ));
            }
        }
        for state in ["queued", "in_flight", "result_pending"] {
            let c: Option<Count> = self
                .db
                .fetch_optional(
                    "SELECT COUNT(*) AS n FROM tasks WHERE state = $1",
                    args![state],
                )
                .await?;
            out.push((
                "a2a_queue_depth",
                "Tasks per state.",
                format!("{{state=\"{state}\"}}"),
                c.map_or(0.0, |c| c.n as f64),
            ));
        }
        let q: Option<Oldest> = self
            .db
            .fetch_optional(
                "SELECT updated_at_ms AS at FROM tasks WHERE state = 'queued' ORDER BY /*FIFO_QUEUE*/ LIMIT 1",
                &[],
            )
            .await?;
        let l: Option<Oldest> = self
            .db
            .fetch_optional(
                "SELECT heartbeat_at_ms AS at FROM tasks WHERE state = 'in_flight' ORDER BY heartbeat_at_ms LIMIT 1",
                &[],
            )
            .await?;
        let age = |o: Option<Oldest>| {
            o.and_then(|o| o.at)
                .map_or(0.0, |at| (now - at).max(0) as f64 / 1000.0)
        };
        out.push((
            "a2a_oldest_queued_age_seconds",
            "Age of the task at the head of the queue (since it was queued or requeued).",
            String::new(),
            age(q),
        ));
        out.push((
            "a2a_oldest_lease_age_seconds",
            "Age of the oldest in-flight lease, measured from its last heartbeat.",
            String::new(),
            age(l),
        ));
        Ok(out)
    }
}
