//! Posting and draining results.

use std::time::Duration;

use serde_json::json;

use super::batch::{Drained, ResultArgs};
use super::rows::{result_from_columns, TaskRow, TASK_COLS};
use super::{audit, now_ms, IdemRequest, Mailbox, Parked, Polled, Reply, WaitFor, Wake};
use crate::args;
use crate::auth::{Caller, CapCheck, ScopeCtx};
use crate::domain::{A2ATaskResult, PostResult, TaskState};
use crate::error::{ErrorCode, MailboxError};
use crate::store::Tx;

/// [`Mailbox::store_result`]'s text on SQLite (a result element of `a2a_step_many`
/// on PostgreSQL): `$1` task id, `$2..$4` the result, `$5` the caller, `$6` now, `$7` the lease id
/// the task must still hold (or NULL). The `capability_check` audit row is built from the row's
/// sender, exactly as `capability_audit` writes it; `changes()` carries the outcome. Answers the
/// sender when the result was stored.
const STORE_RESULT_SQLITE: &str =
    "UPDATE tasks SET state = 'result_pending', result_status = $2, result_content = $3, \
           result_error = $4, result_by = $5, result_at_ms = $6, result_seq = /*NEXT_RESULT_SEQ*/, \
           updated_at_ms = $6 \
       WHERE id = $1 AND state = 'in_flight' AND leased_to = $5 AND cache_key IS NULL \
         AND ($7 IS NULL OR lease_id = $7); \
     INSERT INTO audit (timestamp_ms, issuer, kind, body) \
       SELECT $6, $5, 'capability_check', json_object( \
           'scope_id', 'a2a-respond:' || $1, \
           'required_actions', json_array('a2a.respond.' || sender), \
           'missing_actions', json_array(), \
           'passed', json('true')) \
       FROM tasks WHERE id = $1 AND changes() = 1; \
     SELECT sender FROM tasks WHERE id = $1 AND changes() = 1";

#[derive(sqlx::FromRow)]
struct Leased {
    sender: String,
    state: String,
    leased_to: Option<String>,
    lease_id: Option<String>,
    cache_key: Option<String>,
}

impl Mailbox {
    /// `POST /a2a/results`.
    pub async fn post_result(
        &self,
        caller: &Caller,
        idem: Option<&IdemRequest>,
        input: &PostResult,
    ) -> Result<Reply, MailboxError> {
        if idem.is_none() {
            if let Some(reply) = self.post_result_fast(caller, input).await? {
                self.woke(&reply.wake);
                return Ok(reply);
            }
        }
        let this = self.clone();
        let c = caller.clone();
        let input = input.clone();
        self.write(
            caller,
            idem,
            Box::new(move |tx| Box::pin(async move { this.post_result_in(tx, &c, &input).await })),
        )
        .await
    }

    /// The common case: the caller's own in-flight lease of a task without a cache key,
    /// answered with a capability that covers it, stored by ONE writing statement (PostgreSQL:
    /// one element of a result batch, see `batch`; SQLite: one call of the writer) together
    /// with its `capability_check` audit row. A caller whose grant admits answering any sender's task
    /// (`a2a.respond.*`) needs no read first; otherwise a read finds the sender for the check,
    /// and the write is guarded by the lease id it read (a requeue or another answer in between
    /// makes it change nothing). Anything else (`None`) goes through
    /// [`Mailbox::post_result_in`], which answers it exactly; nothing was written then.
    async fn post_result_fast(
        &self,
        caller: &Caller,
        input: &PostResult,
    ) -> Result<Option<Reply>, MailboxError> {
        let me = caller.sub.as_str();
        let given = input.lease_id.map(|l| l.to_string());
        if caller.holds_whole_family("a2a.respond.") {
            return self.store_result(caller, input, given).await;
        }
        let id = input.task_id.to_string();
        let row: Option<Leased> = self
            .db
            .fetch_optional(
                "SELECT sender, state, leased_to, lease_id, cache_key FROM tasks WHERE id = $1",
                args![id.as_str()],
            )
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let Some(current) = row.lease_id else {
            return Ok(None);
        };
        if row.state != TaskState::InFlight.as_str()
            || row.leased_to.as_deref() != Some(me)
            || row.cache_key.is_some()
            || given.as_ref().is_some_and(|g| *g != current)
        {
            return Ok(None);
        }
        let action = format!("a2a.respond.{}", row.sender);
        let ctx = ScopeCtx {
            peer: Some(&row.sender),
            task_id: Some(id),
            lease_id: given,
            duplicate_risk: None,
        };
        if caller.check(&action, &ctx) != CapCheck::Passed {
            return Ok(None);
        }
        self.store_result(caller, input, Some(current)).await
    }

