//! Cancellation (docs/contract.md#cancellation): the sender (or an operator) takes back a queued or in-flight task. The
//! gates of a cancel, in order, and what each state answers.

use serde_json::json;
use uuid::Uuid;

use super::audit::{actions_audit, audit, kind, EndedLease, CAPABILITY_CHECK};
use super::{check_lease, not_found, rule, visible_to, Cx, Done, Mailbox, Wake};
use crate::auth::Caller;
use crate::domain::answers::TaskCanceled;
use crate::domain::TaskState;
use crate::error::{ErrorCode, MailboxError};
use crate::mailbox::Author;
use crate::store::TaskRow;

impl Mailbox {
    /// `POST /a2a/tasks/{id}/cancel`.
    pub async fn cancel(
        &self,
        by: Author<'_>,
        task_id: Uuid,
        reason: Option<String>,
    ) -> Result<Done<TaskCanceled>, MailboxError> {
        self.cancel_fenced(by, task_id, None, reason).await
    }

    /// A cancel of the lease `lease_guard` when one is given (the dashboard's, which acts on the
    /// leases an operator saw): after the capability check, a task that is no longer in flight
    /// under that lease answers 409 (`not_in_flight`, `lease_mismatch`) and is left alone.
    pub async fn cancel_fenced(
        &self,
        by: Author<'_>,
        task_id: Uuid,
        lease_guard: Option<Uuid>,
        reason: Option<String>,
    ) -> Result<Done<TaskCanceled>, MailboxError> {
        // The API checked the body already; this holds for every other caller (the dashboard).
        if let Some(reason) = &reason {
            crate::domain::stated("reason", reason)?;
        }
        self.write(
            by,
            rule!(|this, cx| this.cancel_in(cx, task_id, lease_guard, reason.as_deref())),
        )
        .await
    }

    async fn cancel_in(
        &self,
        cx: Cx<'_>,
        task_id: Uuid,
        lease_guard: Option<Uuid>,
        reason: Option<&str>,
    ) -> Result<Done<TaskCanceled>, MailboxError> {
        let Cx { tx, caller, now } = cx;
        let me = caller.sub.as_str();
        let id = task_id.to_string();
        // 1. An invisible task answers like a missing one.
        let row = match tx.task_for_update(&id).await? {
            Some(row) if visible_to(&row, caller) => row,
            _ => return Err(not_found(task_id)),
        };
        // 2. Its sender may cancel it; anyone else needs `a2a.operator`. Either way the check is
        // audited: the sender's needs no action.
        let scope_id = format!("a2a-cancel:{id}");
        let (required, passed): (&[&str], bool) = if row.sender == me {
            (&[], true)
        } else {
            (&["a2a.operator"], caller.is_operator())
        };
        let body = actions_audit(&scope_id, required, passed);
        audit(tx, now, me, CAPABILITY_CHECK, body).await?;
        if !passed {
            return Err(MailboxError::new(
                ErrorCode::SenderMismatch,
                format!(
                    "only the sender {} or an operator (a2a.operator) may cancel task {id}",
                    row.sender
                ),
            ));
        }
        // 3. The lease it must still be in flight under, when one is named.
        if let Some(guard) = lease_guard {
            if row.state() != TaskState::InFlight {
                return Err(MailboxError::new(
                    ErrorCode::NotInFlight,
                    format!("task {id} is {}, not in flight", row.state),
                ));
            }
            check_lease(&row, &guard.to_string())?;
        }
        // 4. What the task's state allows.
        match row.state() {
            TaskState::Queued | TaskState::InFlight => {
                let ended = EndedLease::of(&row);
                if !tx.cancel(&id, me, reason, now).await? {
                    return Err(MailboxError::internal(format!(
                        "task {id} changed under its row lock"
                    )));
                }
                let row = tx
                    .task_for_update(&id)
                    .await?
                    .ok_or_else(|| MailboxError::internal("a canceled task vanished"))?;
                let canceled = canceled(&row, task_id)?;
                let c = &canceled.cancellation;
                audit(
                    tx,
                    now,
                    me,
                    kind::TASK_CANCELED,
                    json!({
                        "task_id": id,
                        "previous_state": c.previous_state,
                        "lease_id": c.lease_id,
                        "reason": c.reason,
                        "ended": ended,
                    }),
                )
                .await?;
                // Whoever waits for the task to settle.
                Ok(Done::changed(canceled).waking(Wake::Followers(row.id.clone())))
            }
            TaskState::Canceled => Ok(Done::replay(canceled(&row, task_id)?)),
            TaskState::ResultPending | TaskState::Resolved => Err(MailboxError::new(
                ErrorCode::NotCancelable,
                format!(
                    "task {id} is already answered ({}): there is nothing to cancel",
                    row.state
                ),
            )),
        }
    }
}

fn canceled(row: &TaskRow, task_id: Uuid) -> Result<TaskCanceled, MailboxError> {
    let cancellation = row
        .cancellation()?
        .ok_or_else(|| MailboxError::internal(format!("task {task_id} has no cancellation")))?;
    Ok(TaskCanceled::new(task_id, cancellation))
}

/// 409 `task_canceled`: what the agent whose lease a cancellation ended hears on its next
/// heartbeat or result, right after the visibility check (docs/contract.md#cancellation), so that it stops working.
pub(crate) fn task_canceled(row: &TaskRow) -> MailboxError {
    MailboxError::new(
        ErrorCode::TaskCanceled,
        format!(
            "task {} was canceled by {}; stop working on it",
            row.id,
            row.canceled_by.as_deref().unwrap_or("its sender")
        ),
    )
}

/// The cancellation gate of a lessee's call: `task_canceled` when the caller held the lease
/// that a cancellation ended.
pub(crate) fn refuse_if_canceled_for(row: &TaskRow, caller: &Caller) -> Result<(), MailboxError> {
    if row.state() == TaskState::Canceled && row.leased_to.as_deref() == Some(caller.sub.as_str()) {
        return Err(task_canceled(row));
    }
    Ok(())
}
