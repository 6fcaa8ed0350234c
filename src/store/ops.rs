//! The named operations a mailbox rule runs inside one write transaction. Each is one statement
//! (or a few) of the engine's own text; none decides anything: the order of the checks and what
//! they answer are the mailbox's (`src/mailbox/`).

use std::collections::HashSet;

use super::new_task::NewTask;
use super::records::{CacheHit, Compacted, KeyRecord, QueueHead, TaskOrigin, TaskRow};
use super::runner::{args, DeferredResult, Tx, Val};
use super::statements as sql;
use crate::error::MailboxError;

type Result<T> = std::result::Result<T, MailboxError>;

/// A result to store, as stored.
pub struct StoredResult<'a> {
    pub status: &'a str,
    /// The content as JSON text.
    pub content: &'a str,
    pub error_message: Option<&'a str>,
    /// The result's trace context, as JSON text.
    pub trace: Option<&'a str>,
}

impl Tx {
    /// The task, locked against other writers until this transaction ends (PostgreSQL).
    pub async fn task_for_update(&mut self, id: &str) -> Result<Option<TaskRow>> {
        let stmt = self.sql().task_for_update;
        Ok(self.fetch_optional(stmt, args![id]).await?)
    }

    /// The sender, body and replay source of an existing task id.
    pub async fn task_origin(&mut self, id: &str) -> Result<Option<TaskOrigin>> {
        Ok(self.fetch_optional(sql::TASK_ORIGIN, args![id]).await?)
    }

    /// Inserts a queued task unless its id exists: whether it was inserted.
    pub async fn insert_task(&mut self, t: &NewTask, now: i64) -> Result<bool> {
        let stmt = self.sql().insert_task;
        let mut a = t.columns();
        a.extend_from_slice(args![t.cache_key.as_deref(), now]);
        let n = self.execute(stmt, &a).await?;
        Ok(n == 1)
    }

    /// Inserts queued tasks in one statement, in order (their FIFO positions follow the slice),
    /// each unless its id exists: the ids inserted.
    pub async fn insert_tasks(&mut self, tasks: &[NewTask], now: i64) -> Result<HashSet<String>> {
        if tasks.is_empty() {
            return Ok(HashSet::new());
        }
        let sql = self.sql();
        let mut a = if sql.insert_tasks_by_column {
            NewTask::by_column(tasks.iter())
                .into_iter()
                .map(Val::Column)
                .collect()
        } else {
            let rows = serde_json::to_string(tasks).map_err(MailboxError::internal)?;
            args![rows].to_vec()
        };
        a.push(Val::Int(now));
        let inserted: Vec<(String,)> = self.fetch_all(sql.insert_tasks, &a).await?;
        Ok(inserted.into_iter().map(|(id,)| id).collect())
    }

    /// Inserts a task already answered with a copy of a cached result, unless its id exists.
    pub async fn insert_answered(&mut self, t: &NewTask, hit: &CacheHit, now: i64) -> Result<bool> {
        let stmt = self.sql().insert_answered;
        let mut a = t.columns();
        a.extend_from_slice(args![
            t.cache_key.as_deref(),
            hit.source_task_id.as_str(),
            hit.status.as_str(),
            hit.content.as_str(),
            hit.error_message.as_deref(),
            now
        ]);
        let n = self.execute(stmt, &a).await?;
        Ok(n == 1)
    }

    /// The live result-cache entry of `key`.
    pub async fn cache_lookup(&mut self, key: &str, now: i64) -> Result<Option<CacheHit>> {
        Ok(self
            .fetch_optional(sql::CACHE_LOOKUP, args![key, now])
            .await?)
    }

    /// Caches a result under `key` until `expires_at_ms` (an entry still live is kept).
    pub async fn cache_put(
        &mut self,
        key: &str,
        source_task_id: &str,
        r: &StoredResult<'_>,
        now: i64,
        expires_at_ms: i64,
    ) -> Result<()> {
        self.execute(
            sql::CACHE_PUT,
            args![
                key,
                source_task_id,
                r.status,
                r.content,
                r.error_message,
                now,
                expires_at_ms
            ],
        )
        .await?;
        Ok(())
    }

    /// Leases the head of the recipient's queue when it is live (not past its deadline).
    pub async fn claim_head(
        &mut self,
        recipient: &str,
        lease_id: &str,
        lessee: &str,
        now: i64,
    ) -> Result<Option<TaskRow>> {
        let stmt = self.sql().claim_head;
        Ok(self
            .fetch_optional(stmt, args![recipient, lease_id, lessee, now])
            .await?)
    }