    /// [`STORE_RESULT_SQLITE`] / a result element of `a2a_step_many`: stores the result if the task is still
    /// the caller's lease (under `lease_guard`, when given). Answers the reply, or `None` when
    /// nothing was stored.
    async fn store_result(
        &self,
        caller: &Caller,
        input: &PostResult,
        lease_guard: Option<String>,
    ) -> Result<Option<Reply>, MailboxError> {
        let result = input.result();
        let content = serde_json::to_string(&result.content).map_err(MailboxError::internal)?;
        let stored = match &self.batches {
            Some(batches) => {
                batches
                    .result(ResultArgs {
                        task_id: input.task_id.to_string(),
                        status: result.status.as_str().to_owned(),
                        content,
                        error_message: result.error_message.clone(),
                        caller: caller.sub.to_string(),
                        lease_guard,
                    })
                    .await?
            }
            None => {
                let stored: Vec<(String,)> = self
                    .write_sqlite(
                        STORE_RESULT_SQLITE,
                        args![
                            input.task_id.to_string(),
                            result.status.as_str(),
                            content.as_str(),
                            result.error_message.clone(),
                            caller.sub.as_str(),
                            now_ms(),
                            lease_guard
                        ],
                    )
                    .await?;
                stored.into_iter().next().map(|(sender,)| sender)
            }
        };
        let Some(sender) = stored else {
            return Ok(None);
        };
        let posted = json!({"kind": "a2a_result_posted", "task_id": input.task_id});
        Ok(Some(Reply::new(201, posted).waking(Wake::Sender(sender))))
    }

    async fn post_result_in(
        &self,
        tx: &mut Tx,
        caller: &Caller,
        input: &PostResult,
    ) -> Result<Reply, MailboxError> {
        let now = now_ms();
        let me = caller.sub.as_str();
        let id = input.task_id.to_string();
        let row: Option<TaskRow> = tx
            .fetch_optional(
                &format!("SELECT {TASK_COLS} FROM tasks WHERE id = $1 /*FOR_UPDATE*/"),
                args![id.as_str()],
            )
            .await?;
        // Unknown and invisible tasks are refused before any capability check, so task ids
        // cannot be probed for granted capabilities.
        let row = match row {
            Some(row) if row.visible_to(caller) => row,
            _ => {
                audit(
                    tx,
                    now,
                    me,
                    "a2a_result_rejected",
                    json!({"task_id": id, "reason": "unknown_task"}),
                )
                .await?;
                return Err(MailboxError::new(
                    ErrorCode::UnknownTask,
                    format!("no task {id} is visible to the caller"),
                ));
            }
        };
        let lease_id = input.lease_id.map(|l| l.to_string());
        let ctx = ScopeCtx {
            peer: Some(&row.sender),
            task_id: Some(id.clone()),
            lease_id: lease_id.clone(),
            duplicate_risk: None,
        };
        self.audited_check(
            tx,
            caller,
            &format!("a2a-respond:{id}"),
            &format!("a2a.respond.{}", row.sender),
            &ctx,
            now,
        )
        .await?;
        let result = input.result();
        let posted = json!({"kind": "a2a_result_posted", "task_id": input.task_id});
        match row.state() {
            TaskState::ResultPending | TaskState::Resolved => {
                // Answered already: only the one who answered (or an operator) may replay.
                if row.result_by.as_deref() != Some(me) && !caller.is_operator() {
                    return Err(not_lessee(&id));
                }
                if row.result()?.as_ref() == Some(&result) {
                    Ok(Reply::new(200, posted).replay())
                } else {
                    Err(MailboxError::new(
                        ErrorCode::ResultConflict,
                        format!("task {id} was already answered with a different result"),
                    ))
                }
            }
            TaskState::Queued => Err(MailboxError::new(
                ErrorCode::NotInFlight,
                format!("task {id} is queued, not leased: there is no lease to answer"),
            )),
            TaskState::InFlight => {
                if row.leased_to.as_deref() != Some(me) && !caller.is_operator() {
                    return Err(not_lessee(&id));
                }
                if let Some(given) = &lease_id {
                    row.check_lease(given)?;
                }
                let content =
                    serde_json::to_string(&result.content).map_err(MailboxError::internal)?;
                tx.execute(
                    "UPDATE tasks SET state = 'result_pending', result_status = $2, result_content = $3, \
                        result_error = $4, result_by = $5, result_at_ms = $6, result_seq = /*NEXT_RESULT_SEQ*/, \
                        updated_at_ms = $6 \
                     WHERE id = $1",
                    args![
                        id.as_str(),
                        result.status.as_str(),
                        content.as_str(),
                        result.error_message.clone(),
                        me,
                        now
                    ],
                )
                .await?;
                if let Some(cache_key) = &row.cache_key {
                    self.cache_result(tx, &row, cache_key, &result, &content, now)
                        .await?;
                }
                Ok(Reply::new(201, posted).waking(Wake::Sender(row.sender.clone())))
            }
        }
    }

