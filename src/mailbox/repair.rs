//! Explicit lease repair (docs/contract.md#repair) and heartbeats. A repair's checks, in order: the capability of its
//! action, the task visible, in flight, the capability's scope, the reason (and message), the
//! lease guard, the duplicate-risk posture; a refusal changes nothing but keeps the check's row.

use uuid::Uuid;

use super::audit::{record_check, record_refusal_unseen, EndedLease, RepairApplied};
use super::cancel::task_canceled;
use super::{check_lease, not_found, rule, visible_to, Cx, Done, Mailbox, Wake};
use crate::auth::{cap_error, CapCheck, ScopeCtx};
use crate::domain::{declared_idempotent, stated, A2ATaskResult, Lease, ResultStatus, TaskState};
use crate::error::{ErrorCode, MailboxError};
use crate::mailbox::Author;
use crate::store::TaskRow;

pub use a2a_mailbox_types::{
    DuplicateRisk, RepairAction, RepairCommand, RepairOutcome, RepairRequest, RepairedState,
};

impl Mailbox {
    /// `POST /a2a/repair`.
    pub async fn repair(
        &self,
        by: Author<'_>,
        req: &RepairRequest,
    ) -> Result<Done<RepairOutcome>, MailboxError> {
        let req = req.clone();
        self.write(by, rule!(|this, cx| this.repair_in(cx, &req)))
            .await
    }

    async fn repair_in(
        &self,
        cx: Cx<'_>,
        req: &RepairRequest,
    ) -> Result<Done<RepairOutcome>, MailboxError> {
        let Cx { tx, caller, now } = cx;
        let (action, lease_guard, duplicate_risk) = match &req.command {
            RepairCommand::Requeue {
                lease_id,
                duplicate_risk,
            } => ("requeue", *lease_id, Some(duplicate_risk.as_str())),
            RepairCommand::ForceError { lease_id, .. } => ("force_error", *lease_id, None),
        };
        let required = format!("a2a.repair.{action}");
        let id = req.task_id.to_string();
        // Every answer but a 404 records one capability check (docs/contract.md#audit).
        let scope_id = format!("a2a-repair:{id}");
        // 1. The action itself, whatever the task (403 even for unknown ids).
        if caller.check(&required, &ScopeCtx::default()) == CapCheck::Missing {
            // Made before the task is looked at: filed under no task (docs/contract.md#audit).
            record_refusal_unseen(tx, caller, &scope_id, &required, now).await?;
            cap_error(CapCheck::Missing, &required)?;
        }
        // 2. Visible, 3. in flight.
        let row = match tx.task_for_update(&id).await? {
            Some(row) if visible_to(&row, caller) => row,
            _ => return Err(not_found(req.task_id)),
        };
        // The check with the task's scope is recorded now; a scope mismatch answers at 4.
        let ctx = ScopeCtx {
            peer: Some(&row.recipient),
            task_id: Some(id.clone()),
            lease_id: lease_guard.map(|l| l.to_string()),
            duplicate_risk,
        };
        let check = record_check(
            tx,
            caller,
            &scope_id,
            &required,
            caller.check(&required, &ctx),
            now,
        )
        .await?;
        if row.state() != TaskState::InFlight {
            return Err(MailboxError::new(
                ErrorCode::NotInFlight,
                format!(
                    "task {id} is {}, not in flight: only leased tasks can be repaired",
                    row.state
                ),
            ));
        }
        // 4. Scope.
        cap_error(check, &required)?;
        // 5. A reason (and a message) stated: not blank, at most 1,024 characters.
        stated("reason", &req.reason)?;
        if let RepairCommand::ForceError { message, .. } = &req.command {
            stated("message", message)?;
        }
        // 6. The lease guard.
        if let Some(guard) = lease_guard {
            check_lease(&row, &guard.to_string())?;
        }
        // 7. The posture: only a task its sender declared idempotent (with a key) may be
        // requeued as idempotent; a person cannot declare safe what its sender did not.
        if duplicate_risk == Some(DuplicateRisk::Idempotent.as_str())
            && !declared_idempotent(&row.task()?)
        {
            return Err(MailboxError::new(
                ErrorCode::DuplicateRiskMismatch,
                format!(
                    "task {id} did not declare itself idempotent with a key, so it cannot be \
                     requeued as duplicate_risk idempotent: state operator_accepted if you \
                     accept that it may run twice"
                ),
            ));
        }
        let attempt = row.attempt as u32;
        let ended = EndedLease::of(&row);
        let wake = match &req.command {
            RepairCommand::Requeue { .. } => Wake::requeued(&row.recipient, &row.id),
            RepairCommand::ForceError { .. } => Wake::result(&row.sender, &row.id),
        };
        let outcome = match &req.command {
            RepairCommand::Requeue { .. } => {
                tx.requeue(&row, now).await?;
                self.metrics.inc(&self.metrics.requeues_manual);
                RepairOutcome {
                    task_id: req.task_id,
                    action: RepairAction::Requeued,
                    state: RepairedState::Queued,
                    attempt,
                    result: None,
                }
            }
            RepairCommand::ForceError { message, .. } => {
                tx.force_error(&id, message, now).await?;
                self.metrics.inc(&self.metrics.forced_errors);
                RepairOutcome {
                    task_id: req.task_id,
                    action: RepairAction::ForcedError,
                    state: RepairedState::ResultPending,
                    attempt,
                    result: Some(A2ATaskResult {
                        task_id: req.task_id,
                        status: ResultStatus::Error,
                        content: vec![],
                        error_message: Some(message.clone()),
                        trace: None,
                    }),
                }
            }
        };
        RepairApplied {
            task_id: &id,
            action,
            reason: &req.reason,
            lease_id: lease_guard.map(|l| l.to_string()),
            duplicate_risk,
            attempt,
            ended,
        }
        .record(tx, now, caller.sub.as_str())
        .await?;
        Ok(Done::changed(outcome).waking(wake))
    }