    /// The head of the recipient's queue that no other transaction holds.
    pub async fn queue_head(&mut self, recipient: &str) -> Result<Option<QueueHead>> {
        let stmt = self.sql().queue_head;
        Ok(self.fetch_optional(stmt, args![recipient]).await?)
    }

    /// Resolves a queued task whose deadline passed with the error result `deadline exceeded`.
    pub async fn expire(&mut self, id: &str, now: i64) -> Result<()> {
        let stmt = self.sql().expire;
        self.execute(stmt, args![id, now]).await?;
        Ok(())
    }

    /// Leases task `id`.
    pub async fn lease_task(
        &mut self,
        id: &str,
        lease_id: &str,
        lessee: &str,
        now: i64,
    ) -> Result<TaskRow> {
        self.fetch_optional(sql::LEASE_TASK, args![id, lease_id, lessee, now])
            .await?
            .ok_or_else(|| MailboxError::internal("claimed row vanished"))
    }

    /// Stores the result of task `id`, answered by `by`.
    pub async fn store_result(
        &mut self,
        id: &str,
        r: &StoredResult<'_>,
        by: &str,
        now: i64,
    ) -> Result<()> {
        if let Some(held) = self.deferred.as_mut() {
            held.results.push(DeferredResult {
                id: id.to_owned(),
                status: r.status.to_owned(),
                content: r.content.to_owned(),
                error_message: r.error_message.map(str::to_owned),
                trace: r.trace.map(str::to_owned),
                by: by.to_owned(),
                now,
            });
            return Ok(());
        }
        let stmt = self.sql().store_result;
        self.execute(
            stmt,
            args![id, r.status, r.content, r.error_message, by, now],
        )
        .await?;
        if let Some(trace) = r.trace {
            self.set_result_trace(id, trace).await?;
        }
        Ok(())
    }

    /// Keeps a stored result's trace context with it. Only the exact path stores traced results
    /// (`Mailbox::try_result_one` leaves them to it), so no fast path writes this column.
    pub(super) async fn set_result_trace(&mut self, id: &str, trace: &str) -> Result<()> {
        self.execute(sql::SET_RESULT_TRACE, args![id, trace])
            .await?;
        Ok(())
    }

    /// Ends the lease of task `id` with an error result for its sender.
    pub async fn force_error(&mut self, id: &str, message: &str, now: i64) -> Result<()> {
        let stmt = self.sql().force_error;
        self.execute(stmt, args![id, message, now]).await?;
        Ok(())
    }

    /// Returns the in-flight task `row` to the END of its queue, keeping its attempt counter:
    /// whether it did. Fenced by what `row` read: the task is requeued only if it is still in
    /// flight under the same lease with the same heartbeat.
    pub async fn requeue(&mut self, row: &TaskRow, now: i64) -> Result<bool> {
        let stmt = self.sql().requeue;
        let fence = args![&row.id, now, row.lease_id.clone(), row.heartbeat_at_ms];
        Ok(self.execute(stmt, fence).await? == 1)
    }

    /// Refreshes the heartbeat of task `id`'s lease.
    pub async fn heartbeat(&mut self, id: &str, now: i64) -> Result<TaskRow> {
        self.fetch_optional(sql::HEARTBEAT, args![id, now])
            .await?
            .ok_or_else(|| MailboxError::internal("heartbeat row vanished"))
    }

    /// The secret named `name`: `candidate` if none was written before, else the one that was.
    pub async fn secret(&mut self, name: &str, candidate: &str) -> Result<String> {
        self.execute(sql::INSERT_SECRET, args![name, candidate])
            .await?;
        let (value,): (String,) = self
            .fetch_optional(sql::SECRET, args![name])
            .await?
            .ok_or_else(|| MailboxError::internal("a secret written vanished"))?;
        Ok(value)
    }

    /// Takes the database's retry-scan lock for this transaction: `false` when another scan
    /// holds it.
    pub async fn try_scan_lock(&mut self) -> Result<bool> {
        let Some(stmt) = self.sql().scan_lock else {
            return Ok(true);
        };
        let (locked,): (bool,) = self
            .fetch_optional(stmt, &[])
            .await?
            .ok_or_else(|| MailboxError::internal("the scan lock answered nothing"))?;
        Ok(locked)
    }