    /// Fills the receiver-side result cache for an idempotent task answered while in flight.
    async fn cache_result(
        &self,
        tx: &mut Tx,
        row: &TaskRow,
        cache_key: &str,
        result: &A2ATaskResult,
        content: &str,
        now: i64,
    ) -> Result<(), MailboxError> {
        let task = row.task()?;
        let window = task
            .task_kind
            .as_ref()
            .and_then(|k| self.cfg.result_cache_window_by_kind.get(k))
            .copied()
            .unwrap_or(self.cfg.result_cache_window_ms);
        tx.execute(
            "INSERT INTO result_cache (cache_key, source_task_id, status, content, error_message, created_at_ms, expires_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (cache_key) DO UPDATE SET source_task_id = excluded.source_task_id, status = excluded.status, \
                content = excluded.content, error_message = excluded.error_message, \
                created_at_ms = excluded.created_at_ms, expires_at_ms = excluded.expires_at_ms \
             WHERE result_cache.expires_at_ms <= $6",
            args![
                cache_key,
                row.id.as_str(),
                result.status.as_str(),
                content,
                result.error_message.clone(),
                now,
                now.saturating_add(window)
            ],
        )
        .await?;
        Ok(())
    }

    /// `GET /a2a/results/next`: drains the oldest pending result of a task the caller sent.
    pub async fn drain_result(
        &self,
        caller: &Caller,
        wait: Duration,
    ) -> Result<Option<A2ATaskResult>, MailboxError> {
        self.long_poll(wait, (WaitFor::Result, caller.sub.as_str()), || {
            self.drain_once(caller)
        })
        .await
    }

    async fn drain_once(&self, caller: &Caller) -> Result<Polled<A2ATaskResult>, MailboxError> {
        let me = caller.sub.as_str();
        if let Some(batches) = &self.batches {
            // One element of a drain batch (see `batch`); if it finds nothing, it stays parked
            // for a later result.
            let (drained, ticket) = batches.drain(me.to_owned()).await;
            return Ok(match drained?.map(drained_result).transpose()? {
                Some(result) => Polled::Found(result),
                None => Polled::Parked(Parked {
                    ticket,
                    settle: |_, outcome| outcome.drained()?.map(drained_result).transpose(),
                }),
            });
        }
        // SQLite: a cheap read first (see `lease_once`).
        let any: Option<(String,)> = self
            .db
            .fetch_optional(
                "SELECT id FROM tasks WHERE state = 'result_pending' AND sender = $1 LIMIT 1",
                args![me],
            )
            .await?;
        if any.is_none() {
            return Ok(Polled::Empty);
        }
        // SQLite's drain (a drain element of `a2a_step_many` on PostgreSQL).
        const DRAIN: &str = "UPDATE tasks SET state = 'resolved', updated_at_ms = $2 WHERE id = ( \
                SELECT id FROM tasks WHERE state = 'result_pending' AND sender = $1 \
                ORDER BY result_seq LIMIT 1) \
             RETURNING id, result_status, result_content, result_error";
        let me = me.to_owned();
        let drained: Option<Drained> = self
            .transact(Box::new(move |tx| {
                Box::pin(async move {
                    let drained = tx
                        .fetch_optional(DRAIN, args![me.as_str(), now_ms()])
                        .await?;
                    Ok((drained, true))
                })
            }))
            .await?;
        Ok(match drained.map(drained_result).transpose()? {
            Some(result) => Polled::Found(result),
            None => Polled::Empty,
        })
    }

    /// `GET /a2a/results/recent`: pending results of the caller's tasks; never consumes.
    pub async fn recent_results(
        &self,
        caller: &Caller,
        limit: i64,
    ) -> Result<Vec<A2ATaskResult>, MailboxError> {
        let rows: Vec<TaskRow> = self
            .db
            .fetch_all(
                &format!(
                    "SELECT {TASK_COLS} FROM tasks WHERE state = 'result_pending' AND sender = $1 \
                     ORDER BY result_seq LIMIT $2"
                ),
                args![caller.sub.as_str(), limit],
            )
            .await?;
        rows.iter().filter_map(|r| r.result().transpose()).collect()
    }
}

fn not_lessee(id: &str) -> MailboxError {
    MailboxError::new(
        ErrorCode::NotLessee,
        format!("the caller does not hold the lease of task {id}"),
    )
}

/// A drained row as the result the sender receives.
fn drained_result(d: Drained) -> Result<A2ATaskResult, MailboxError> {
    result_from_columns(
        &d.id,
        d.result_status.as_deref().unwrap_or("error"),
        d.result_content.as_deref(),
        d.result_error,
    )
}
