//! Posting results and draining them (docs/contract.md#endpoints,
//! docs/contract.md#the-result-cache): the gates of a result, in order.

use std::time::Duration;

use super::audit::{audit, audited_check, kind, respond_audit_halves};
use super::cancel::{refuse_if_canceled_for, task_canceled};
use super::longpoll::{PollHold, Polled};
use super::takes::Attempt;
use super::{check_lease, rule, visible_to, Cx, Done, Mailbox, Rule, WaitFor, Wake};
use crate::auth::{Caller, CapCheck, ScopeCtx};
use crate::domain::answers::{ResultOpt, ResultOptKind, ResultPosted, Results, ResultsKind};
use crate::domain::free_form::content_within;
use crate::domain::{A2ATaskResult, PostResult, ResultStatus, TaskState};
use crate::error::{ErrorCode, MailboxError};
use crate::mailbox::Author;
use crate::store::{StoredResult, TaskRow, Tx};

impl Mailbox {
    /// `POST /a2a/results`.
    pub(super) async fn post_result_untraced(
        &self,
        by: Author<'_>,
        input: &PostResult,
    ) -> Result<Done<ResultPosted>, MailboxError> {
        content_within(&input.content, self.cfg.max_json_depth)?;
        let fast = self.try_result_one(by.caller, input);
        // Built only when the fast path did not answer.
        let rule = || -> Rule<ResultPosted> {
            let input = input.clone();
            rule!(|this, cx| this.post_result_in(cx, &input))
        };
        self.write_fast_first(by, fast, rule).await
    }