    /// Claims the scheduler's tick for a tick that started at `started`: `false` when another
    /// tick's scan runs or the previous tick started less than `spacing_ms` before.
    pub async fn claim_tick(&mut self, started: i64, spacing_ms: i64) -> Result<bool> {
        let stmt = self.sql().claim_tick;
        Ok(self.execute(stmt, args![started, spacing_ms]).await? == 1)
    }

    /// Marks the claimed tick's scan finished.
    pub async fn finish_tick(&mut self, now: i64) -> Result<()> {
        self.execute(sql::FINISH_TICK, args![now]).await?;
        Ok(())
    }

    /// In-flight tasks, oldest heartbeat first.
    pub async fn in_flight_by_age(&mut self, limit: i64) -> Result<Vec<TaskRow>> {
        Ok(self.fetch_all(sql::IN_FLIGHT_BY_AGE, args![limit]).await?)
    }

    /// Deletes resolved and canceled tasks, what expired, and the audit rows written before
    /// `audit_kept_from`.
    pub async fn compact(&mut self, now: i64, audit_kept_from: i64) -> Result<Compacted> {
        Ok(Compacted {
            resolved_tasks: self.execute(sql::DELETE_RESOLVED, &[]).await?,
            result_cache_entries: self.execute(sql::DELETE_EXPIRED_CACHE, args![now]).await?,
            idempotency_keys: self.execute(sql::DELETE_EXPIRED_KEYS, args![now]).await?,
            audit_rows: self
                .execute(sql::DELETE_OLD_AUDIT, args![audit_kept_from])
                .await?,
        })
    }

    /// Cancels a queued or in-flight task (its lease columns keep the ended lease): whether it
    /// was canceled.
    pub async fn cancel(
        &mut self,
        id: &str,
        by: &str,
        reason: Option<&str>,
        now: i64,
    ) -> Result<bool> {
        Ok(self
            .execute(sql::CANCEL, args![id, by, reason, now])
            .await?
            == 1)
    }

    /// Delivers the pending result of each task `ids` names that `sender` sent, as a drain does:
    /// how many were delivered (a task drained meanwhile, or not pending, is left alone).
    pub async fn deliver(&mut self, ids: &[String], sender: &str, now: i64) -> Result<u64> {
        let mut delivered = 0;
        for id in ids {
            let one = self
                .execute(sql::DELIVER, args![id.as_str(), sender, now])
                .await?;
            delivered = one.saturating_add(delivered);
        }
        Ok(delivered)
    }

    /// Marks where an all-or-nothing group of writes starts (a savepoint).
    pub async fn begin_group(&mut self) -> Result<()> {
        self.execute(sql::SAVEPOINT, &[]).await?;
        Ok(())
    }

    /// Undoes every write since [`Tx::begin_group`]; the group stays open.
    pub async fn undo_group(&mut self) -> Result<()> {
        self.execute(sql::ROLLBACK_TO_SAVEPOINT, &[]).await?;
        Ok(())
    }

    /// Keeps the group's writes (they commit with the transaction).
    pub async fn end_group(&mut self) -> Result<()> {
        self.execute(sql::RELEASE_SAVEPOINT, &[]).await?;
        Ok(())
    }

    /// Reserves `(caller, key)` as pending until `pending_until`: `false` when a live record
    /// exists (see [`Tx::key_record`]).
    pub async fn reserve_key(
        &mut self,
        caller: &str,
        key: &str,
        fingerprint: &str,
        now: i64,
        pending_until: i64,
        expires_at_ms: i64,
    ) -> Result<bool> {
        let n = self
            .execute(
                sql::RESERVE_KEY,
                args![caller, key, fingerprint, now, pending_until, expires_at_ms],
            )
            .await?;
        Ok(n == 1)
    }

    pub async fn key_record(&mut self, caller: &str, key: &str) -> Result<Option<KeyRecord>> {
        Ok(self
            .fetch_optional(sql::KEY_RECORD, args![caller, key])
            .await?)
    }

    /// Completes a reserved key with the outcome to replay.
    pub async fn complete_key(&mut self, caller: &str, key: &str, response: &str) -> Result<()> {
        self.execute(sql::COMPLETE_KEY, args![caller, key, response])
            .await?;
        Ok(())
    }
}
