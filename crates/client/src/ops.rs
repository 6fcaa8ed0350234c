//! Operator calls (docs/contract.md#endpoints, docs/contract.md#repair, docs/contract.md#retry-gate, docs/contract.md#compaction): the queue snapshot, repair, the retry gate, the
//! scheduler tick, compaction, the audit feed, and the service's version.

use uuid::Uuid;

use crate::call::{json, present, Call};
use crate::{Client, Error};
use a2a_mailbox_types::answers::{AuditEvents, AutoRetried, Compacted, Queue, Repaired, Version};
use a2a_mailbox_types::{
    AuditEvent, DuplicateRisk, QueueState, RepairCommand, RepairOutcome, RepairRequest,
    RetryPolicy, RetryReport,
};

/// The filters of `GET /a2a/queue`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueQuery {
    /// Entries at most (the mailbox's default is 10).
    pub limit: Option<u32>,
    /// Keep only in-flight entries idle at least this long (queued ones are kept).
    pub min_lease_age_ms: Option<u64>,
    /// Keep only tasks whose deadline falls within this many milliseconds.
    pub deadline_within_ms: Option<u64>,
    /// Keep only `queued` or only `in_flight` entries.
    pub state: Option<QueueState>,
}

/// The filters of `GET /audit/recent`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Rows at most (the mailbox's default is 10).
    pub limit: Option<u32>,
    /// Keep rows with `timestamp_ms >= since_ms`.
    pub since_ms: Option<u64>,
    /// Keep rows of this slug (e.g. `a2a_repair_applied`).
    pub kind: Option<String>,
}

impl Client {
    /// A read-only snapshot: queued tasks (FIFO), in-flight ones by lease age, pending results.
    pub async fn queue(&self, query: &QueueQuery) -> Result<Queue, Error> {
        let state = query.state.map(|s| match s {
            QueueState::Queued => "queued",
            QueueState::InFlight => "in_flight",
        });
        let pairs = [
            ("limit", query.limit.map(|v| v.to_string())),
            (
                "min_lease_age_ms",
                query.min_lease_age_ms.map(|v| v.to_string()),
            ),
            (
                "deadline_within_ms",
                query.deadline_within_ms.map(|v| v.to_string()),
            ),
            ("state", state.map(str::to_owned)),
        ];
        let call = Call::get("/a2a/queue").query(present(pairs));
        Ok(self.call::<Queue>(call).await?.value)
    }

    /// Repairs a stale lease (docs/contract.md#repair); needs `a2a.repair.<action>`.
    pub async fn repair(&self, request: &RepairRequest) -> Result<RepairOutcome, Error> {
        let call = Call::post("/a2a/repair", Some(json(request)));
        Ok(self.call::<Repaired>(call).await?.value.outcome)
    }

    /// Puts an in-flight task back at the end of its queue, stating the duplicate-work risk;
    /// refused unless `lease_id` (when given) is still its lease.
    ///
    /// ```no_run
    /// # async fn demo(ops: a2a_mailbox_client::Client, id: uuid::Uuid) -> Result<(), a2a_mailbox_client::Error> {
    /// use a2a_mailbox_types::DuplicateRisk;
    /// let outcome = ops.requeue(id, "worker died", DuplicateRisk::Idempotent, None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn requeue(
        &self,
        task_id: Uuid,
        reason: &str,
        duplicate_risk: DuplicateRisk,
        lease_id: Option<Uuid>,
    ) -> Result<RepairOutcome, Error> {
        let command = RepairCommand::Requeue {
            lease_id,
            duplicate_risk,
        };
        self.repair(&repair(task_id, reason, command)).await
    }

    /// Ends an in-flight task with an error result `message` for its sender.
    pub async fn force_error(
        &self,
        task_id: Uuid,
        reason: &str,
        message: &str,
        lease_id: Option<Uuid>,
    ) -> Result<RepairOutcome, Error> {
        let command = RepairCommand::ForceError {
            lease_id,
            message: message.to_owned(),
        };
        self.repair(&repair(task_id, reason, command)).await
    }

    /// The retry gate (docs/contract.md#retry-gate): a dry run unless `policy.enabled`; needs `a2a.operator`.
    pub async fn retry_stale(&self, policy: &RetryPolicy) -> Result<RetryReport, Error> {
        let call = Call::post("/a2a/retry-stale", Some(json(policy)));
        Ok(self.call::<AutoRetried>(call).await?.value.report)
    }

    /// One scheduler tick, with the mailbox's configured policy.
    pub async fn scheduler_tick(&self) -> Result<RetryReport, Error> {
        let call = Call::post("/a2a/scheduler/tick", None);
        Ok(self.call::<AutoRetried>(call).await?.value.report)
    }

    /// Drops what the mailbox no longer needs; answers the number of rows dropped.
    pub async fn compact(&self) -> Result<u64, Error> {
        let call = Call::post("/a2a/compact", None);
        Ok(self.call::<Compacted>(call).await?.value.dropped)
    }

    /// Audit rows, newest first: this agent's own, or every row for an operator.
    pub async fn audit(&self, query: &AuditQuery) -> Result<Vec<AuditEvent>, Error> {
        let pairs = [
            ("limit", query.limit.map(|v| v.to_string())),
            ("since_ms", query.since_ms.map(|v| v.to_string())),
            ("kind", query.kind.clone()),
        ];
        let call = Call::get("/audit/recent").query(present(pairs));
        Ok(self.call::<AuditEvents>(call).await?.value.events)
    }

    /// The service's name, version, engine and transports.
    pub async fn version(&self) -> Result<Version, Error> {
        Ok(self.call::<Version>(Call::get("/version")).await?.value)
    }
}

fn repair(task_id: Uuid, reason: &str, command: RepairCommand) -> RepairRequest {
    RepairRequest {
        task_id,
        reason: reason.to_owned(),
        command,
    }
}