    /// The common case: the caller's own in-flight lease of a task without a cache key, answered
    /// with a capability that covers it, stored by the store's fast path together with its
    /// `capability_check` audit row. A caller whose grant admits answering any sender's task
    /// (`a2a.respond.*`) needs no read first; otherwise a read finds the sender for the check,
    /// and the write is guarded by the lease id it read (a requeue or another answer in between
    /// makes it change nothing). Anything else (`None`) goes through
    /// [`Mailbox::post_result_in`], which answers it exactly; nothing was written then.
    async fn try_result_one(
        &self,
        caller: &Caller,
        input: &PostResult,
    ) -> Result<Option<Done<ResultPosted>>, MailboxError> {
        let me = caller.sub.as_str();
        let given = input.lease_id.map(|l| l.to_string());
        if input.trace.is_some() {
            // A traced result takes the exact path, which keeps its trace context with it.
            return Ok(None);
        }
        if caller.holds_whole_family("a2a.respond.") {
            return self.store_result_one(caller, input, given).await;
        }
        let id = input.task_id.to_string();
        let Some(row) = self.store.lease_view(&id).await? else {
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
        self.store_result_one(caller, input, Some(current)).await
    }

    /// Stores the result if the task is still the caller's lease (under `lease_guard`, when
    /// given): `None` when nothing was stored.
    async fn store_result_one(
        &self,
        caller: &Caller,
        input: &PostResult,
        lease_guard: Option<String>,
    ) -> Result<Option<Done<ResultPosted>>, MailboxError> {
        let result = input.result();
        let content = serde_json::to_string(&result.content).map_err(MailboxError::internal)?;
        let id = input.task_id.to_string();
        let stored = self
            .store
            .store_result_one(
                &id,
                &StoredResult {
                    status: result.status.as_str(),
                    content: &content,
                    error_message: result.error_message.as_deref(),
                    trace: None,
                },
                caller.sub.as_str(),
                lease_guard.as_deref(),
                respond_audit_halves(&id),
            )
            .await?;
        if stored.is_some() {
            self.metrics
                .result_posted(result.status == ResultStatus::Error);
        }
        Ok(stored.map(|stored| {
            // A waiting drain took the result in the same commit: only the task's followers
            // are left to wake.
            let wake = if stored.handed {
                Wake::Followers(id)
            } else {
                Wake::result(&stored.made, &id)
            };
            Done::created(ResultPosted::new(input.task_id)).waking(wake)
        }))
    }

    async fn post_result_in(
        &self,
        cx: Cx<'_>,
        input: &PostResult,
    ) -> Result<Done<ResultPosted>, MailboxError> {
        let row = cx.tx.task_for_update(&input.task_id.to_string()).await?;
        self.judge_result(cx, input, row).await
    }

    /// The gates of a result, in order, and its storing, over its task's row as the
    /// transaction read and locked it (`None`: no such task).
    pub(super) async fn judge_result(
        &self,
        cx: Cx<'_>,
        input: &PostResult,
        row: Option<TaskRow>,
    ) -> Result<Done<ResultPosted>, MailboxError> {
        let Cx { tx, caller, now } = cx;
        let me = caller.sub.as_str();
        let id = input.task_id.to_string();
        // 1. Unknown and invisible tasks are refused before any capability check, so task ids
        // cannot be probed for granted capabilities.
        let row = match row {
            Some(row) if visible_to(&row, caller) => row,
            _ => {
                audit(
                    tx,
                    now,
                    me,
                    kind::RESULT_REJECTED,
                    serde_json::json!({"task_id": id, "reason": "unknown_task"}),
                )
                .await?;
                return Err(MailboxError::new(
                    ErrorCode::UnknownTask,
                    format!("no task {id} is visible to the caller"),
                ));
            }
        };
        // 2. The agent whose lease a cancellation ended hears it first.
        refuse_if_canceled_for(&row, caller)?;
        // 3. The capability to answer the sender.
        let lease_id = input.lease_id.map(|l| l.to_string());
        let ctx = ScopeCtx {
            peer: Some(&row.sender),
            task_id: Some(id.clone()),
            lease_id: lease_id.clone(),
            duplicate_risk: None,
        };
        audited_check(
            tx,
            caller,
            &format!("a2a-respond:{id}"),
            &format!("a2a.respond.{}", row.sender),
            &ctx,
            now,
        )
        .await?;
        let result = input.result();
        let posted = ResultPosted::new(input.task_id);
        match row.state() {
            // 4a. Answered already: only the one who answered (or an operator) may replay.
            TaskState::ResultPending | TaskState::Resolved => {
                if row.result_by.as_deref() != Some(me) && !caller.is_operator() {
                    return Err(not_lessee(&id));
                }
                // The trace context is no part of the result's identity.
                let untraced = A2ATaskResult {
                    trace: None,
                    ..result.clone()
                };
                if row.result()?.as_ref() == Some(&untraced) {
                    Ok(Done::replay(posted))
                } else {
                    Err(MailboxError::new(
                        ErrorCode::ResultConflict,
                        format!("task {id} was already answered with a different result"),
                    ))
                }
            }
            TaskState::Canceled => Err(task_canceled(&row)),
            TaskState::Queued => Err(MailboxError::new(
                ErrorCode::NotInFlight,
                format!("task {id} is queued, not leased: there is no lease to answer"),
            )),
            // 4b. In flight: the lessee (or an operator), under the current lease.
            TaskState::InFlight => {
                if row.leased_to.as_deref() != Some(me) && !caller.is_operator() {
                    return Err(not_lessee(&id));
                }
                if let Some(given) = &lease_id {
                    check_lease(&row, given)?;
                }
                let content =
                    serde_json::to_string(&result.content).map_err(MailboxError::internal)?;
                let trace = result.trace.as_ref().map(serde_json::to_string).transpose();
                let trace = trace.map_err(MailboxError::internal)?;
                let stored = StoredResult {
                    status: result.status.as_str(),
                    content: &content,
                    error_message: result.error_message.as_deref(),
                    trace: trace.as_deref(),
                };
                tx.store_result(&id, &stored, me, now).await?;
                if let Some(cache_key) = &row.cache_key {
                    self.cache_result(tx, &row, cache_key, &stored, now).await?;
                }
                self.metrics
                    .result_posted(result.status == ResultStatus::Error);
                Ok(Done::created(posted).waking(Wake::result(&row.sender, &row.id)))
            }
        }
    }

    /// Fills the receiver-side result cache for an idempotent task answered while in flight.
    async fn cache_result(
        &self,
        tx: &mut Tx,
        row: &TaskRow,
        cache_key: &str,
        result: &StoredResult<'_>,
        now: i64,
    ) -> Result<(), MailboxError> {
        let task = row.task()?;
        let window = task
            .task_kind
            .as_ref()
            .and_then(|k| self.cfg.result_cache_window_by_kind.get(k))
            .copied()
            .unwrap_or(self.cfg.result_cache_window_ms);
        tx.cache_put(cache_key, &row.id, result, now, now.saturating_add(window))
            .await
    }

    /// `GET /a2a/results/next`: drains the oldest pending result of a task the caller sent.
    /// With an attempt id, a retry answers the result the first drain took.
    pub(super) async fn drain_result_untraced(
        &self,
        caller: &Caller,
        wait: Duration,
        attempt: Option<Attempt>,
    ) -> Result<ResultOpt, MailboxError> {
        let result = match attempt {
            Some(a) => self
                .drain_batch_untraced(caller, 1, wait, Some(a))
                .await?
                .results
                .pop(),
            None => {
                self.long_poll(wait, (WaitFor::Result, caller.sub.as_str(), caller), || {
                    self.drain_once(caller)
                })
                .await?
            }
        };
        Ok(ResultOpt {
            kind: ResultOptKind::Tag,
            result,
        })
    }

    async fn drain_once(&self, caller: &Caller) -> Result<Polled<A2ATaskResult>, MailboxError> {
        let (drained, hold) = self.store.drain_or_hold(caller.sub.as_str()).await;
        if let Some(d) = drained? {
            return Ok(Polled::Found(d.result()?));
        }
        Ok(match hold {
            Some(hold) => Polled::Waiting(PollHold {
                hold,
                settle: |_, outcome| outcome.drained()?.map(|d| d.result()).transpose(),
            }),
            None => Polled::Empty,
        })
    }

    /// `GET /a2a/results/recent`: pending results of the caller's tasks; never consumes.
    pub async fn recent_results(
        &self,
        caller: &Caller,
        limit: i64,
    ) -> Result<Results, MailboxError> {
        let rows = self
            .store
            .pending_of_sender(caller.sub.as_str(), limit)
            .await?;
        Ok(Results {
            kind: ResultsKind::Tag,
            results: rows
                .iter()
                .filter_map(|r| r.result().transpose())
                .collect::<Result<_, _>>()?,
        })
    }
}

fn not_lessee(id: &str) -> MailboxError {
    MailboxError::new(
        ErrorCode::NotLessee,
        format!("the caller does not hold the lease of task {id}"),
    )
}