    /// `POST /a2a/tasks/{id}/heartbeat`: the lessee refreshes its lease.
    pub async fn heartbeat(
        &self,
        by: Author<'_>,
        task_id: Uuid,
        lease_id: Uuid,
    ) -> Result<Done<Lease>, MailboxError> {
        self.write(
            by,
            rule!(|this, cx| this.heartbeat_in(cx, task_id, lease_id)),
        )
        .await
    }

    async fn heartbeat_in(
        &self,
        cx: Cx<'_>,
        task_id: Uuid,
        lease_id: Uuid,
    ) -> Result<Done<Lease>, MailboxError> {
        let row = cx.tx.task_for_update(&task_id.to_string()).await?;
        self.judge_heartbeat(cx, task_id, lease_id, row).await
    }

    /// The gates of a heartbeat, in order, and its refresh, over its task's row as the
    /// transaction read and locked it (`None`: no such task).
    pub(super) async fn judge_heartbeat(
        &self,
        cx: Cx<'_>,
        task_id: Uuid,
        lease_id: Uuid,
        row: Option<TaskRow>,
    ) -> Result<Done<Lease>, MailboxError> {
        let Cx { tx, caller, now } = cx;
        let id = task_id.to_string();
        let row = match row {
            Some(row) if visible_to(&row, caller) => row,
            _ => return Err(not_found(task_id)),
        };
        if row.state() == TaskState::Canceled {
            return Err(task_canceled(&row));
        }
        if row.state() != TaskState::InFlight {
            return Err(MailboxError::new(
                ErrorCode::NotInFlight,
                format!("task {id} is {}, not in flight", row.state),
            ));
        }
        if row.leased_to.as_deref() != Some(caller.sub.as_str()) {
            return Err(MailboxError::new(
                ErrorCode::NotLessee,
                format!("the caller does not hold the lease of task {id}"),
            ));
        }
        check_lease(&row, &lease_id.to_string())?;
        let row = tx.heartbeat(&id, now).await?;
        let lease = row
            .lease()?
            .ok_or_else(|| MailboxError::internal(format!("in-flight task {id} has no lease")))?;
        Ok(Done::changed(lease))
    }
}
